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
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let temporary = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&temporary)
        .with_context(|| format!("cannot write {}", temporary.display()))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)
        .with_context(|| format!("cannot rename to {}", path.display()))?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}
