//! `pausewatch compare`: two runs (a load test before and after a change, a
//! canary beside the fleet) summarised the same way after their warm-up,
//! every change tested for significance on the runs' per-minute values, and
//! release gates (`--fail-if`) on the result.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::commands::analyze::{analyze, percentile, AnalyzeOptions, LatencyInput, PauseSummary};
use crate::model::correlate::{Attribution, CombinedMinute, LatencySummary};
use crate::model::rank_test::mann_whitney_p;
use pausewatch_parsers::Pause;

/// A change is significant below this two-sided p-value.
const SIGNIFICANCE_LEVEL: f64 = 0.05;

/// One run: GC logs and, optionally, the access logs of the same service.
pub struct RunInput {
    pub gc_logs: Vec<PathBuf>,
    pub latency: Option<LatencyInput>,
}

/// The longest pause of each minute, summarised over the minutes: what a
/// per-minute dashboard panel of the run shows.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MinuteMaxPause {
    pub p50_seconds: f64,
    pub p99_seconds: f64,
    pub max_seconds: f64,
}

/// SUMMARY: the figures of one run that `compare` puts side by side; its
/// JSON paths are what `--fail-if` names.
#[derive(Debug, Serialize)]
pub struct RunSummary {
    pub files: Vec<PathBuf>,
    pub pauses: PauseSummary,
    /// Paused time over the wall time from the first to the last pause.
    pub gc_overhead_ratio: f64,
    pub minute_max_pause: MinuteMaxPause,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencySummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Attribution>,
    /// Minutes with GC events or requests after the warm-up.
    pub minutes: u64,
}

impl RunSummary {
    /// The run's files, comma-separated.
    pub fn file_names(&self) -> String {
        let names: Vec<String> = self.files.iter().map(|f| f.display().to_string()).collect();
        names.join(", ")
    }
}

/// A summarised run with what its charts and significance tests need.
pub struct Run {
    pub summary: RunSummary,
    pub detail: RunDetail,
}

#[derive(Debug, Serialize)]
pub struct Change {
    pub metric: &'static str,
    pub baseline: f64,
    pub candidate: f64,
    /// candidate / baseline; `None` when the baseline is 0.
    pub ratio: Option<f64>,
    pub significant: bool,
    #[serde(skip)]
    pub p_value: Option<f64>,
    #[serde(skip)]
    pub aspect: Aspect,
}

#[derive(Debug, Serialize)]
pub struct GateResult {
    pub expr: String,
    pub failed: bool,
    pub baseline: f64,
    pub candidate: f64,
    #[serde(skip)]
    pub path: String,
}

#[derive(Serialize)]
pub struct Comparison {
    pub baseline: RunSummary,
    pub candidate: RunSummary,
    pub changes: Vec<Change>,
    pub gates: Vec<GateResult>,
    #[serde(skip)]
    pub baseline_run: RunDetail,
    #[serde(skip)]
    pub candidate_run: RunDetail,
}

/// The per-minute series and pauses of a run, kept for the HTML overlay.
#[derive(Default)]
pub struct RunDetail {
    pub minutes: Vec<CombinedMinute>,
    pub pauses: Vec<Pause>,
}

impl Comparison {
    pub fn any_gate_failed(&self) -> bool {
        self.gates.iter().any(|g| g.failed)
    }
}

/// What a metric is about, for the verdict: one run can have more GC time
/// and the other the worse tail, and the verdict says so rather than
/// summing them into one "better" or "worse".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aspect {
    GcTime,
    PauseLength,
    Latency,
    /// What the tail would have been without the stops: a diagnosis, not
    /// better or worse, so it takes no part in the verdict.
    Counterfactual,
}

impl Aspect {
    fn describe(self) -> &'static str {
        match self {
            Aspect::GcTime => "pauses and GC time",
            Aspect::PauseLength => "pause length",
            Aspect::Latency => "request latency",
            Aspect::Counterfactual => "latency without the stops",
        }
    }
}

type PerMinute = fn(&CombinedMinute) -> Option<f64>;

/// Every compared metric: its SUMMARY path, its aspect, and the per-minute
/// value the significance test compares. Higher is worse for all of them but
/// the counterfactual.
const METRICS: &[(&str, Aspect, PerMinute)] = &[
    ("pauses.count", Aspect::GcTime, |m| {
        Some(m.gc.pause_count as f64)
    }),
    ("pauses.total_seconds", Aspect::GcTime, |m| {
        Some(m.gc.pause_total_seconds)
    }),
    ("gc_overhead_ratio", Aspect::GcTime, |m| {
        Some(m.gc.pause_total_seconds / 60.0)
    }),
    ("pauses.p50_seconds", Aspect::PauseLength, |m| {
        m.gc.pause_histogram.quantile(0.5)
    }),
    ("pauses.p99_seconds", Aspect::PauseLength, minute_max_pause),
    ("pauses.p999_seconds", Aspect::PauseLength, minute_max_pause),
    ("pauses.max_seconds", Aspect::PauseLength, minute_max_pause),
    (
        "minute_max_pause.p50_seconds",
        Aspect::PauseLength,
        minute_max_pause,
    ),
    (
        "minute_max_pause.p99_seconds",
        Aspect::PauseLength,
        minute_max_pause,
    ),
    (
        "minute_max_pause.max_seconds",
        Aspect::PauseLength,
        minute_max_pause,
    ),
    ("latency.p50_seconds", Aspect::Latency, |m| {
        served(m).map(|l| l.p50_seconds)
    }),
    ("latency.p90_seconds", Aspect::Latency, |m| {
        served(m).map(|l| l.p90_seconds)
    }),
    ("latency.p99_seconds", Aspect::Latency, |m| {
        served(m).map(|l| l.p99_seconds)
    }),
    ("latency.p999_seconds", Aspect::Latency, |m| {
        served(m).map(|l| l.p999_seconds)
    }),
    ("latency.max_seconds", Aspect::Latency, |m| {
        served(m).map(|l| l.max_seconds)
    }),
    ("attribution.slow_requests", Aspect::Latency, |m| {
        served(m).and(m.attribution).map(|a| a.slow_requests as f64)
    }),
    (
        "attribution.slow_requests_stop_affected",
        Aspect::Latency,
        |m| {
            served(m)
                .and(m.attribution)
                .map(|a| a.slow_requests_stop_affected as f64)
        },
    ),
    (
        "attribution.p999_without_stop_affected_seconds",
        Aspect::Counterfactual,
        |m| {
            served(m)
                .and(m.attribution)
                .map(|a| a.p999_without_stop_affected_seconds)
        },
    ),
];

/// The minutes a run covers whole: all but its first and last, which it
/// covers only in part (their counts and maxima are not comparable).
fn complete_minutes(minutes: &[CombinedMinute]) -> &[CombinedMinute] {
    match minutes.len() {
        0..=2 => &[],
        n => &minutes[1..n - 1],
    }
}

fn minute_max_pause(minute: &CombinedMinute) -> Option<f64> {
    Some(minute.gc.pause_max_seconds)
}

/// The minute's latency when it had requests.
fn served(minute: &CombinedMinute) -> Option<LatencySummary> {
    minute.latency.filter(|l| l.count > 0)
}

/// Reads and summarises one run after its warm-up.
pub fn summarise_run(input: RunInput, skip_first_seconds: Option<f64>) -> Result<Run> {
    let options = AnalyzeOptions {
        jvm_start: None,
        include_events: true,
        latency: input.latency,
        skip_first_seconds,
    };
    let report = analyze(&input.gc_logs, &options)?;
    let pauses = report.events.unwrap_or_default();
    let mut minute_maxima: Vec<f64> = report
        .minutes
        .iter()
        .map(|m| m.gc.pause_max_seconds)
        .collect();
    minute_maxima.sort_by(f64::total_cmp);
    let span = match (pauses.first(), pauses.last()) {
        (Some(first), Some(last)) => match (first.start.wall, last.end.wall) {
            (Some(start), Some(end)) => (end - start).as_seconds_f64(),
            _ => 0.0,
        },
        _ => 0.0,
    };
    let total = report.pauses.total_seconds;
    let summary = RunSummary {
        files: report.files,
        gc_overhead_ratio: if span > 0.0 {
            (total / span).min(1.0)
        } else {
            0.0
        },
        pauses: report.pauses,
        minute_max_pause: MinuteMaxPause {
            p50_seconds: percentile(&minute_maxima, 0.50),
            p99_seconds: percentile(&minute_maxima, 0.99),
            max_seconds: minute_maxima.last().copied().unwrap_or(0.0),
        },
        latency: report.latency,
        attribution: report.attribution,
        minutes: report.minutes.len() as u64,
    };
    Ok(Run {
        summary,
        detail: RunDetail {
            minutes: report.minutes,
            pauses,
        },
    })
}

/// A `--fail-if` gate: `PATH > VALUE` or `PATH < VALUE`, the value absolute
/// (`50ms`, `0.05`, `12`) or relative to the baseline (`+10%`, `-5%`).
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub expr: String,
    pub path: String,
    pub above: bool,
    pub threshold: Threshold,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    Absolute(f64),
    /// A change relative to the baseline, as a fraction (+10% is 0.1).
    Relative(f64),
}

impl std::str::FromStr for Gate {
    type Err = String;

    fn from_str(expr: &str) -> Result<Self, String> {
        let (index, above) = match (expr.find('>'), expr.find('<')) {
            (Some(i), None) => (i, true),
            (None, Some(i)) => (i, false),
            _ => {
                return Err(format!(
                    "{expr:?}: expected PATH > VALUE or PATH < VALUE (e.g. \"pauses.max_seconds > 50ms\", \"latency.p999_seconds > +10%\")"
                ))
            }
        };
        let path = expr[..index].trim();
        let value = expr[index + 1..].trim();
        if path.is_empty()
            || !path.split('.').all(|part| {
                !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
        {
            return Err(format!(
                "{expr:?}: {path:?} is not a summary path (e.g. pauses.max_seconds)"
            ));
        }
        let threshold = parse_threshold(value).ok_or_else(|| {
            format!("{expr:?}: {value:?} is not a number, a duration (50ms) or a change (+10%)")
        })?;
        Ok(Gate {
            expr: expr.trim().to_string(),
            path: path.to_string(),
            above,
            threshold,
        })
    }
}

fn parse_threshold(value: &str) -> Option<Threshold> {
    if let Some(percent) = value.strip_suffix('%') {
        let fraction = percent.trim().parse::<f64>().ok()? / 100.0;
        return fraction
            .is_finite()
            .then_some(Threshold::Relative(fraction));
    }
    if let Ok(number) = value.parse::<f64>() {
        return number.is_finite().then_some(Threshold::Absolute(number));
    }
    humantime::parse_duration(value)
        .ok()
        .map(|d| Threshold::Absolute(d.as_secs_f64()))
}

/// The number at `path` (dotted) of a serialised summary.
fn lookup(summary: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(summary, |value, key| value.get(key))
        .and_then(Value::as_f64)
}

/// Compares two summarised runs and evaluates the gates. Fails (bad input)
/// when a gate names a path that is not a number in both summaries.
pub fn compare(baseline: Run, candidate: Run, gates: &[Gate]) -> Result<Comparison> {
    let base_json = serde_json::to_value(&baseline.summary).context("summary serialises")?;
    let cand_json = serde_json::to_value(&candidate.summary).context("summary serialises")?;
    let mut changes = Vec::new();
    for &(metric, aspect, per_minute) in METRICS {
        let (Some(b), Some(c)) = (lookup(&base_json, metric), lookup(&cand_json, metric)) else {
            continue;
        };
        let sample = |run: &Run| -> Vec<f64> {
            complete_minutes(&run.detail.minutes)
                .iter()
                .filter_map(per_minute)
                .collect()
        };
        let p_value = mann_whitney_p(&sample(&baseline), &sample(&candidate));
        changes.push(Change {
            metric,
            baseline: b,
            candidate: c,
            ratio: (b != 0.0).then(|| c / b),
            significant: p_value.is_some_and(|p| p < SIGNIFICANCE_LEVEL) && b != c,
            p_value,
            aspect,
        });
    }
    let mut results = Vec::new();
    for gate in gates {
        let (Some(b), Some(c)) = (
            lookup(&base_json, &gate.path),
            lookup(&cand_json, &gate.path),
        ) else {
            bail!(
                "--fail-if {:?}: {} is not a figure of both runs' summaries{}",
                gate.expr,
                gate.path,
                if gate.path.starts_with("latency") || gate.path.starts_with("attribution") {
                    " (give --baseline-latency and --candidate-latency)"
                } else {
                    ""
                }
            );
        };
        let limit = match gate.threshold {
            Threshold::Absolute(value) => value,
            Threshold::Relative(fraction) => b * (1.0 + fraction),
        };
        results.push(GateResult {
            expr: gate.expr.clone(),
            failed: if gate.above { c > limit } else { c < limit },
            baseline: b,
            candidate: c,
            path: gate.path.clone(),
        });
    }
    Ok(Comparison {
        baseline: baseline.summary,
        candidate: candidate.summary,
        changes,
        gates: results,
        baseline_run: baseline.detail,
        candidate_run: candidate.detail,
    })
}

/// A figure in the unit its path implies: ms for seconds, % for ratios.
pub fn figure(metric: &str, value: f64) -> String {
    if metric.ends_with("_seconds") {
        format!("{:.3} ms", value * 1000.0)
    } else if metric.ends_with("_ratio") {
        format!("{:.3} %", value * 100.0)
    } else {
        format!("{value}")
    }
}

/// Which run is worse on an aspect, from its significant changes: `None`
/// when none changed significantly, `Some(None)` when they disagree.
fn worse_run(changes: &[Change], aspect: Aspect) -> Option<Option<&'static str>> {
    let mut verdict = None;
    for change in changes
        .iter()
        .filter(|c| c.aspect == aspect && c.significant)
    {
        let worse = if change.candidate > change.baseline {
            "candidate"
        } else {
            "baseline"
        };
        verdict = match verdict {
            None => Some(Some(worse)),
            Some(Some(previous)) if previous == worse => Some(Some(worse)),
            _ => Some(None),
        };
    }
    verdict
}

/// The human-readable comparison: both runs, every change, the verdict per
/// aspect (split when the runs are worse on different ones), the gates.
pub fn render_text(comparison: &Comparison) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for (name, run) in [
        ("baseline", &comparison.baseline),
        ("candidate", &comparison.candidate),
    ] {
        let _ = writeln!(
            out,
            "{name:<10} {}   minutes: {}   pauses: {}",
            run.file_names(),
            run.minutes,
            run.pauses.count
        );
    }
    let _ = writeln!(
        out,
        "\n{:<48} {:>14} {:>14} {:>9} {:>8}",
        "metric", "baseline", "candidate", "change", "p"
    );
    for change in &comparison.changes {
        let ratio = change
            .ratio
            .map_or("n/a".to_string(), |r| format!("{:+.1}%", (r - 1.0) * 100.0));
        let p = change
            .p_value
            .map_or("n/a".to_string(), |p| format!("{p:.3}"));
        let _ = writeln!(
            out,
            "{:<48} {:>14} {:>14} {:>9} {:>8}{}",
            change.metric,
            figure(change.metric, change.baseline),
            figure(change.metric, change.candidate),
            ratio,
            p,
            if change.significant { "  *" } else { "" }
        );
    }
    let _ = writeln!(
        out,
        "(* significant: per-minute values differ, Mann-Whitney U, p < {SIGNIFICANCE_LEVEL})\n"
    );
    for line in verdict(comparison) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The verdict per aspect, a split verdict when each run is worse in
/// something, and the gates' results.
pub fn verdict(comparison: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    let mut worse_by_run: [(&str, Vec<&str>); 2] = [("baseline", vec![]), ("candidate", vec![])];
    for aspect in [Aspect::GcTime, Aspect::PauseLength, Aspect::Latency] {
        if aspect == Aspect::Latency && comparison.baseline.latency.is_none() {
            continue;
        }
        lines.push(match worse_run(&comparison.changes, aspect) {
            None => format!("{}: no significant change", aspect.describe()),
            Some(None) => format!(
                "{}: mixed (some figures worse in each run)",
                aspect.describe()
            ),
            Some(Some(worse)) => {
                if let Some((_, aspects)) = worse_by_run.iter_mut().find(|(run, _)| *run == worse) {
                    aspects.push(aspect.describe());
                }
                format!("{}: worse in the {worse}", aspect.describe())
            }
        });
    }
    if worse_by_run.iter().all(|(_, aspects)| !aspects.is_empty()) {
        lines.push(format!(
            "split verdict: the baseline is worse in {}, the candidate in {}",
            worse_by_run[0].1.join(" and "),
            worse_by_run[1].1.join(" and ")
        ));
    }
    for gate in &comparison.gates {
        lines.push(format!(
            "gate {}: {}   (baseline {}, candidate {})",
            if gate.failed { "FAILED" } else { "passed" },
            gate.expr,
            figure(&gate.path, gate.baseline),
            figure(&gate.path, gate.candidate)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gates_parse_absolute_and_relative_values() {
        let gate: Gate = "pauses.max_seconds > 50ms".parse().unwrap();
        assert_eq!(gate.path, "pauses.max_seconds");
        assert!(gate.above);
        assert_eq!(gate.threshold, Threshold::Absolute(0.05));
        let gate: Gate = "latency.p999_seconds>+10%".parse().unwrap();
        assert_eq!(gate.threshold, Threshold::Relative(0.1));
        let gate: Gate = "pauses.count < -5%".parse().unwrap();
        assert!(!gate.above);
        assert_eq!(gate.threshold, Threshold::Relative(-0.05));
        let gate: Gate = "gc_overhead_ratio > 0.05".parse().unwrap();
        assert_eq!(gate.threshold, Threshold::Absolute(0.05));
    }

    fn change(metric: &'static str, aspect: Aspect, baseline: f64, candidate: f64) -> Change {
        Change {
            metric,
            baseline,
            candidate,
            ratio: Some(candidate / baseline),
            significant: true,
            p_value: Some(0.01),
            aspect,
        }
    }

    fn summary() -> RunSummary {
        RunSummary {
            files: Vec::new(),
            pauses: PauseSummary {
                count: 0,
                total_seconds: 0.0,
                max_seconds: 0.0,
                p50_seconds: 0.0,
                p99_seconds: 0.0,
                p999_seconds: 0.0,
            },
            gc_overhead_ratio: 0.0,
            minute_max_pause: MinuteMaxPause {
                p50_seconds: 0.0,
                p99_seconds: 0.0,
                max_seconds: 0.0,
            },
            latency: Some(LatencySummary::default()),
            attribution: None,
            minutes: 0,
        }
    }

    fn comparison(changes: Vec<Change>) -> Comparison {
        Comparison {
            baseline: summary(),
            candidate: summary(),
            changes,
            gates: Vec::new(),
            baseline_run: RunDetail::default(),
            candidate_run: RunDetail::default(),
        }
    }

    /// More GC time in one run and the worse tail in the other is said as
    /// such, never summed into one "better" or "worse".
    #[test]
    fn a_split_verdict_names_both_sides() {
        let lines = verdict(&comparison(vec![
            change("pauses.total_seconds", Aspect::GcTime, 2.0, 1.0),
            change("latency.p999_seconds", Aspect::Latency, 0.05, 0.09),
        ]));
        assert_eq!(
            lines,
            [
                "pauses and GC time: worse in the baseline",
                "pause length: no significant change",
                "request latency: worse in the candidate",
                "split verdict: the baseline is worse in pauses and GC time, the candidate in request latency",
            ]
        );
    }

    #[test]
    fn figures_that_disagree_make_no_verdict() {
        let mut noise = change("pauses.max_seconds", Aspect::PauseLength, 0.1, 0.3);
        noise.significant = false;
        let lines = verdict(&comparison(vec![
            change("pauses.count", Aspect::GcTime, 100.0, 150.0),
            change("pauses.total_seconds", Aspect::GcTime, 2.0, 1.0),
            noise,
        ]));
        assert_eq!(
            lines[0],
            "pauses and GC time: mixed (some figures worse in each run)"
        );
        assert_eq!(lines[1], "pause length: no significant change");
        assert!(!lines.iter().any(|l| l.starts_with("split")));
    }

    #[test]
    fn bad_gates_say_what_is_expected() {
        for bad in [
            "pauses.max_seconds = 50ms",
            "pauses.max_seconds > fifty",
            "> 50ms",
            "pauses..max > 1",
            "a > 1 < 2",
        ] {
            assert!(bad.parse::<Gate>().is_err(), "{bad} parsed");
        }
    }
}
