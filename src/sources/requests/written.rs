//! The kernel's requests written out, when `[ebpf] requests_dir` is set:
//! one JSON line per request (`{"start":..,"duration_ms":..,"port":..}`),
//! one file per JVM, so that `analyze --latency`, `report` and `compare`
//! read a load test's tail as its clients saw it, as they read an access
//! log (they detect these fields).

use std::collections::{BTreeSet, HashMap};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::model::correlate::RequestTiming;
use crate::store::StreamId;

/// One JVM's requests to write.
pub struct JvmRequests {
    pub id: StreamId,
    /// Its `service` label, part of the file's name.
    pub service: String,
    pub pid: u32,
    pub requests: Vec<(RequestTiming, u16)>,
}

pub struct RequestFiles {
    dir: PathBuf,
    open: HashMap<StreamId, BufWriter<File>>,
    /// JVMs whose file could not be written: said once each.
    failed: BTreeSet<StreamId>,
}

impl RequestFiles {
    pub fn new(dir: PathBuf) -> RequestFiles {
        RequestFiles {
            dir,
            open: HashMap::new(),
            failed: BTreeSet::new(),
        }
    }

    /// Appends each JVM's requests to its file; `Err` names a file that
    /// could not be written (the first time for each JVM).
    pub fn write(&mut self, batch: Vec<JvmRequests>) -> Result<(), String> {
        let mut first_error = None;
        for jvm in batch {
            if let Err(error) = self.append(&jvm) {
                self.open.remove(&jvm.id);
                if self.failed.insert(jvm.id) {
                    first_error.get_or_insert(error);
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    fn append(&mut self, jvm: &JvmRequests) -> Result<(), String> {
        let file = match self.open.get_mut(&jvm.id) {
            Some(file) => file,
            None => {
                let path = self.dir.join(file_name(&jvm.service, jvm.pid));
                let file = open_own(&self.dir, &path)
                    .map_err(|error| format!("{}: {error}", path.display()))?;
                self.open.entry(jvm.id).or_insert(BufWriter::new(file))
            }
        };
        for (request, port) in &jvm.requests {
            let start = request
                .start
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
            let duration_ms = request.duration_s * 1e3;
            writeln!(
                file,
                "{{\"start\":\"{start}\",\"duration_ms\":{duration_ms:.3},\"port\":{port}}}"
            )
            .map_err(|error| error.to_string())?;
        }
        file.flush().map_err(|error| error.to_string())
    }

    /// Closes the files of JVMs no longer measured, and forgets them.
    pub fn keep_only(&mut self, alive: &BTreeSet<StreamId>) {
        self.open.retain(|id, _| alive.contains(id));
        self.failed.retain(|id| alive.contains(id));
    }
}

/// `service-pid.jsonl`, the service's name kept to characters a file name
/// may safely hold.
fn file_name(service: &str, pid: u32) -> String {
    let safe: String = (service.chars())
        .map(
            |c| match c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                true => c,
                false => '_',
            },
        )
        .collect();
    let safe = safe.trim_start_matches('.');
    format!("{}-{pid}.jsonl", if safe.is_empty() { "jvm" } else { safe })
}

/// Opens `path` to append, creating it (and `dir`) as the agent's own:
/// never through a symlink, and only a regular file the agent owns, for
/// the directory may be one other users can write to.
fn open_own(dir: &Path, path: &Path) -> std::io::Result<File> {
    DirBuilder::new().recursive(true).mode(0o750).create(dir)?;
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o640)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != rustix::process::geteuid().as_raw() {
        return Err(std::io::Error::other(
            "not a regular file of the agent's own",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn each_jvm_gets_a_file_of_json_lines_and_a_planted_symlink_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = RequestFiles::new(dir.path().join("requests"));
        let request = RequestTiming {
            start: Utc.timestamp_micros(1_765_000_000_123_456).unwrap(),
            duration_s: 0.2125,
        };
        let batch = |id, service: &str, pid| JvmRequests {
            id: StreamId(id),
            service: service.to_string(),
            pid,
            requests: vec![(request, 8080)],
        };
        files
            .write(vec![batch(1, "pricing", 10), batch(1, "pricing", 10)])
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join("requests/pricing-10.jsonl")).unwrap();
        let line =
            "{\"start\":\"2025-12-06T05:46:40.123456Z\",\"duration_ms\":212.500,\"port\":8080}";
        assert_eq!(text, format!("{line}\n{line}\n"));
        // Another user planted a symlink where the next file goes.
        std::os::unix::fs::symlink("/etc/passwd", dir.path().join("requests/a_b-11.jsonl"))
            .unwrap();
        let error = files.write(vec![batch(2, "a/b", 11)]).unwrap_err();
        assert!(error.contains("a_b-11.jsonl"), "{error}");
        // Said once.
        files.write(vec![batch(2, "a/b", 11)]).unwrap();
        assert_eq!(file_name("..", 1), "jvm-1.jsonl");
    }
}
