//! `compare`'s words: the table of changes and the verdict per aspect,
//! each with the size of its largest change, saying when the runs are too
//! short to test rather than calling a large change "no change".

use crate::model::rank_test::smallest_testable;

use super::{figure, Aspect, Change, Comparison, LARGE_CHANGE, SIGNIFICANCE_LEVEL};

/// The run a change makes worse (higher is worse).
fn worse_of(change: &Change) -> &'static str {
    if change.candidate > change.baseline {
        "candidate"
    } else {
        "baseline"
    }
}

/// The size of the largest significant change of `aspect` that `keep` keeps.
fn largest_significant(
    comparison: &Comparison,
    aspect: Aspect,
    keep: impl Fn(&Change) -> bool,
) -> String {
    comparison
        .changes
        .iter()
        .filter(|c| c.aspect == aspect && c.significant && keep(c))
        .max_by(|a, b| factor(a).total_cmp(&factor(b)))
        .map(size)
        .unwrap_or_default()
}

/// Which run is worse on an aspect, from its significant changes: `None`
/// when none changed significantly, `Some(None)` when they disagree.
fn worse_run(changes: &[Change], aspect: Aspect) -> Option<Option<&'static str>> {
    let mut verdict = None;
    for change in changes
        .iter()
        .filter(|c| c.aspect == aspect && c.significant)
    {
        let worse = worse_of(change);
        verdict = match verdict {
            None => Some(Some(worse)),
            Some(Some(previous)) if previous == worse => Some(Some(worse)),
            _ => Some(None),
        };
    }
    verdict
}

/// How much larger the candidate's figure is than the baseline's, as a
/// factor either way (2.0 for doubled or halved); infinite from 0.
fn factor(change: &Change) -> f64 {
    match change.ratio {
        Some(r) if r > 0.0 => r.max(1.0 / r),
        _ if change.baseline == change.candidate => 1.0,
        _ => f64::INFINITY,
    }
}

/// `metric B -> C (×F)`: the size of a change, in words a user can act on.
fn size(change: &Change) -> String {
    let change_text = match change.ratio {
        Some(r) if !(0.5..=2.0).contains(&r) => format!("{r:.1}x"),
        Some(r) => format!("{:+.1}%", (r - 1.0) * 100.0),
        None => "from 0".to_string(),
    };
    format!(
        "{} {} -> {} ({change_text})",
        change.metric,
        figure(change.metric, change.baseline),
        figure(change.metric, change.candidate)
    )
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
    if let (Some(b), Some(c)) = (&comparison.baseline.gc_cpu, &comparison.candidate.gc_cpu) {
        let _ = writeln!(
            out,
            "GC CPU {:.1}% -> {:.1}% of the CPUs available",
            b.available_ratio * 100.0,
            c.available_ratio * 100.0
        );
    }
    let _ = writeln!(
        out,
        "\n{:<48} {:>14} {:>14} {:>9} {:>8}  95% interval",
        "metric", "baseline", "candidate", "change", "p"
    );
    let percent = |r: f64| format!("{:+.1}%", (r - 1.0) * 100.0);
    for change in &comparison.changes {
        let ratio = change.ratio.map_or("n/a".to_string(), percent);
        let p = match change.p_value {
            _ if !change.testable => "short".to_string(),
            Some(p) => format!("{p:.3}"),
            None => "n/a".to_string(),
        };
        let interval = change
            .interval
            .map(|[low, high]| format!("  {} to {}", percent(low), percent(high)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:<48} {:>14} {:>14} {:>9} {:>8}{}{interval}",
            change.metric,
            figure(change.metric, change.baseline),
            figure(change.metric, change.candidate),
            ratio,
            p,
            if change.significant { " *" } else { "  " },
        );
    }
    let _ = writeln!(
        out,
        "(* significant at p < {SIGNIFICANCE_LEVEL}: quantiles of pauses and latency by a block bootstrap of the individual pauses and requests, with the 95% interval of the change; counts and per-minute figures by Mann-Whitney U over whole minutes, \"short\" when the runs have too few whole minutes to test)\n"
    );
    for line in verdict(comparison) {
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The verdict on an aspect none of whose changes is significant:
/// inconclusive when one is large, not tested when the runs are too short
/// for every test, else no significant change, with the largest.
fn aspect_without_significance(comparison: &Comparison, aspect: Aspect) -> String {
    let of_aspect: Vec<&Change> = comparison
        .changes
        .iter()
        .filter(|c| c.aspect == aspect)
        .collect();
    let largest = of_aspect
        .iter()
        .copied()
        .max_by(|a, b| factor(a).total_cmp(&factor(b)));
    let [base_minutes, cand_minutes] = comparison.whole_minutes;
    let too_short = format!(
        "the runs are too short to test per-minute figures ({base_minutes} and {cand_minutes} whole minutes after the warm-up; a test needs at least {} in each)",
        smallest_testable(SIGNIFICANCE_LEVEL)
    );
    let describe = aspect.describe();
    match largest {
        None => format!("{describe}: nothing to compare"),
        Some(change) if factor(change) >= LARGE_CHANGE => {
            let reason = if !change.testable {
                too_short
            } else {
                "too few of the runs' pauses or requests differ to tell it from chance: record longer runs".to_string()
            };
            format!(
                "{describe}: inconclusive: {}, not significant: {reason}",
                size(change)
            )
        }
        Some(change) if of_aspect.iter().all(|c| !c.testable) => {
            format!(
                "{describe}: not tested: {too_short}; largest change {}",
                size(change)
            )
        }
        Some(change) => format!(
            "{describe}: no significant change (largest: {})",
            size(change)
        ),
    }
}

/// The verdict per aspect with the size of its largest change, a split
/// verdict when each run is worse in something, and the gates' results.
pub fn verdict(comparison: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    let mut worse_by_run: [(&str, Vec<&str>); 2] = [("baseline", vec![]), ("candidate", vec![])];
    for aspect in [Aspect::GcTime, Aspect::PauseLength, Aspect::Latency] {
        if aspect == Aspect::Latency && comparison.baseline.latency.is_none() {
            continue;
        }
        lines.push(match worse_run(&comparison.changes, aspect) {
            None => aspect_without_significance(comparison, aspect),
            Some(None) => {
                let largest =
                    |run: &str| largest_significant(comparison, aspect, |c| worse_of(c) == run);
                format!(
                    "{}: mixed: the candidate is worse in {}, the baseline in {}",
                    aspect.describe(),
                    largest("candidate"),
                    largest("baseline")
                )
            }
            Some(Some(worse)) => {
                if let Some((_, aspects)) = worse_by_run.iter_mut().find(|(run, _)| *run == worse) {
                    aspects.push(aspect.describe());
                }
                format!(
                    "{}: worse in the {worse} (largest: {})",
                    aspect.describe(),
                    largest_significant(comparison, aspect, |_| true)
                )
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
    use super::super::tests::{change, comparison};
    use super::*;

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
                "pauses and GC time: worse in the baseline (largest: pauses.total_seconds 2000.000 ms -> 1000.000 ms (-50.0%))",
                "pause length: nothing to compare",
                "request latency: worse in the candidate (largest: latency.p999_seconds 50.000 ms -> 90.000 ms (+80.0%))",
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
            "pauses and GC time: mixed: the candidate is worse in pauses.count 100 -> 150 (+50.0%), the baseline in pauses.total_seconds 2000.000 ms -> 1000.000 ms (-50.0%)"
        );
        // Not significant, but three times longer: never "no change".
        assert_eq!(
            lines[1],
            "pause length: inconclusive: pauses.max_seconds 100.000 ms -> 300.000 ms (3.0x), not significant: too few of the runs' pauses or requests differ to tell it from chance: record longer runs"
        );
        assert!(!lines.iter().any(|l| l.starts_with("split")));
    }

    /// Runs whose minutes are too few for the per-minute test say so, with
    /// the minutes a test needs, rather than "no significant change".
    #[test]
    fn short_runs_are_not_tested() {
        let mut short = change("pauses.count", Aspect::GcTime, 100.0, 104.0);
        short.significant = false;
        short.testable = false;
        let mut comparison = comparison(vec![short]);
        comparison.whole_minutes = [3, 3];
        assert_eq!(
            verdict(&comparison)[0],
            "pauses and GC time: not tested: the runs are too short to test per-minute figures (3 and 3 whole minutes after the warm-up; a test needs at least 4 in each); largest change pauses.count 100 -> 104 (+4.0%)"
        );
    }
}
