//! The checkpoint file: every source's position, parser state and the
//! aggregates that reflect exactly the bytes before that position, written
//! together and atomically so a restart after `kill -9` neither loses nor
//! double-counts. The file carries a version; older versions still load.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sources::access_log::AccessLogCheckpoint;
use crate::sources::gc_log::GcLogCheckpoint;
use crate::sources::SourceCheckpoint;

pub const FILE_NAME: &str = "state.json";
/// 2: one list of sources tagged by kind (latency histograms included).
const VERSION: u32 = 2;

#[derive(Serialize)]
struct CheckpointFile<'a> {
    version: u32,
    sources: &'a [SourceCheckpoint],
}

#[derive(Deserialize)]
struct Version {
    version: u32,
}

#[derive(Deserialize)]
struct V2 {
    sources: Vec<SourceCheckpoint>,
}

/// Version 1: GC streams and access logs in lists of their own.
#[derive(Deserialize)]
struct V1 {
    streams: Vec<GcLogCheckpoint>,
    #[serde(default)]
    access: Vec<AccessLogCheckpoint>,
}

/// The sources of a checkpoint file of any known version.
pub fn parse(bytes: &[u8]) -> Result<Vec<SourceCheckpoint>> {
    let Version { version } = serde_json::from_slice(bytes)?;
    match version {
        1 => {
            let v1: V1 = serde_json::from_slice(bytes)?;
            let gc = v1
                .streams
                .into_iter()
                .map(|c| SourceCheckpoint::GcLog(Box::new(c)));
            let access = v1
                .access
                .into_iter()
                .map(|c| SourceCheckpoint::AccessLog(Box::new(c)));
            Ok(gc.chain(access).collect())
        }
        VERSION => Ok(serde_json::from_slice::<V2>(bytes)?.sources),
        other => anyhow::bail!("checkpoint version {other} is newer than this agent ({VERSION})"),
    }
}

pub fn serialize(sources: &[SourceCheckpoint]) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec(&CheckpointFile {
        version: VERSION,
        sources,
    })?)
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
mod tests {
    use super::*;
    use crate::sources::SourceKey;

    /// A file the version-1 agent wrote (tests/fixtures/checkpoint-v1).
    const V1: &[u8] = include_bytes!("../tests/fixtures/checkpoint-v1/state.json");

    #[test]
    fn a_version_1_checkpoint_still_loads_with_its_figures() {
        let sources = parse(V1).unwrap();
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
        let SourceCheckpoint::AccessLog(access) = &sources[1] else {
            panic!("access log second")
        };
        assert_eq!(access.state.stats.lines, 6000);
        assert!(gc.position.is_some() && access.position.is_some());

        // Written again, it is version 2 and reads back the same.
        let again = parse(&serialize(&sources).unwrap()).unwrap();
        assert_eq!(again.len(), 2);
        assert!(
            serde_json::from_slice::<Version>(&serialize(&again).unwrap())
                .unwrap()
                .version
                == 2
        );
    }

    #[test]
    fn a_newer_version_is_refused_not_misread() {
        let error = parse(br#"{"version": 3, "sources": []}"#).unwrap_err();
        assert!(error.to_string().contains("version 3"), "{error}");
    }
}
