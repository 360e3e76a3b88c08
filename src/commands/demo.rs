//! The demo: a service's GC log and access log before and after a cache
//! change (tests/fixtures/compare, recorded from the Java stand-in service,
//! embedded in the binary so that an installed agent can run it).
//!
//! `run --demo` writes the last two minutes before the change at once, dated
//! to end now, then replays the service after the change (a JVM restart
//! with a cache grown from 15 % to 70 % of the heap) live at its own pace:
//! within a minute or two `/metrics`, `/api/v1/minutes` and the dashboard
//! show the longest pause per minute beside p99.9 rising, stop-affected
//! requests, and `PauseBudgetExceeded` firing. `report --demo` writes the
//! same story as a report.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::Utc;
use pausewatch_parsers::{line_time, AccessFormat};

use crate::commands::analyze::LatencyInput;
use crate::commands::report::{write_report, ReportOptions};
use crate::model::correlate::AttributionOptions;

use crate::commands::replay::{replay_lines, retimed, ReplayOptions};
use crate::config::access_format::{build_format, AccessFields};
use crate::config::{
    AccessLogSource, AccessTarget, Config, CorrelationConfig, GcLogSource, DEFAULT_FORGET_AFTER,
    DEFAULT_MAX_LINE_BYTES,
};
use crate::follow::StartAt;
use crate::model::jvm::DEFAULT_MAX_LABEL_VALUES;

const BEFORE_GC: &str = include_str!("../../tests/fixtures/compare/baseline/gc.log");
const BEFORE_ACCESS: &str = include_str!("../../tests/fixtures/compare/baseline/access.log");
const AFTER_GC: &str = include_str!("../../tests/fixtures/compare/candidate/gc.log");
const AFTER_ACCESS: &str = include_str!("../../tests/fixtures/compare/candidate/access.log");

/// The access logs' layout: an nginx `log_format` of the latency and the
/// completion time (the fixture keeps only these two fields of each line).
pub const DEMO_LOG_FORMAT: &str = "$request_time $msec";

/// How much of the service before the change the demo shows.
const BEFORE_SECONDS: f64 = 120.0;

/// `report --demo`'s title: its files are temporary, gone when it is read.
const DEMO_TITLE: &str =
    "the demo, a service before and after its on-heap cache grew from 15 % to 70 % of the heap";
/// The label of the demo's one restart, where the cache changed.
const DEMO_CHANGE: &str = "cache 15 % → 70 % of the heap (JVM restart)";

/// The demo's SLO: requests slower than this are slow.
const DEMO_SLO: Duration = Duration::from_millis(50);

/// The wall time of a GC log line, as epoch seconds.
fn gc_line_seconds(line: &str) -> Option<f64> {
    line_time(line)
        .and_then(|t| t.wall)
        .map(|t| t.timestamp_micros() as f64 / 1e6)
}

/// The completion time (`$msec`) of an access log line.
fn access_line_seconds(line: &str) -> Option<f64> {
    line.split_once(' ')?.1.trim().parse().ok()
}

/// The lines of `text` at or after `since` (epoch seconds); untimed lines
/// go with the timed line before them.
fn lines_since(text: &str, since: f64, time: fn(&str) -> Option<f64>) -> Vec<&str> {
    let mut keep = false;
    text.lines()
        .filter(|line| {
            if let Some(t) = time(line) {
                keep = t >= since;
            }
            keep
        })
        .collect()
}

/// The service's logs: the last minutes before the change, all of after.
struct Story {
    before_gc: Vec<&'static str>,
    before_access: Vec<&'static str>,
    after_gc: Vec<&'static str>,
    after_access: Vec<&'static str>,
}

impl Story {
    fn new() -> Story {
        let before_end = BEFORE_GC
            .lines()
            .rev()
            .find_map(gc_line_seconds)
            .unwrap_or_default();
        let since = before_end - BEFORE_SECONDS;
        Story {
            before_gc: lines_since(BEFORE_GC, since, gc_line_seconds),
            before_access: lines_since(BEFORE_ACCESS, since, access_line_seconds),
            after_gc: AFTER_GC.lines().collect(),
            after_access: AFTER_ACCESS.lines().collect(),
        }
    }

    /// When the service after the change wrote its first line.
    fn after_start(&self) -> f64 {
        self.after_gc
            .iter()
            .find_map(|l| gc_line_seconds(l))
            .unwrap_or_default()
    }

    fn before_end(&self) -> f64 {
        let gc = self.before_gc.iter().rev().find_map(|l| gc_line_seconds(l));
        let access = self
            .before_access
            .iter()
            .rev()
            .find_map(|l| access_line_seconds(l));
        gc.into_iter().chain(access).fold(0.0, f64::max)
    }
}

/// An access log line moved `shift` seconds.
fn shifted_access(line: &str, shift: f64) -> String {
    match (line.split_once(' '), access_line_seconds(line)) {
        (Some((latency, _)), Some(msec)) => format!("{latency} {:.3}", msec + shift),
        _ => line.to_string(),
    }
}

/// Appends access log lines moved by `shift` seconds, each when the clock
/// reaches its moved completion time: the GC log's replay, started at the
/// same moment with the same shift, stays lined up with them.
fn replay_access(lines: &[&str], destination: &Path, shift: f64) -> Result<()> {
    let mut output = std::fs::OpenOptions::new()
        .append(true)
        .open(destination)
        .with_context(|| format!("cannot open {}", destination.display()))?;
    for line in lines {
        if let Some(t) = access_line_seconds(line) {
            let wait = t + shift - now_seconds();
            if wait > 0.0 {
                std::thread::sleep(Duration::from_secs_f64(wait));
            }
        }
        output.write_all(format!("{}\n", shifted_access(line, shift)).as_bytes())?;
    }
    Ok(())
}

fn now_seconds() -> f64 {
    Utc::now().timestamp_micros() as f64 / 1e6
}

/// The demo's temporary directory, removed when this is dropped (when the
/// agent or the report is done).
pub struct DemoDir(PathBuf);

impl DemoDir {
    fn create(kind: &str) -> Result<DemoDir> {
        let dir = std::env::temp_dir().join(format!("pausewatch-{kind}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(DemoDir(dir))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for DemoDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn write_lines(path: &Path, lines: impl IntoIterator<Item = String>) -> Result<()> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// `base` (the defaults, or the `--config` given) with the demo's service
/// added: its GC log and access log in a temporary directory, where the
/// checkpoint goes too. Discovery is off unless `discover`: the demo shows
/// its own service, not every JVM of the host mixed in with it. Keep the
/// [`DemoDir`] until the agent has stopped.
pub fn demo_config(base: Config, discover: bool) -> Result<(Config, DemoDir)> {
    let dir = DemoDir::create("demo")?;
    let gc_log = dir.path().join("gc.log");
    let access_log = dir.path().join("access.log");
    let story = Story::new();
    // Before the change: written at once, dated to end now.
    let shift = now_seconds() - story.before_end();
    let gc_shift = chrono::Duration::microseconds((shift * 1e6) as i64);
    write_lines(
        &gc_log,
        story.before_gc.iter().map(|l| retimed(l, gc_shift)),
    )?;
    write_lines(
        &access_log,
        story.before_access.iter().map(|l| shifted_access(l, shift)),
    )?;
    // After the change: live, from now. The GC replay dates the service's
    // first line now; requests follow on the same shift.
    let after_shift = now_seconds() - story.after_start();
    let writer_log = gc_log.clone();
    let after_gc = story.after_gc;
    std::thread::spawn(move || {
        let options = ReplayOptions {
            speed: 1.0,
            lines_per_second: None,
            retime: true,
        };
        match replay_lines(after_gc.into_iter().map(Ok), &writer_log, &options) {
            // Said, so that figures falling to nothing are not taken for a fault.
            Ok(_) => tracing::info!(
                "demo: the recording has ended; no more pauses or requests will come (restart `pausewatch run --demo` to replay it)"
            ),
            Err(error) => {
                tracing::error!(error = %format!("{error:#}"), "demo replay of the GC log failed")
            }
        }
    });
    let writer_access = access_log.clone();
    let after_access = story.after_access;
    std::thread::spawn(move || {
        if let Err(error) = replay_access(&after_access, &writer_access, after_shift) {
            tracing::error!(error = %format!("{error:#}"), "demo replay of the access log failed");
        }
    });
    tracing::info!(
        dir = %dir.path().display(),
        "demo: a service before and after its on-heap cache grew from 15 % to 70 % of the heap"
    );
    let format = demo_access_format()?;
    let mut config = base;
    config.discovery.enabled &= discover;
    config.checkpoint_dir = dir.path().join("checkpoint");
    config.gc_log.push(demo_source(gc_log.clone()));
    config.access_log.push(AccessLogSource {
        path: access_log.display().to_string(),
        format,
        target: AccessTarget::GcLog(gc_log.display().to_string()),
        start_at: StartAt::Beginning,
        offset_seconds: 0.0,
        max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        follow_symlinks_outside: false,
    });
    config.correlation.slo.get_or_insert(DEMO_SLO);
    Ok((config, dir))
}

fn demo_source(log: PathBuf) -> GcLogSource {
    GcLogSource {
        path: log.display().to_string(),
        start_at: StartAt::Beginning,
        labels: [("service".to_string(), "demo".to_string())]
            .into_iter()
            .collect(),
        jvm_start: None,
        max_line_bytes: DEFAULT_MAX_LINE_BYTES,
        follow_symlinks_outside: false,
        forget_after: DEFAULT_FORGET_AFTER,
        max_label_values: DEFAULT_MAX_LABEL_VALUES,
        pause_records: 0,
    }
}

/// `report --demo`: the demo's logs as recorded (before, then after the
/// change) reported into `output`.
pub fn demo_report(output: &Path, options: &ReportOptions) -> Result<()> {
    let dir = DemoDir::create("demo-report")?;
    let story = Story::new();
    let gc_log = dir.path().join("gc.log");
    let access_log = dir.path().join("access.log");
    write_lines(
        &gc_log,
        story
            .before_gc
            .iter()
            .chain(&story.after_gc)
            .map(|l| l.to_string()),
    )?;
    write_lines(
        &access_log,
        story
            .before_access
            .iter()
            .chain(&story.after_access)
            .map(|l| l.to_string()),
    )?;
    let latency = LatencyInput {
        paths: vec![access_log],
        format: Some(demo_access_format()?),
        hints: AccessFields::default(),
        offset_seconds: 0.0,
        attribution: AttributionOptions {
            slo_seconds: Some(DEMO_SLO.as_secs_f64()),
            affected_share: CorrelationConfig::default().affected_share,
        },
    };
    let options = ReportOptions {
        pause_budget_seconds: options.pause_budget_seconds,
        title: Some(DEMO_TITLE.to_string()),
        restart_labels: vec![DEMO_CHANGE.to_string()],
    };
    write_report(&[gc_log], None, Some(latency), output, &options)
}

fn demo_access_format() -> Result<AccessFormat> {
    build_format(
        Some("nginx"),
        &AccessFields {
            log_format: Some(DEMO_LOG_FORMAT.to_string()),
            ..AccessFields::default()
        },
    )
    .map_err(|e| anyhow::anyhow!("demo access log format: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo shows its own service: discovery only when asked for.
    #[test]
    fn the_demo_discovers_only_when_asked() {
        assert!(Config::default().discovery.enabled);
        for discover in [false, true] {
            let (config, _dir) = demo_config(Config::default(), discover).unwrap();
            assert_eq!(config.discovery.enabled, discover);
            assert_eq!(config.gc_log.len(), 1);
        }
    }

    #[test]
    fn access_lines_move_by_the_shift() {
        assert_eq!(
            shifted_access("0.104 1796094357.130", 10.5),
            "0.104 1796094367.630"
        );
        assert_eq!(
            access_line_seconds("0.001 1796094357.150"),
            Some(1796094357.15)
        );
    }

    #[test]
    fn the_story_keeps_the_last_two_minutes_before_the_change() {
        let story = Story::new();
        let first = story
            .before_gc
            .iter()
            .find_map(|l| gc_line_seconds(l))
            .unwrap();
        let end = story.before_end();
        assert!(
            (end - first - BEFORE_SECONDS).abs() < 5.0,
            "{}",
            end - first
        );
        let first_request = access_line_seconds(story.before_access[0]).unwrap();
        assert!(first_request >= end - BEFORE_SECONDS);
        assert_eq!(story.after_gc.len(), AFTER_GC.lines().count());
    }
}
