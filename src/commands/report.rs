//! `pausewatch report` (and `compare --format html`): one self-contained
//! HTML file, inline CSS and SVG only, so it can be mailed, attached to a
//! ticket or opened from an archive without a network: key figures,
//! findings in plain words with their evidence, and the charts, the
//! headline one being the per-minute longest pause beside request p99 and
//! p99.9.

use std::fmt::Write;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use pausewatch_parsers::Pause;

use crate::commands::analyze::{
    analyze, latency_ms, percentile, AnalyzeOptions, LatencyInput, Report,
};
use crate::commands::chart::{bars, escape, Chart, Mark, Series, Style, XAxis};
use crate::commands::compare::{figure, verdict, Comparison, RunDetail};
use crate::model::correlate::CombinedMinute;
use crate::model::histogram::PAUSE_BUCKETS;

const PAUSE_COLOR: &str = "#d62728";
const P99_COLOR: &str = "#1f77b4";
const P999_COLOR: &str = "#9467bd";
const BASELINE_COLOR: &str = "#1f77b4";
const CANDIDATE_COLOR: &str = "#ff7f0e";

/// A time to safepoint this long is a finding (the agent's rule default).
const LONG_TIME_TO_SAFEPOINT_SECONDS: f64 = 0.1;
/// Evidence items listed per finding; the rest are counted.
const EVIDENCE_SHOWN: usize = 8;

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:24px;color:#222;max-width:1000px}\
h1{font-size:22px}h2{font-size:18px;margin-top:28px}table{border-collapse:collapse;margin:8px 0}\
td,th{padding:3px 10px;white-space:nowrap;border-bottom:1px solid #ddd;text-align:right}td:first-child,th:first-child{text-align:left}\
.finding{margin:10px 0;padding:8px 12px;border-left:4px solid #d62728;background:#fdf3f3}\
.finding.ok{border-color:#2ca02c;background:#f3fbf3}.evidence{font-family:monospace;font-size:12px;color:#444}\
svg.chart{display:block;margin:12px 0;background:#fff;border:1px solid #eee}\
svg .title{font-size:14px;font-weight:600}svg .tick,svg .legend,svg .axis{font-size:11px;fill:#444}\
svg .grid{stroke:#eee}svg .empty{font-size:14px;fill:#999}.significant{font-weight:600}";

/// Options of `pausewatch report` beyond what `analyze` reads.
pub struct ReportOptions {
    /// Pauses longer than this are a finding, and the headline's budget line.
    pub pause_budget_seconds: f64,
    /// What the report is of, in its title, where the files are not what
    /// the user gave (the demo's temporary files); `None`: the files.
    pub title: Option<String>,
    /// The labels of the first restarts, where the caller knows what
    /// changed (the demo's cache); the others read "JVM restart (FILE)".
    pub restart_labels: Vec<String>,
}

impl ReportOptions {
    /// The report of the files the user gave, with this pause budget.
    pub fn of_files(pause_budget_seconds: f64) -> ReportOptions {
        ReportOptions {
            pause_budget_seconds,
            title: None,
            restart_labels: Vec::new(),
        }
    }
}

/// What every time chart of one report shares: one x range, so that a
/// minute is at the same place on each, and the restarts marked on it.
struct TimeAxis {
    range: Option<(f64, f64)>,
    restarts: Vec<Mark>,
}

impl TimeAxis {
    /// From the first minute's start to the last minute's end.
    fn of(report: &Report, options: &ReportOptions) -> TimeAxis {
        let range = match (report.minutes.first(), report.minutes.last()) {
            (Some(first), Some(last)) => Some((
                first.gc.start.timestamp() as f64,
                last.gc.start.timestamp() as f64 + 60.0,
            )),
            _ => None,
        };
        let restarts = report
            .restarts
            .iter()
            .enumerate()
            .filter_map(|(index, restart)| {
                let label = options
                    .restart_labels
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| format!("JVM restart ({})", restart.file.display()));
                restart.time.map(|t| Mark {
                    at: t.timestamp_micros() as f64 / 1e6,
                    label,
                })
            })
            .collect();
        TimeAxis { range, restarts }
    }

    /// A time chart on this axis.
    fn chart(&self, title: &str, y_label: &str, style: Style, series: Vec<Series>) -> Chart {
        Chart {
            title: title.to_string(),
            y_label: y_label.to_string(),
            x_axis: XAxis::Time,
            style,
            series,
            x_range: self.range,
            x_marks: self.restarts.clone(),
            y_marks: Vec::new(),
        }
    }
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"generator\" content=\"pausewatch {}\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}</body></html>\n",
        env!("CARGO_PKG_VERSION"),
        escape(title)
    )
}

fn ms(seconds: f64) -> String {
    format!("{:.3} ms", seconds * 1000.0)
}

fn when(time: Option<DateTime<Utc>>) -> String {
    time.map_or("(no time)".to_string(), |t| {
        t.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string()
    })
}

fn minute_label(minute: &CombinedMinute) -> String {
    minute.gc.start.format("%Y-%m-%d %H:%M UTC").to_string()
}

/// Seconds from the first to the last pause: the wall time the paused share is of.
fn pause_span_seconds(pauses: &[Pause]) -> f64 {
    match (
        pauses.first().and_then(|p| p.start.wall),
        pauses.last().and_then(|p| p.end.wall),
    ) {
        (Some(start), Some(end)) => (end - start).as_seconds_f64().max(0.0),
        _ => 0.0,
    }
}

fn rows(out: &mut String, rows: &[(&str, String)]) {
    out.push_str("<table>");
    for (name, value) in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td></tr>",
            escape(name),
            escape(value)
        );
    }
    out.push_str("</table>\n");
}

/// A finding: a sentence and the log evidence behind it.
struct Finding {
    text: String,
    evidence: Vec<String>,
}

fn pause_evidence(pause: &Pause) -> String {
    format!(
        "{}  GC({})  {}{}  {}",
        when(pause.end.wall),
        pause.gc_id.map_or("-".to_string(), |id| id.to_string()),
        pause.name,
        pause
            .cause
            .as_deref()
            .map_or(String::new(), |c| format!(" ({c})")),
        ms(pause.duration_s)
    )
}

fn pauses_finding(pauses: &[Pause], keep: impl Fn(&Pause) -> bool, text: &str) -> Option<Finding> {
    let matching: Vec<&Pause> = pauses.iter().filter(|p| keep(p)).collect();
    (!matching.is_empty()).then(|| Finding {
        text: text.replace("{n}", &matching.len().to_string()),
        evidence: matching.iter().map(|p| pause_evidence(p)).collect(),
    })
}

/// Findings in plain words, each with its evidence (pauses by their log
/// time and GC id, or minutes).
fn findings(report: &Report, pauses: &[Pause], options: &ReportOptions) -> Vec<Finding> {
    let mut found = Vec::new();
    let budget = options.pause_budget_seconds;
    let mut over_budget: Vec<&Pause> = pauses.iter().filter(|p| p.duration_s > budget).collect();
    over_budget.sort_by(|a, b| b.duration_s.total_cmp(&a.duration_s));
    if !over_budget.is_empty() {
        found.push(Finding {
            text: format!(
                "{} pauses were longer than the budget of {} (the longest first).",
                over_budget.len(),
                ms(budget)
            ),
            evidence: over_budget.iter().map(|p| pause_evidence(p)).collect(),
        });
    }
    found.extend(pauses_finding(
        pauses,
        |p| p.full,
        "{n} full collections stopped the application for the whole heap: the young and concurrent collections did not keep up (or the heap is too small for the live data).",
    ));
    found.extend(pauses_finding(
        pauses,
        |p| p.explicit,
        "{n} collections were requested by System.gc() (an application, RMI or a library call), not by the collector; -XX:+DisableExplicitGC or -XX:+ExplicitGCInvokesConcurrent avoids their stop.",
    ));
    found.extend(pauses_finding(
        pauses,
        |p| p.evacuation_failure,
        "{n} collections ran out of space to copy live objects to (to-space exhausted / evacuation failure): these pauses are long; more heap or reserve (G1ReservePercent) helps.",
    ));
    found.extend(pauses_finding(
        pauses,
        |p| p.humongous,
        "{n} collections were started by humongous allocations (objects of at least half a G1 region): a larger region size (-XX:G1HeapRegionSize) or smaller buffers avoid them.",
    ));
    let long_ttsp: Vec<&CombinedMinute> = report
        .minutes
        .iter()
        .filter(|m| m.gc.time_to_safepoint_max_seconds > LONG_TIME_TO_SAFEPOINT_SECONDS)
        .collect();
    if !long_ttsp.is_empty() {
        found.push(Finding {
            text: format!(
                "In {} minutes, threads took longer than {} to reach a safepoint: the stop is longer than the GC work (counted loops, large array copies, page faults).",
                long_ttsp.len(),
                ms(LONG_TIME_TO_SAFEPOINT_SECONDS)
            ),
            evidence: long_ttsp
                .iter()
                .map(|m| {
                    format!(
                        "{}  longest time to safepoint {}",
                        minute_label(m),
                        ms(m.gc.time_to_safepoint_max_seconds)
                    )
                })
                .collect(),
        });
    }
    let live: Vec<(&CombinedMinute, u64)> = report
        .minutes
        .iter()
        .filter_map(|m| m.gc.live_data_bytes.map(|b| (m, b)))
        .collect();
    if let (Some(first), Some(last)) = (live.first(), live.last()) {
        if live.len() >= 3 && last.1 as f64 > first.1 as f64 * 1.2 {
            found.push(Finding {
                text: format!(
                    "Live data after full and mixed collections rose from {:.1} MiB to {:.1} MiB: the application keeps more and more (a cache that grows, a leak); pauses lengthen with it.",
                    first.1 as f64 / 1048576.0,
                    last.1 as f64 / 1048576.0
                ),
                evidence: [first, last]
                    .iter()
                    .map(|(m, b)| {
                        format!(
                            "{}  live data {:.1} MiB",
                            minute_label(m),
                            *b as f64 / 1048576.0
                        )
                    })
                    .collect(),
            });
        }
    }
    if let (Some(latency), Some(attribution)) = (&report.latency, &report.attribution) {
        if attribution.slow_requests > 0
            && attribution.slow_requests_stop_affected * 2 > attribution.slow_requests
        {
            let mut minutes: Vec<&CombinedMinute> = report
                .minutes
                .iter()
                .filter(|m| {
                    m.attribution
                        .is_some_and(|a| a.slow_requests_stop_affected > 0)
                })
                .collect();
            minutes.sort_by_key(|m| {
                std::cmp::Reverse(m.attribution.map_or(0, |a| a.slow_requests_stop_affected))
            });
            found.push(Finding {
                text: format!(
                    "Tail latency is driven by pauses: {} of the {} requests slower than {} overlapped a stop for at least part of their time, and the p99.9 of {} would have been {} without those stops.",
                    attribution.slow_requests_stop_affected,
                    attribution.slow_requests,
                    ms(attribution.slo_seconds),
                    ms(latency.p999_seconds),
                    ms(attribution.p999_without_stop_affected_seconds)
                ),
                evidence: minutes
                    .iter()
                    .map(|m| {
                        let a = m.attribution.unwrap_or_default();
                        format!(
                            "{}  longest pause {}  p99.9 {}  slow {}  stop-affected {}",
                            minute_label(m),
                            ms(m.gc.pause_max_seconds),
                            ms(m.latency.map_or(0.0, |l| l.p999_seconds)),
                            a.slow_requests,
                            a.slow_requests_stop_affected
                        )
                    })
                    .collect(),
            });
        }
    }
    found
}

fn render_findings(out: &mut String, found: &[Finding]) {
    out.push_str("<h2>Findings</h2>\n");
    if found.is_empty() {
        out.push_str("<div class=\"finding ok\">Nothing stands out: no pause over the budget, no full GC, System.gc(), evacuation failure, humongous allocation or long time to safepoint, and the tail is not driven by pauses.</div>\n");
    }
    for finding in found {
        let _ = write!(
            out,
            "<div class=\"finding\"><p>{}</p>",
            escape(&finding.text)
        );
        for line in finding.evidence.iter().take(EVIDENCE_SHOWN) {
            let _ = write!(out, "<div class=\"evidence\">{}</div>", escape(line));
        }
        if finding.evidence.len() > EVIDENCE_SHOWN {
            let _ = write!(
                out,
                "<div class=\"evidence\">… and {} more</div>",
                finding.evidence.len() - EVIDENCE_SHOWN
            );
        }
        out.push_str("</div>\n");
    }
}

/// x of a minute: epoch seconds, or seconds since `origin` for an overlay.
fn minute_x(minute: &CombinedMinute, origin: Option<i64>) -> f64 {
    let t = minute.gc.start.timestamp();
    (t - origin.unwrap_or(0)) as f64
}

fn minute_series(
    name: &str,
    color: &'static str,
    minutes: &[CombinedMinute],
    origin: Option<i64>,
    value: impl Fn(&CombinedMinute) -> Option<f64>,
) -> Series {
    Series {
        name: name.to_string(),
        color,
        points: minutes
            .iter()
            .filter_map(|m| value(m).map(|v| (minute_x(m, origin), v)))
            .collect(),
    }
}

fn has_latency(minutes: &[CombinedMinute]) -> bool {
    minutes.iter().any(|m| m.latency.is_some())
}

fn served_ms(
    m: &CombinedMinute,
    pick: fn(&crate::model::correlate::LatencySummary) -> f64,
) -> Option<f64> {
    m.latency.filter(|l| l.count > 0).map(|l| pick(&l) * 1000.0)
}

/// The headline picture: the longest pause of each minute beside the
/// minute's request p99 and p99.9, and the pause budget they are held to.
fn headline_chart(minutes: &[CombinedMinute], axis: &TimeAxis, budget: &Mark) -> String {
    let mut series = vec![minute_series(
        "longest pause",
        PAUSE_COLOR,
        minutes,
        None,
        |m| Some(m.gc.pause_max_seconds * 1000.0),
    )];
    if has_latency(minutes) {
        series.push(minute_series(
            "request p99",
            P99_COLOR,
            minutes,
            None,
            |m| served_ms(m, |l| l.p99_seconds),
        ));
        series.push(minute_series(
            "request p99.9",
            P999_COLOR,
            minutes,
            None,
            |m| served_ms(m, |l| l.p999_seconds),
        ));
    }
    let title = if has_latency(minutes) {
        "Longest pause per minute beside request p99 and p99.9"
    } else {
        "Longest pause per minute"
    };
    let mut chart = axis.chart(title, "ms", Style::Lines, series);
    chart.y_marks.push(budget.clone());
    chart.render()
}

/// Pause counts in the histogram's buckets (0.5 ms to 10 s, 1-2-5).
fn pause_histogram(pauses: &[Pause]) -> Vec<u64> {
    let mut counts = vec![0u64; PAUSE_BUCKETS.len()];
    for pause in pauses {
        let index = PAUSE_BUCKETS
            .iter()
            .position(|&bound| pause.duration_s <= bound)
            .unwrap_or(PAUSE_BUCKETS.len() - 1);
        counts[index] += 1;
    }
    counts
}

fn bucket_labels() -> Vec<String> {
    PAUSE_BUCKETS
        .iter()
        .map(|&bound| {
            if bound.is_infinite() {
                "> 10 s".to_string()
            } else if bound >= 1.0 {
                format!("≤ {bound} s")
            } else {
                format!("≤ {} ms", bound * 1000.0)
            }
        })
        .collect()
}

/// Every chart of one run's report, in order; the time charts on `axis`.
fn run_charts(
    minutes: &[CombinedMinute],
    pauses: &[Pause],
    axis: &TimeAxis,
    budget_seconds: f64,
) -> Vec<String> {
    let budget = Mark {
        at: budget_seconds * 1000.0,
        label: format!("pause budget {}", ms(budget_seconds)),
    };
    let mut charts = vec![headline_chart(minutes, axis, &budget)];
    let mut timeline = axis.chart(
        "Pause timeline (every pause, by when it ended)",
        "ms",
        Style::Dots,
        vec![Series {
            name: "pause".to_string(),
            color: PAUSE_COLOR,
            points: pauses
                .iter()
                .filter_map(|p| {
                    p.end
                        .wall
                        .map(|t| (t.timestamp_micros() as f64 / 1e6, p.duration_s * 1000.0))
                })
                .collect(),
        }],
    );
    timeline.y_marks.push(budget);
    charts.push(timeline.render());
    charts.push(bars(
        "Pause durations",
        &bucket_labels(),
        &[("pauses", PAUSE_COLOR, pause_histogram(pauses))],
    ));
    charts.push(
        axis.chart(
            "Heap after GC and live data (per minute)",
            "MiB",
            Style::Lines,
            vec![
                minute_series("heap after GC", P99_COLOR, minutes, None, |m| {
                    m.gc.heap_after_gc_bytes.map(|b| b as f64 / 1048576.0)
                }),
                minute_series("live data", PAUSE_COLOR, minutes, None, |m| {
                    m.gc.live_data_bytes.map(|b| b as f64 / 1048576.0)
                }),
            ],
        )
        .render(),
    );
    charts.push(
        axis.chart(
            "Safepoints: stopped time and longest time to safepoint (per minute)",
            "ms",
            Style::Lines,
            vec![
                minute_series("stopped", P99_COLOR, minutes, None, |m| {
                    Some(m.gc.safepoint_total_seconds * 1000.0)
                }),
                minute_series("time to safepoint", PAUSE_COLOR, minutes, None, |m| {
                    Some(m.gc.time_to_safepoint_max_seconds * 1000.0)
                }),
            ],
        )
        .render(),
    );
    if has_latency(minutes) {
        charts.push(
            axis.chart(
                "Share of slow requests that were stop-affected (per minute)",
                "%",
                Style::Lines,
                vec![minute_series(
                    "stop-affected share",
                    P999_COLOR,
                    minutes,
                    None,
                    |m| {
                        m.attribution.filter(|a| a.slow_requests > 0).map(|a| {
                            a.slow_requests_stop_affected as f64 / a.slow_requests as f64 * 100.0
                        })
                    },
                )],
            )
            .render(),
        );
    }
    charts
}

/// The report of one run (`pausewatch report`); `report` must come from
/// `analyze` with its events included.
pub fn report_html(report: &Report, options: &ReportOptions) -> String {
    let pauses = report.events.as_deref().unwrap_or_default();
    let mut body = String::new();
    let name = options.title.clone().unwrap_or_else(|| {
        let files: Vec<String> = report
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        files.join(", ")
    });
    let _ = write!(
        body,
        "<h1>GC pauses and latency: {}</h1>\n<p>collector {} · JDK {} · {} to {}</p>\n",
        escape(&name),
        escape(&report.collector),
        escape(report.jdk_version.as_deref().unwrap_or("unknown")),
        escape(&report.minutes.first().map_or("-".into(), minute_label)),
        escape(&report.minutes.last().map_or("-".into(), minute_label)),
    );
    body.push_str("<h2>Key figures</h2>\n");
    let p = &report.pauses;
    let span = pause_span_seconds(pauses);
    let mut maxima: Vec<f64> = report
        .minutes
        .iter()
        .map(|m| m.gc.pause_max_seconds)
        .collect();
    maxima.sort_by(f64::total_cmp);
    let per_minute = |bytes: u64| {
        if span > 0.0 {
            format!("{:.1} MiB/s", bytes as f64 / 1048576.0 / span)
        } else {
            "n/a".to_string()
        }
    };
    let ttsp = report
        .minutes
        .iter()
        .map(|m| m.gc.time_to_safepoint_max_seconds)
        .fold(0.0, f64::max);
    let m = &report.markers;
    rows(
        &mut body,
        &[
            (
                "paused share of wall time",
                if span > 0.0 {
                    format!("{:.3} %", (p.total_seconds / span).min(1.0) * 100.0)
                } else {
                    "n/a".to_string()
                },
            ),
            ("pauses", p.count.to_string()),
            ("paused in total", ms(p.total_seconds)),
            ("longest pause", ms(p.max_seconds)),
            (
                "pause p50 / p99 / p99.9",
                format!(
                    "{} / {} / {}",
                    ms(p.p50_seconds),
                    ms(p.p99_seconds),
                    ms(p.p999_seconds)
                ),
            ),
            (
                "longest pause per minute: p50 / p90 / p99 / max",
                format!(
                    "{} / {} / {} / {} over {} minutes",
                    ms(percentile(&maxima, 0.5)),
                    ms(percentile(&maxima, 0.9)),
                    ms(percentile(&maxima, 0.99)),
                    ms(maxima.last().copied().unwrap_or(0.0)),
                    maxima.len()
                ),
            ),
            ("allocation rate", per_minute(m.allocated_bytes)),
            ("promotion rate", per_minute(m.promoted_bytes)),
            ("full GCs", m.full_gcs.to_string()),
            ("evacuation failures", m.evacuation_failures.to_string()),
            (
                "safepoints",
                format!(
                    "{}, {} stopped, longest {}",
                    report.safepoints.count,
                    ms(report.safepoints.total_seconds),
                    ms(report.safepoints.max_seconds)
                ),
            ),
            ("longest time to safepoint", ms(ttsp)),
        ],
    );
    // Only Go's gctrace tells the collector's CPU; a JVM's GC log does not.
    if let Some(cpu) = &report.gc_cpu {
        let cpus = report
            .minutes
            .iter()
            .filter_map(|m| m.gc.cpus)
            .reduce(f64::max);
        let share = match cpus.filter(|_| span > 0.0) {
            Some(cpus) => format!(
                ", {:.1} % of the {cpus} CPUs available",
                (cpu.total() / (span * cpus)).min(1.0) * 100.0
            ),
            None => String::new(),
        };
        rows(
            &mut body,
            &[("collector CPU", format!("{}{share}", ms(cpu.total())))],
        );
    }
    if let (Some(latency), Some(attribution)) = (&report.latency, &report.attribution) {
        rows(
            &mut body,
            &[
                ("requests", latency.count.to_string()),
                (
                    "latency p50 / p99 / p99.9 / max",
                    format!(
                        "{} / {} / {} / {}",
                        latency_ms(report, latency.p50_seconds),
                        latency_ms(report, latency.p99_seconds),
                        latency_ms(report, latency.p999_seconds),
                        latency_ms(report, latency.max_seconds)
                    ),
                ),
                (
                    "slow requests",
                    format!(
                        "{} slower than {}",
                        attribution.slow_requests,
                        ms(attribution.slo_seconds)
                    ),
                ),
                (
                    "stop-affected slow requests",
                    attribution.slow_requests_stop_affected.to_string(),
                ),
                (
                    "p99.9 without the stops",
                    ms(attribution.p999_without_stop_affected_seconds),
                ),
            ],
        );
    }
    render_findings(&mut body, &findings(report, pauses, options));
    body.push_str("<h2>Charts</h2>\n");
    let axis = TimeAxis::of(report, options);
    for chart in run_charts(&report.minutes, pauses, &axis, options.pause_budget_seconds) {
        body.push_str(&chart);
        body.push('\n');
    }
    for warning in &report.warnings {
        let _ = writeln!(body, "<p>warning: {}</p>", escape(warning));
    }
    page(&format!("pausewatch report: {name}"), &body)
}

/// Analyzes the files (a rotated set, oldest first) and writes their
/// report to `output`.
pub fn write_report(
    files: &[PathBuf],
    jvm_start: Option<DateTime<Utc>>,
    latency: Option<LatencyInput>,
    output: &Path,
    options: &ReportOptions,
) -> Result<()> {
    let analyzed = analyze(
        files,
        &AnalyzeOptions {
            jvm_start,
            include_events: true,
            latency,
            skip_first_seconds: None,
        },
    )?;
    std::fs::write(output, report_html(&analyzed, options))
        .with_context(|| format!("cannot write {}", output.display()))
}

fn origin(run: &RunDetail) -> Option<i64> {
    run.minutes.first().map(|m| m.gc.start.timestamp())
}

/// Both runs on one time axis (minutes since each run's start).
fn overlay(
    title: &str,
    y_label: &str,
    comparison: &Comparison,
    value: fn(&CombinedMinute) -> Option<f64>,
) -> String {
    let runs = [
        ("baseline", BASELINE_COLOR, &comparison.baseline_run),
        ("candidate", CANDIDATE_COLOR, &comparison.candidate_run),
    ];
    Chart {
        title: title.to_string(),
        y_label: y_label.to_string(),
        x_axis: XAxis::MinutesSinceStart,
        style: Style::Lines,
        series: runs
            .iter()
            .map(|(name, color, run)| minute_series(name, color, &run.minutes, origin(run), value))
            .collect(),
        ..Chart::default()
    }
    .render()
}

/// `compare --format html`: the changes, the verdict and the gates, and both
/// runs overlaid in the report's charts.
pub fn compare_html(comparison: &Comparison) -> String {
    let mut body = String::from("<h1>pausewatch compare: baseline and candidate</h1>\n");
    for (name, run) in [
        ("baseline", &comparison.baseline),
        ("candidate", &comparison.candidate),
    ] {
        let _ = writeln!(
            body,
            "<p><b>{name}</b>: {} ({} minutes, {} pauses)</p>",
            escape(&run.file_names()),
            run.minutes,
            run.pauses.count
        );
    }
    body.push_str("<h2>Changes</h2>\n<table><tr><th>metric</th><th>baseline</th><th>candidate</th><th>change</th><th>p</th></tr>");
    for change in &comparison.changes {
        let _ = write!(
            body,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if change.significant {
                " class=\"significant\""
            } else {
                ""
            },
            change.metric,
            figure(change.metric, change.baseline),
            figure(change.metric, change.candidate),
            change.ratio.map_or("n/a".to_string(), |r| format!(
                "{:+.1} %",
                (r - 1.0) * 100.0
            )),
            change
                .p_value
                .map_or("n/a".to_string(), |p| format!("{p:.3}"))
        );
    }
    body.push_str("</table>\n<p>Bold: significant at p &lt; 0.05 (quantiles of pauses and latency by a bootstrap of the individual pauses and requests, other figures by Mann-Whitney U over whole minutes).</p>\n<h2>Verdict</h2>\n<pre>");
    body.push_str(&escape(&verdict(comparison).join("\n")));
    body.push_str("</pre>\n<h2>Charts</h2>\n");
    body.push_str(&overlay(
        "Longest pause per minute",
        "ms",
        comparison,
        |m| Some(m.gc.pause_max_seconds * 1000.0),
    ));
    if has_latency(&comparison.baseline_run.minutes) {
        body.push_str(&overlay(
            "Request p99.9 per minute",
            "ms",
            comparison,
            |m| served_ms(m, |l| l.p999_seconds),
        ));
        body.push_str(&overlay("Request p99 per minute", "ms", comparison, |m| {
            served_ms(m, |l| l.p99_seconds)
        }));
    }
    body.push_str(&overlay("Paused time per minute", "ms", comparison, |m| {
        Some(m.gc.pause_total_seconds * 1000.0)
    }));
    body.push_str(&bars(
        "Pause durations",
        &bucket_labels(),
        &[
            (
                "baseline",
                BASELINE_COLOR,
                pause_histogram(&comparison.baseline_run.pauses),
            ),
            (
                "candidate",
                CANDIDATE_COLOR,
                pause_histogram(&comparison.candidate_run.pauses),
            ),
        ],
    ));
    page("pausewatch compare", &body)
}
