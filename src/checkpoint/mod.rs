//! The checkpoint: every source's position, parser state and the
//! aggregates that reflect exactly the bytes before that position, so a
//! restart after `kill -9` neither loses nor double-counts.
//!
//! `checkpoint_dir/state.json` is a manifest (version 5) naming the journal
//! ([`journal`]) that holds the state, appended to at every checkpoint with
//! what changed. Version 4 is the same without deltas or packed
//! checkpoints, version 3 also without a checksum on each checkpoint (an
//! agent that knows neither would read them as damage, hence the number);
//! versions 1 and 2 held the whole state in `state.json`,
//! rewritten at every checkpoint. They still load, and the first checkpoint
//! after them writes a new journal. A newer version is refused
//! ([`NewerVersion`]): its agent's state is not this one's to discard.
//!
//! What the files hold is defined by the record types of `records`, not by
//! the sources' and the model's in-memory types, and pinned by the fixture
//! `tests/fixtures/checkpoint-v5`. A change of it is a new version: its
//! record types beside the old ones, `VERSION` bumped, the old version
//! read with its own types and migrated on load, a fixture of its own; the
//! old fixtures keep loading (`records` says how).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sources::SourceCheckpoint;
use records::{AccessLogV5, GcLogV5, SourceV5};

mod delta;
pub mod journal;
mod records;
mod timeline;

pub use journal::Journal;

pub const FILE_NAME: &str = "state.json";
/// 5: a journal that may hold deltas and packed checkpoints. 4: a
/// manifest naming a journal whose checkpoints carry a checksum.
/// 3: a manifest naming the journal. 2: one list of sources tagged by kind
/// (latency histograms included). 1: GC streams and access logs apart.
const VERSION: u32 = 5;

#[derive(Serialize, Deserialize)]
struct Manifest {
    version: u32,
    journal: String,
}

#[derive(Deserialize)]
struct Version {
    version: u32,
}

#[derive(Deserialize)]
struct V2 {
    sources: Vec<SourceV5<'static>>,
}

/// Version 1: GC streams and access logs in lists of their own.
#[derive(Deserialize)]
struct V1 {
    streams: Vec<GcLogV5<'static>>,
    #[serde(default)]
    access: Vec<AccessLogV5<'static>>,
}

/// A checkpoint written by a newer agent: starting fresh would discard its
/// state, so the agent refuses to start.
#[derive(Debug)]
pub struct NewerVersion {
    pub path: PathBuf,
    pub version: u32,
}

impl std::fmt::Display for NewerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is checkpoint version {}, newer than this agent's {VERSION}: run the newer agent, or move the checkpoint away to start fresh",
            self.path.display(),
            self.version
        )
    }
}

impl std::error::Error for NewerVersion {}

/// What a checkpoint directory held: the sources, and the journal writer
/// that continues from them.
pub struct Loaded {
    pub sources: Vec<SourceCheckpoint>,
    pub journal: Journal,
}

/// Loads the checkpoint in `dir`: `None` when there is none.
pub fn load(dir: &Path) -> Result<Option<Loaded>> {
    let path = dir.join(FILE_NAME);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error).with_context(|| format!("cannot read {}", path.display())),
    };
    let Version { version } = serde_json::from_slice(&bytes)?;
    let legacy = |sources| {
        Ok(Some(Loaded {
            sources,
            journal: Journal::new(dir),
        }))
    };
    match version {
        1 => {
            let v1: V1 = serde_json::from_slice(&bytes)?;
            let gc = v1
                .streams
                .into_iter()
                .map(|c| SourceCheckpoint::GcLog(Box::new(c.into_model())));
            let access = v1
                .access
                .into_iter()
                .map(|c| SourceCheckpoint::AccessLog(Box::new(c.into_model())));
            legacy(gc.chain(access).collect())
        }
        2 => {
            let v2: V2 = serde_json::from_slice(&bytes)?;
            legacy(v2.sources.into_iter().map(SourceV5::into_model).collect())
        }
        3 | 4 | VERSION => {
            let manifest: Manifest = serde_json::from_slice(&bytes)?;
            let (sources, mut journal) = Journal::open(dir, &manifest.journal)?;
            if version < VERSION {
                // The manifest says which format the journal holds.
                journal.compact_next();
            }
            Ok(Some(Loaded { sources, journal }))
        }
        version => Err(NewerVersion { path, version }.into()),
    }
}

/// Renames an unreadable checkpoint (the manifest and every journal) to
/// `*.unreadable`, kept for a look; returns the manifest's new name.
pub fn set_aside(dir: &Path) -> PathBuf {
    let aside = dir.join(FILE_NAME).with_extension("json.unreadable");
    let _ = std::fs::rename(dir.join(FILE_NAME), &aside);
    for number in journal::journals_in(dir) {
        let name = journal::name_of(number);
        let _ = std::fs::rename(dir.join(&name), dir.join(format!("{name}.unreadable")));
    }
    aside
}

/// Writes `bytes` to `path` so that a crash leaves the old file or the new
/// one, never a mix: temporary file, fsync, rename, fsync of the directory.
/// A failed write removes its temporary file (on a full disk it would
/// otherwise hold the space that was left); every error names the path.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = path.with_extension("json.tmp");
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error).with_context(|| format!("cannot write {}", temporary.display()));
    }
    std::fs::rename(&temporary, path).with_context(|| {
        format!(
            "cannot rename {} to {}",
            temporary.display(),
            path.display()
        )
    })?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .with_context(|| format!("cannot sync {}", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sources::SourceKey;

    /// A file the version-1 agent wrote (tests/fixtures/checkpoint-v1).
    const V1: &[u8] = include_bytes!("../../tests/fixtures/checkpoint-v1/state.json");

    /// What a GC stream's checkpoint holds, collections included.
    pub fn gc_figures(source: &SourceCheckpoint) -> String {
        let SourceCheckpoint::GcLog(gc) = source else {
            panic!("a GC log")
        };
        let latency = gc.state.latency.as_ref();
        format!(
            "{}\n{:?}\n{:?}\n{:?}\n{:?}",
            serde_json::to_string(&SourceV5::from(source)).unwrap(),
            gc.state.jvm.minutes.iter().collect::<Vec<_>>(),
            latency.map(|l| &l.minutes),
            latency.map(|l| l.pending()),
            latency.map(|l| l.stops.iter().collect::<Vec<_>>()),
        )
    }

    #[test]
    fn a_version_1_checkpoint_still_loads_with_its_figures_and_moves_to_a_journal() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE_NAME), V1).unwrap();
        let Loaded {
            sources,
            mut journal,
        } = load(dir.path()).unwrap().unwrap();
        let keys: Vec<SourceKey> = sources.iter().map(SourceCheckpoint::key).collect();
        assert_eq!(
            keys,
            [
                SourceKey::GcLog("/tmp/pw-v1/gc.log".into()),
                SourceKey::AccessLog("/tmp/pw-v1/access.jsonl".into())
            ]
        );
        let SourceCheckpoint::GcLog(gc) = &sources[0] else {
            panic!("GC log first")
        };
        // mxbeans.json: PS Scavenge 54, PS MarkSweep 5.
        let pauses: u64 = gc.state.jvm.pauses.iter().map(|s| s.histogram.count).sum();
        assert_eq!(pauses, 59);
        let latency = gc.state.latency.as_ref().unwrap();
        // The workload sent 6,000 requests; its GC notifications slowed 48.
        assert_eq!(latency.counters.requests, 6000);
        assert_eq!(latency.counters.slow_requests_stop_affected, 48);
        assert!(gc.state.jvm.minutes.iter().next().is_some() && !latency.minutes.is_empty());
        let SourceCheckpoint::AccessLog(access) = &sources[1] else {
            panic!("access log second")
        };
        assert_eq!(access.state.stats.lines, 6000);
        assert!(gc.position.is_some() && access.position.is_some());

        // The first checkpoint writes a journal and a current manifest
        // naming it; read back, it holds the same.
        journal.write(&sources, std::iter::empty()).unwrap();
        let manifest: Manifest =
            serde_json::from_slice(&std::fs::read(dir.path().join(FILE_NAME)).unwrap()).unwrap();
        assert_eq!(
            (manifest.version, manifest.journal.as_str()),
            (VERSION, "journal.1")
        );
        let again = load(dir.path()).unwrap().unwrap().sources;
        assert_eq!(again.len(), 2);
        assert_eq!(gc_figures(&again[0]), gc_figures(&sources[0]));
    }

    #[test]
    fn a_newer_version_is_refused_not_misread() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(FILE_NAME),
            br#"{"version": 6, "sources": []}"#,
        )
        .unwrap();
        let error = load(dir.path()).err().unwrap();
        let newer = error.downcast_ref::<NewerVersion>().expect("NewerVersion");
        assert_eq!(newer.version, 6);
        let message = error.to_string();
        assert!(
            message.contains("state.json is checkpoint version 6"),
            "{message}"
        );
    }
}
