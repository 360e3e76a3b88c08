//! `pausewatch run --demo`: a real recorded GC log (JDK 17, G1, concurrent
//! cycles and mixed collections), embedded in the binary so an installed
//! agent can run it, replayed at its own pace into a temporary file that the
//! agent follows.

use std::path::PathBuf;

use anyhow::{Context, Result};
use chrono::Utc;

use crate::commands::replay::{replay_lines, ReplayOptions};
use crate::config::{Config, GcLogSource, DEFAULT_FORGET_AFTER, DEFAULT_MAX_LINE_BYTES};
use crate::follow::StartAt;
use crate::model::jvm::DEFAULT_MAX_LABEL_VALUES;

/// The log the demo replays.
const DEMO_LOG: &str = include_str!("../../tests/fixtures/jvm/jdk17-g1-concurrent/gc.log");

/// A configuration following a temporary file that a thread writes the
/// demo log into, line by line, with its timestamps moved to now.
pub fn demo_config() -> Result<Config> {
    let dir = std::env::temp_dir().join(format!("pausewatch-demo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let log = dir.join("gc.log");
    let _ = std::fs::remove_file(&log);
    std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let writer_log = log.clone();
    std::thread::spawn(move || {
        let options = ReplayOptions {
            speed: 1.0,
            lines_per_second: None,
            retime: true,
        };
        if let Err(error) = replay_lines(DEMO_LOG.lines().map(Ok), &writer_log, &options) {
            tracing::error!(error = %format!("{error:#}"), "demo replay failed");
        }
    });
    tracing::info!(log = %log.display(), "demo: replaying a recorded JDK 17 G1 log");
    Ok(Config {
        checkpoint_dir: dir.join("checkpoint"),
        gc_log: vec![demo_source(log)],
        ..Config::default()
    })
}

fn demo_source(log: PathBuf) -> GcLogSource {
    GcLogSource {
        path: log.display().to_string(),
        start_at: StartAt::Beginning,
        labels: [("service".to_string(), "demo".to_string())]
            .into_iter()
            .collect(),
        jvm_start: Some(Utc::now()),
        max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        follow_symlinks_outside: false,
        forget_after: DEFAULT_FORGET_AFTER,
        max_label_values: DEFAULT_MAX_LABEL_VALUES,
        pause_records: 0,
    }
}
