//! `pausewatch compare`: two runs (a load test before and after a change, a
//! canary beside the fleet) summarised the same way after their warm-up,
//! every change tested for significance with the statistic that fits it
//! (pause and latency quantiles by a bootstrap of the individual pauses and
//! requests, counts and per-minute figures by Mann-Whitney U over whole
//! minutes), a verdict that gives the size of each change and says when the
//! runs are too short to test, and release gates (`--fail-if`) on the result.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::commands::analyze::{analyze, percentile, AnalyzeOptions, LatencyInput, PauseSummary};
use crate::model::bootstrap::{quantile_differences, Difference};
use crate::model::correlate::{Attribution, CombinedMinute, LatencySummary};
use crate::model::rank_test::{mann_whitney_p, smallest_p};
use pausewatch_parsers::Pause;

mod verdict;
pub use self::verdict::{render_text, verdict};

/// A change is significant below this two-sided p-value.
const SIGNIFICANCE_LEVEL: f64 = 0.05;

/// A change of at least this factor, either way, is never called "no
/// change": when it is not significant the verdict says it is inconclusive.
const LARGE_CHANGE: f64 = 1.5;

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

/// A run's collector CPU.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct GcCpuSummary {
    pub seconds: f64,
    /// Over the CPUs available (GOMAXPROCS) from the first to the last
    /// pause, as `gc_overhead_ratio` spans the run.
    pub available_ratio: f64,
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
    /// The collector's CPU where the logs say (Go's gctrace; a JVM's GC log
    /// does not, and has no process CPU either).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_cpu: Option<GcCpuSummary>,
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
    /// Two-sided; `None` when a run has no value to test.
    pub p_value: Option<f64>,
    pub test: TestKind,
    /// With the bootstrap: the 95 % interval of the ratio candidate / baseline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interval: Option<[f64; 2]>,
    /// `false` when the runs have too few whole minutes for the per-minute
    /// test to ever be significant, whatever the values.
    pub testable: bool,
    #[serde(skip)]
    pub aspect: Aspect,
}

/// How a change was tested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// Mann-Whitney U over the runs' whole minutes.
    PerMinute,
    /// A block bootstrap of the individual pauses or requests.
    Bootstrap,
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
    /// The whole minutes (baseline, candidate) the per-minute tests had.
    #[serde(skip)]
    pub whole_minutes: [usize; 2],
}

/// The per-minute series, pauses and request latencies (in time order) of a
/// run, kept for the significance tests and the HTML overlay.
#[derive(Default)]
pub struct RunDetail {
    pub minutes: Vec<CombinedMinute>,
    pub pauses: Vec<Pause>,
    pub request_seconds: Vec<f64>,
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

/// What a metric's significance is tested on.
#[derive(Clone, Copy)]
enum Test {
    /// Its value in each whole minute.
    PerMinute(PerMinute),
    /// This quantile (1.0: the max) of the individual pauses.
    Pauses(f64),
    /// This quantile of the individual requests' latencies.
    Requests(f64),
}

/// Every compared metric: its SUMMARY path, its aspect, and what its
/// significance test compares. Higher is worse for all of them but the
/// counterfactual.
const METRICS: &[(&str, Aspect, Test)] = &[
    (
        "pauses.count",
        Aspect::GcTime,
        Test::PerMinute(|m| Some(m.gc.pause_count as f64)),
    ),
    (
        "pauses.total_seconds",
        Aspect::GcTime,
        Test::PerMinute(|m| Some(m.gc.pause_total_seconds)),
    ),
    (
        "gc_overhead_ratio",
        Aspect::GcTime,
        Test::PerMinute(|m| Some(m.gc.pause_total_seconds / 60.0)),
    ),
    (
        "gc_cpu.available_ratio",
        Aspect::GcTime,
        Test::PerMinute(|m| m.gc.gc_cpu_of_available),
    ),
    ("pauses.p50_seconds", Aspect::PauseLength, Test::Pauses(0.5)),
    (
        "pauses.p99_seconds",
        Aspect::PauseLength,
        Test::Pauses(0.99),
    ),
    (
        "pauses.p999_seconds",
        Aspect::PauseLength,
        Test::Pauses(0.999),
    ),
    ("pauses.max_seconds", Aspect::PauseLength, Test::Pauses(1.0)),
    (
        "minute_max_pause.p50_seconds",
        Aspect::PauseLength,
        Test::PerMinute(minute_max_pause),
    ),
    (
        "minute_max_pause.p99_seconds",
        Aspect::PauseLength,
        Test::PerMinute(minute_max_pause),
    ),
    (
        "minute_max_pause.max_seconds",
        Aspect::PauseLength,
        Test::PerMinute(minute_max_pause),
    ),
    ("latency.p50_seconds", Aspect::Latency, Test::Requests(0.5)),
    ("latency.p90_seconds", Aspect::Latency, Test::Requests(0.9)),
    ("latency.p99_seconds", Aspect::Latency, Test::Requests(0.99)),
    (
        "latency.p999_seconds",
        Aspect::Latency,
        Test::Requests(0.999),
    ),
    ("latency.max_seconds", Aspect::Latency, Test::Requests(1.0)),
    (
        "attribution.slow_requests",
        Aspect::Latency,
        Test::PerMinute(|m| served(m).and(m.attribution).map(|a| a.slow_requests as f64)),
    ),
    (
        "attribution.slow_requests_stop_affected",
        Aspect::Latency,
        Test::PerMinute(|m| {
            served(m)
                .and(m.attribution)
                .map(|a| a.slow_requests_stop_affected as f64)
        }),
    ),
    (
        "attribution.p999_without_stop_affected_seconds",
        Aspect::Counterfactual,
        Test::PerMinute(|m| {
            served(m)
                .and(m.attribution)
                .map(|a| a.p999_without_stop_affected_seconds)
        }),
    ),
];

/// The quantiles the bootstrap resamples for `Test::Pauses` or `Test::Requests`.
fn bootstrapped(pick: fn(Test) -> Option<f64>) -> Vec<f64> {
    METRICS
        .iter()
        .filter_map(|(_, _, test)| pick(*test))
        .collect()
}

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
    let mut requests = report.requests.unwrap_or_default();
    requests.sort_by_key(|r| r.start);
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
    let cpus = report
        .minutes
        .iter()
        .filter_map(|m| m.gc.cpus)
        .reduce(f64::max);
    let gc_cpu = report
        .gc_cpu
        .as_ref()
        .zip(cpus)
        .map(|(cpu, cpus)| GcCpuSummary {
            seconds: cpu.total(),
            available_ratio: if span > 0.0 {
                cpu.total() / (span * cpus)
            } else {
                0.0
            },
        });
    let summary = RunSummary {
        gc_cpu,
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
            request_seconds: requests.iter().map(|r| r.duration_s).collect(),
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
    let durations =
        |run: &Run| -> Vec<f64> { run.detail.pauses.iter().map(|p| p.duration_s).collect() };
    let pause_quantiles = bootstrapped(|t| match t {
        Test::Pauses(q) => Some(q),
        _ => None,
    });
    let request_quantiles = bootstrapped(|t| match t {
        Test::Requests(q) => Some(q),
        _ => None,
    });
    let pause_bootstrap = quantile_differences(
        &durations(&baseline),
        &durations(&candidate),
        &pause_quantiles,
    );
    let request_bootstrap = quantile_differences(
        &baseline.detail.request_seconds,
        &candidate.detail.request_seconds,
        &request_quantiles,
    );
    let whole_minutes =
        [&baseline, &candidate].map(|run| complete_minutes(&run.detail.minutes).len());
    let mut changes = Vec::new();
    for &(metric, aspect, test) in METRICS {
        let (Some(b), Some(c)) = (lookup(&base_json, metric), lookup(&cand_json, metric)) else {
            continue;
        };
        let bootstrap = |quantiles: &[f64], differences: &Option<Vec<Difference>>, q: f64| {
            let index = quantiles.iter().position(|x| *x == q);
            index.and_then(|i| differences.as_ref().map(|d| d[i]))
        };
        let (kind, p_value, interval, testable) = match test {
            Test::PerMinute(per_minute) => {
                let sample = |run: &Run| -> Vec<f64> {
                    complete_minutes(&run.detail.minutes)
                        .iter()
                        .filter_map(per_minute)
                        .collect()
                };
                let (sb, sc) = (sample(&baseline), sample(&candidate));
                let testable = smallest_p(sb.len(), sc.len()) < SIGNIFICANCE_LEVEL;
                (
                    TestKind::PerMinute,
                    mann_whitney_p(&sb, &sc),
                    None,
                    testable,
                )
            }
            Test::Pauses(q) | Test::Requests(q) => {
                let difference = match test {
                    Test::Pauses(_) => bootstrap(&pause_quantiles, &pause_bootstrap, q),
                    _ => bootstrap(&request_quantiles, &request_bootstrap, q),
                };
                let interval = difference
                    .filter(|_| b > 0.0)
                    .map(|d| [1.0 + d.low / b, 1.0 + d.high / b]);
                (
                    TestKind::Bootstrap,
                    difference.map(|d| d.p_value),
                    interval,
                    true,
                )
            }
        };
        changes.push(Change {
            metric,
            baseline: b,
            candidate: c,
            ratio: (b != 0.0).then(|| c / b),
            significant: p_value.is_some_and(|p| p < SIGNIFICANCE_LEVEL) && b != c,
            p_value,
            test: kind,
            interval,
            testable,
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
        whole_minutes,
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

#[cfg(test)]
pub(crate) mod tests {
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

    pub(crate) fn change(
        metric: &'static str,
        aspect: Aspect,
        baseline: f64,
        candidate: f64,
    ) -> Change {
        Change {
            metric,
            baseline,
            candidate,
            ratio: Some(candidate / baseline),
            significant: true,
            p_value: Some(0.01),
            test: TestKind::Bootstrap,
            interval: None,
            testable: true,
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
            gc_cpu: None,
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

    pub(crate) fn comparison(changes: Vec<Change>) -> Comparison {
        Comparison {
            baseline: summary(),
            candidate: summary(),
            changes,
            gates: Vec::new(),
            baseline_run: RunDetail::default(),
            candidate_run: RunDetail::default(),
            whole_minutes: [6, 6],
        }
    }

    /// An exact exceedance test, computed here without the bootstrap: the
    /// chance, under no change, that the `k` longest of the pooled pauses
    /// all come from the run that has `k` pauses past the other's longest,
    /// C(n_run, k) / C(n, k), doubled for two sides.
    fn exceedance_p(a: &[f64], b: &[f64]) -> f64 {
        let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        let past = |v: &[f64], limit: f64| v.iter().filter(|x| **x > limit).count();
        let (k, run) = match (past(b, max(a)), past(a, max(b))) {
            (kb, ka) if kb >= ka => (kb, b.len()),
            (_, ka) => (ka, a.len()),
        };
        let n = a.len() + b.len();
        let p: f64 = (0..k).map(|i| (run - i) as f64 / (n - i) as f64).product();
        (2.0 * p).min(1.0)
    }

    fn run(durations: &[f64]) -> Run {
        let mut sorted = durations.to_vec();
        sorted.sort_by(f64::total_cmp);
        let q = |quantile: f64| sorted[((quantile * sorted.len() as f64).ceil() as usize) - 1];
        let mut summary = summary();
        summary.latency = None;
        summary.pauses = PauseSummary {
            count: durations.len() as u64,
            total_seconds: durations.iter().sum(),
            max_seconds: q(1.0),
            p50_seconds: q(0.5),
            p99_seconds: q(0.99),
            p999_seconds: q(0.999),
        };
        Run {
            summary,
            detail: RunDetail {
                pauses: durations
                    .iter()
                    .map(|&duration_s| Pause {
                        duration_s,
                        ..Pause::default()
                    })
                    .collect(),
                ..RunDetail::default()
            },
        }
    }

    /// The seed case: the candidate's mean pause is lower, its tail three
    /// times longer, and its runs too short for any per-minute test. The
    /// bootstrap catches the tail, as an exceedance test over the same
    /// pauses does, and does not call the same pauses different.
    #[test]
    fn a_better_mean_does_not_hide_a_tripled_tail() {
        // 600 pauses a run, 8-12 ms; the candidate's mostly 4-6 ms, with
        // one in a hundred at 30-36 ms.
        let baseline: Vec<f64> = (0..600)
            .map(|i| 0.008 + (i * 37 % 600) as f64 * 0.004 / 600.0)
            .collect();
        let candidate: Vec<f64> = (0..600)
            .map(|i| match i % 100 {
                50 => 0.030 + (i * 13 % 600) as f64 * 0.006 / 600.0,
                _ => 0.004 + (i * 37 % 600) as f64 * 0.002 / 600.0,
            })
            .collect();
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        assert!(mean(&candidate) < mean(&baseline));
        let result = compare(run(&baseline), run(&candidate), &[]).unwrap();
        let p999 = result
            .changes
            .iter()
            .find(|c| c.metric == "pauses.p999_seconds")
            .unwrap();
        assert!(p999.ratio.unwrap() > 2.5, "{p999:?}");
        let exceedance = exceedance_p(&baseline, &candidate);
        assert!(exceedance < 0.05, "{exceedance}");
        assert!(p999.significant, "{p999:?}");
        let [low, high] = p999.interval.unwrap();
        assert!(low > 1.0 && high >= p999.ratio.unwrap(), "{low} {high}");
        let lines = verdict(&result);
        assert!(
            lines[1]
                .starts_with("pause length: mixed: the candidate is worse in pauses.max_seconds")
                || lines[1].starts_with(
                    "pause length: mixed: the candidate is worse in pauses.p999_seconds"
                ),
            "{lines:?}"
        );
        assert!(
            lines[0].contains("the runs are too short to test"),
            "{lines:?}"
        );

        // Two halves of one spread of pauses: neither test finds a change.
        let first: Vec<f64> = baseline.iter().step_by(2).copied().collect();
        let second: Vec<f64> = baseline.iter().skip(1).step_by(2).copied().collect();
        assert!(exceedance_p(&first, &second) >= 0.05);
        let same = compare(run(&first), run(&second), &[]).unwrap();
        assert!(
            same.changes.iter().all(|c| !c.significant),
            "{:?}",
            same.changes
        );
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
