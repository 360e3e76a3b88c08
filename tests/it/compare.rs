//! `pausewatch compare` on a recorded pair of constant-rate runs of the Java
//! stand-in service (tests/fixtures/compare, made by its generate.sh):
//! the same service before and after its on-heap cache grew from 15 % to
//! 70 % of the heap. The truth is independent of the parser: the JVM's own
//! GarbageCollectorMXBean counts and times, the pause durations read off the
//! GC log's pause lines with a plain regex-free split, and the latencies
//! read off the access log (`$request_time $msec`) with nearest-rank
//! percentiles.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::common;

use crate::common::MxBeans;

const LOG_FORMAT: &str = "$request_time $msec";

fn run_dir(name: &str) -> PathBuf {
    common::root().join("tests/fixtures/compare").join(name)
}

/// What the fixture itself says about one run.
struct Truth {
    pause_count: u64,
    pause_time_ms: u64,
    /// Every pause duration (s), from the lines ending in `NNN.NNNms`.
    pauses: Vec<f64>,
    /// Every pause's end (the time decoration of its line) and duration (s).
    timed: Vec<(DateTime<Utc>, f64)>,
    /// Every request's latency (s), sorted.
    latencies: Vec<f64>,
}

fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn truth(name: &str) -> Truth {
    let dir = run_dir(name);
    let beans = MxBeans::read(&dir.join("mxbeans.json"));
    let gc_log = std::fs::read_to_string(dir.join("gc.log")).unwrap();
    let timed: Vec<(DateTime<Utc>, f64)> = gc_log
        .lines()
        .filter(|l| {
            // `[time][uptime][info][gc   ] GC(N) Pause ... 12.345ms`: the
            // line of the `gc` tag alone carries a pause's duration.
            let tags = l.split("][").nth(3).and_then(|t| t.split(']').next());
            tags.map(str::trim) == Some("gc") && l.contains(" Pause ")
        })
        .filter_map(|l| {
            let ms = l
                .rsplit(' ')
                .next()?
                .strip_suffix("ms")?
                .parse::<f64>()
                .ok()?;
            let time = DateTime::parse_from_str(l.get(1..29)?, "%Y-%m-%dT%H:%M:%S%.3f%z").ok()?;
            Some((time.with_timezone(&Utc), ms / 1000.0))
        })
        .collect();
    let mut pauses: Vec<f64> = timed.iter().map(|(_, s)| *s).collect();
    pauses.sort_by(f64::total_cmp);
    let access = std::fs::read_to_string(dir.join("access.log")).unwrap();
    let mut latencies: Vec<f64> = access
        .lines()
        .map(|l| l.split(' ').next().unwrap().parse::<f64>().unwrap())
        .collect();
    latencies.sort_by(f64::total_cmp);
    Truth {
        pause_count: beans.total_count(),
        pause_time_ms: beans.collectors.iter().map(|b| b.time_ms).sum(),
        pauses,
        timed,
        latencies,
    }
}

impl Truth {
    /// The longest pause of each minute the run covers whole after its
    /// first `skip`: all minutes from the one the warm-up ends in, but for
    /// that first and the run's last one, which it covers only in part.
    fn whole_minute_maxima(&self, skip: chrono::Duration) -> Vec<f64> {
        let cutoff = self.timed[0].0 + skip;
        let first_whole = cutoff.timestamp().div_euclid(60) + 1;
        let mut maxima: BTreeMap<i64, f64> = BTreeMap::new();
        for (time, seconds) in &self.timed {
            let minute = time.timestamp().div_euclid(60);
            if minute >= first_whole {
                let max = maxima.entry(minute).or_default();
                *max = max.max(*seconds);
            }
        }
        let mut maxima: Vec<f64> = maxima.into_values().collect();
        maxima.pop();
        maxima
    }

    /// The truth for a summary path, where the fixture gives one.
    fn figure(&self, metric: &str) -> Option<f64> {
        let pause = |q| nearest_rank(&self.pauses, q);
        let latency = |q| nearest_rank(&self.latencies, q);
        Some(match metric {
            "pauses.count" => self.pause_count as f64,
            "pauses.total_seconds" => self.pause_time_ms as f64 / 1000.0,
            "pauses.p50_seconds" => pause(0.5),
            "pauses.p99_seconds" => pause(0.99),
            "pauses.p999_seconds" => pause(0.999),
            "pauses.max_seconds" => *self.pauses.last()?,
            "latency.p50_seconds" => latency(0.5),
            "latency.p90_seconds" => latency(0.9),
            "latency.p99_seconds" => latency(0.99),
            "latency.p999_seconds" => latency(0.999),
            "latency.max_seconds" => *self.latencies.last()?,
            _ => return None,
        })
    }
}

fn compare(extra: &[&str]) -> Output {
    compare_dirs(&run_dir("baseline"), &run_dir("candidate"), extra)
}

fn compare_dirs(base: &std::path::Path, cand: &std::path::Path, extra: &[&str]) -> Output {
    let mut command = Command::new(common::PAUSEWATCH);
    command.arg("compare");
    for (flag, path) in [
        ("--baseline", base.join("gc.log")),
        ("--candidate", cand.join("gc.log")),
        ("--baseline-latency", base.join("access.log")),
        ("--candidate-latency", cand.join("access.log")),
    ] {
        command.arg(flag).arg(path);
    }
    command
        .args(["--log-format", LOG_FORMAT, "--slo", "50ms"])
        .args(extra)
        .output()
        .unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn every_change_goes_the_way_the_runs_show() {
    let output = compare(&["--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "no gate, no failure");
    let result = json(&output);
    let keys: Vec<&String> = result.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["baseline", "candidate", "changes", "gates"]);
    let (base_truth, cand_truth) = (truth("baseline"), truth("candidate"));
    for (run, truth) in [("baseline", &base_truth), ("candidate", &cand_truth)] {
        assert_eq!(
            truth.pauses.len() as u64,
            truth.pause_count,
            "{run}: pause lines"
        );
    }
    let (base, cand) = (&base_truth, &cand_truth);
    // The summaries count what the JVMs counted.
    for (run, truth) in [("baseline", base), ("candidate", cand)] {
        let pauses = &result[run]["pauses"];
        assert_eq!(pauses["count"].as_u64(), Some(truth.pause_count), "{run}");
        let total_ms = pauses["total_seconds"].as_f64().unwrap() * 1000.0;
        let allowed = (truth.pause_time_ms as f64 * 0.01).max(truth.pause_count as f64);
        assert!(
            (total_ms - truth.pause_time_ms as f64).abs() <= allowed,
            "{run}: {total_ms} ms paused, the MXBeans say {}",
            truth.pause_time_ms
        );
        assert_eq!(
            result[run]["latency"]["count"].as_u64(),
            Some(truth.latencies.len() as u64)
        );
    }
    let changes = result["changes"].as_array().unwrap();
    let mut checked = 0;
    for change in changes {
        let keys: Vec<&String> = change.as_object().unwrap().keys().collect();
        // (serde_json's objects list their keys sorted)
        for key in ["baseline", "candidate", "metric", "ratio", "significant"] {
            assert!(keys.contains(&&key.to_string()), "{key} missing: {change}");
        }
        let metric = change["metric"].as_str().unwrap();
        let (Some(b), Some(c)) = (base.figure(metric), cand.figure(metric)) else {
            continue;
        };
        // Latency quantiles come from a histogram of 3 significant digits
        // and the access log has whole ms: only a clear change has a direction.
        if (c - b).abs() <= 0.05 * b.max(c) + 0.002 {
            continue;
        }
        let (reported_b, reported_c) = (
            change["baseline"].as_f64().unwrap(),
            change["candidate"].as_f64().unwrap(),
        );
        assert_eq!(
            reported_c > reported_b,
            c > b,
            "{metric}: the runs show {b} -> {c}, compare says {reported_b} -> {reported_c}"
        );
        assert_eq!(change["ratio"].as_f64().unwrap() > 1.0, c > b, "{metric}");
        checked += 1;
    }
    assert!(checked >= 6, "only {checked} changes had a clear truth");
}

/// The change the story is about: after the warm-up, in every whole minute
/// after the cache grew the longest pause is longer than in any whole
/// minute before. With four minutes a side, that ordering alone has a
/// probability of 2/C(8,4) = 0.029 under no change: significant.
#[test]
fn the_longer_minute_maxima_are_significant() {
    let skip = chrono::Duration::minutes(2);
    let result = json(&compare(&["--format", "json", "--skip-first", "2m"]));
    let before = truth("baseline").whole_minute_maxima(skip);
    let after = truth("candidate").whole_minute_maxima(skip);
    assert!(
        before.len() >= 4 && after.len() >= 4,
        "{before:?} {after:?}"
    );
    let separated =
        after.iter().copied().fold(f64::MAX, f64::min) > before.iter().copied().fold(0.0, f64::max);
    assert!(
        separated,
        "minute maxima before {before:?}, after {after:?}"
    );
    let changes = result["changes"].as_array().unwrap();
    let minute_max = changes
        .iter()
        .find(|c| c["metric"] == "minute_max_pause.p50_seconds")
        .unwrap();
    assert!(minute_max["candidate"].as_f64() > minute_max["baseline"].as_f64());
    assert_eq!(minute_max["significant"], true, "{minute_max}");
}

/// The first `seconds` of a run (its GC log by line time, its access log by
/// request end), written to `into`: the 5.5-minute runs.
fn first_seconds(name: &str, seconds: f64, into: &std::path::Path) -> Truth {
    let dir = run_dir(name);
    let start = truth(name).timed[0].0 - chrono::Duration::milliseconds(500);
    let end = start + chrono::Duration::milliseconds((seconds * 1000.0) as i64);
    let gc_log: String = std::fs::read_to_string(dir.join("gc.log"))
        .unwrap()
        .lines()
        .filter(|l| {
            l.get(1..29)
                .and_then(|t| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.3f%z").ok())
                .is_none_or(|t| t < end)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let access: String = std::fs::read_to_string(dir.join("access.log"))
        .unwrap()
        .lines()
        .filter(|l| l.split(' ').nth(1).unwrap().parse::<f64>().unwrap() < end.timestamp() as f64)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::create_dir_all(into).unwrap();
    std::fs::write(into.join("gc.log"), &gc_log).unwrap();
    std::fs::write(into.join("access.log"), access).unwrap();
    let mut timed = truth(name).timed;
    timed.retain(|(t, _)| *t < end);
    Truth {
        pauses: timed.iter().map(|(_, s)| *s).collect(),
        timed,
        ..truth(name)
    }
}

/// The p-value of `quantile(b) − quantile(a)` by a permutation test, in
/// the test's own code: the run labels shuffled by a Lehmer generator.
fn permutation_p(a: &[f64], b: &[f64], quantile: f64) -> f64 {
    let stat = |x: &[f64], y: &[f64]| {
        let q = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            nearest_rank(&v, quantile)
        };
        q(y) - q(x)
    };
    let observed = stat(a, b).abs();
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let mut state: u64 = 2026;
    let (rounds, mut extreme) = (2000, 0);
    for _ in 0..rounds {
        for i in (1..pooled.len()).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            pooled.swap(i, (state >> 33) as usize % (i + 1));
        }
        let (x, y) = pooled.split_at(a.len());
        extreme += (stat(x, y).abs() >= observed) as usize;
    }
    (extreme + 1) as f64 / (rounds + 1) as f64
}

/// The case: runs of 5.5 minutes, 2 of them skipped, leave 3 whole
/// minutes a side, with which no per-minute test can be significant. The
/// pause tail is tested on the pauses themselves, in agreement with a
/// permutation test over the same pauses; the per-minute figures say they
/// are too short to test and how long a run must be; nothing reads "no
/// significant change".
#[test]
fn short_runs_test_the_tail_on_the_pauses() {
    let temp = tempfile::tempdir().unwrap();
    let skip = chrono::Duration::minutes(2);
    let (base_dir, cand_dir) = (temp.path().join("baseline"), temp.path().join("candidate"));
    let base = first_seconds("baseline", 330.0, &base_dir);
    let cand = first_seconds("candidate", 330.0, &cand_dir);
    let after = |t: &Truth| -> Vec<f64> {
        let cutoff = t.timed[0].0 + skip;
        t.timed
            .iter()
            .filter(|(e, _)| *e >= cutoff)
            .map(|(_, s)| *s)
            .collect()
    };
    let (base_pauses, cand_pauses) = (after(&base), after(&cand));
    let minutes = base.whole_minute_maxima(skip).len();
    assert!((2..=3).contains(&minutes), "{minutes} whole minutes");
    let output = compare_dirs(
        &base_dir,
        &cand_dir,
        &["--format", "json", "--skip-first", "2m"],
    );
    let result = json(&output);
    let change = |metric: &str| {
        result["changes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["metric"] == metric)
            .unwrap()
            .clone()
    };
    for (metric, quantile) in [("pauses.p50_seconds", 0.5), ("pauses.max_seconds", 1.0)] {
        let permutation = permutation_p(&base_pauses, &cand_pauses, quantile);
        let c = change(metric);
        assert_eq!(c["test"], "bootstrap");
        assert_eq!(
            c["significant"].as_bool().unwrap(),
            permutation < 0.05,
            "{metric}: permutation p {permutation}, compare {c}"
        );
        let [low, high] = [0, 1].map(|i| c["interval"][i].as_f64().unwrap());
        let ratio = c["ratio"].as_f64().unwrap();
        assert!(low <= ratio && ratio <= high, "{c}");
    }
    assert!(permutation_p(&base_pauses, &cand_pauses, 0.5) < 0.05);
    let minute = change("minute_max_pause.p50_seconds");
    assert_eq!(
        (minute["test"].as_str(), minute["testable"].as_bool()),
        (Some("per_minute"), Some(false))
    );
    let text = compare_dirs(&base_dir, &cand_dir, &["--skip-first", "2m"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(!text.contains("no significant change"), "{text}");
    assert!(
        text.contains("pause length: worse in the candidate (largest: pauses.p50_seconds"),
        "{text}"
    );
    assert!(text.contains("a test needs at least 4 in each"), "{text}");
}

#[test]
fn gates_fail_and_pass_on_the_runs_figures() {
    let (base, cand) = (truth("baseline"), truth("candidate"));
    let max_b = base.figure("pauses.max_seconds").unwrap();
    let max_c = cand.figure("pauses.max_seconds").unwrap();
    // An absolute limit between the two runs' longest pauses, and a
    // relative one the candidate's change stays under.
    let limit_ms = (max_b.min(max_c) + max_b.max(max_c)) / 2.0 * 1000.0;
    let absolute = format!("pauses.max_seconds > {limit_ms:.0}ms");
    let expected_absolute = max_c > max_b;
    let count_change = cand.pause_count as f64 / base.pause_count as f64 - 1.0;
    let relative = format!("pauses.count > {:+.0}%", count_change * 100.0 + 20.0);
    let output = compare(&[
        "--format",
        "json",
        "--fail-if",
        &absolute,
        "--fail-if",
        &relative,
    ]);
    let result = json(&output);
    let gates = result["gates"].as_array().unwrap();
    assert_eq!(gates[0]["expr"], absolute.as_str());
    assert_eq!(gates[0]["failed"], expected_absolute, "{}", gates[0]);
    assert_eq!(gates[1]["expr"], relative.as_str());
    assert_eq!(gates[1]["failed"], false, "{}", gates[1]);
    assert_eq!(gates[1]["baseline"].as_f64(), Some(base.pause_count as f64));
    assert_eq!(output.status.code(), Some(expected_absolute as i32));
    // The text output names the failed gate.
    let output = compare(&["--fail-if", &absolute]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        text.contains(&format!("gate FAILED: {absolute}")),
        expected_absolute,
        "{text}"
    );
    // A gate that must pass: the candidate's longest pause is under twice itself.
    let passing = format!("pauses.max_seconds > {:.0}ms", max_c * 2000.0);
    assert_eq!(compare(&["--fail-if", &passing]).status.code(), Some(0));
    // A gate that must fail whichever way the runs went: the candidate's
    // p99.9 is above half of itself.
    let p999 = cand.figure("latency.p999_seconds").unwrap();
    let failing = format!("latency.p999_seconds > {:.0}ms", p999 * 500.0);
    assert_eq!(compare(&["--fail-if", &failing]).status.code(), Some(1));
}

#[test]
fn text_gives_the_verdict_per_aspect() {
    let output = compare(&["--skip-first", "2m"]);
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    for aspect in [
        "pauses and GC time: ",
        "pause length: ",
        "request latency: ",
    ] {
        assert!(text.contains(aspect), "{text}");
    }
    assert!(
        text.contains("pause length: worse in the candidate"),
        "{text}"
    );
}

#[test]
fn the_warm_up_is_left_out() {
    let all = json(&compare(&["--format", "json"]));
    let later = json(&compare(&["--format", "json", "--skip-first", "2m"]));
    for run in ["baseline", "candidate"] {
        let count = |v: &Value| v[run]["pauses"]["count"].as_u64().unwrap();
        let minutes = |v: &Value| v[run]["minutes"].as_u64().unwrap();
        let requests = |v: &Value| v[run]["latency"]["count"].as_u64().unwrap();
        assert!(count(&later) < count(&all), "{run}");
        assert!(minutes(&later) < minutes(&all) && minutes(&later) + 3 >= minutes(&all));
        // 50 requests a second: two minutes are about 6000 of them.
        let left_out = requests(&all) - requests(&later);
        assert!((5800..=6200).contains(&left_out), "{run}: {left_out}");
    }
}

#[test]
fn bad_input_exits_2() {
    for args in [
        &["--fail-if", "pauses.max_seconds = 5ms"][..],
        &["--fail-if", "pauses.nothing > 5ms"],
        &["--fail-if", "pauses.max_seconds > soon"],
    ] {
        let output = compare(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(!output.stderr.is_empty());
    }
    let output = Command::new(common::PAUSEWATCH)
        .args([
            "compare",
            "--baseline",
            "/nonexistent/gc.log",
            "--candidate",
        ])
        .arg(run_dir("candidate").join("gc.log"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("/nonexistent/gc.log"));
}

/// A dated Go trace: `cycles` cycles 10 s apart on 4 Ps, each using
/// `mark_ms` of assist and of background marking and 0.1 ms stopped.
fn go_trace(dir: &std::path::Path, name: &str, cycles: u32, mark_ms: f64) -> PathBuf {
    let mut text = String::new();
    for n in 1..=cycles {
        let at = 10 * n;
        text.push_str(&format!(
            "2026-12-01T06:{:02}:{:02}+0000 host app[1]: gc {n} @{at}.000s 1%: 0.025+2.0+0.025 ms clock, 0.1+{mark_ms}/{mark_ms}/1.0+0.1 ms cpu, 8->9->4 MB, 9 MB goal, 0 MB stacks, 0 MB globals, 4 P\n",
            at / 60,
            at % 60
        ));
    }
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// The collector's CPU of Go runs: its share of the 4 CPUs over the run
/// (each cycle's CPU over 10 s of 4 CPUs, less the idle marking), shown as
/// "GC CPU B% -> C%" and gated by `--fail-if gc_cpu.available_ratio`.
#[test]
fn go_gc_cpu_is_compared_and_gated() {
    let dir = tempfile::tempdir().unwrap();
    let base = go_trace(dir.path(), "base.log", 40, 40.0);
    let cand = go_trace(dir.path(), "cand.log", 40, 160.0);
    let run = |extra: &[&str]| {
        Command::new(common::PAUSEWATCH)
            .arg("compare")
            .arg("--baseline")
            .arg(&base)
            .arg("--candidate")
            .arg(&cand)
            .args(extra)
            .output()
            .unwrap()
    };
    let report = json(&run(&["--format", "json"]));
    for (run, mark_ms) in [("baseline", 40.0), ("candidate", 160.0)] {
        let expected = (2.0 * mark_ms + 0.2) / 1000.0 / (10.0 * 4.0);
        let share = report[run]["gc_cpu"]["available_ratio"].as_f64().unwrap();
        assert!(
            (share - expected).abs() <= 0.05 * expected,
            "{run}: {share} vs {expected}"
        );
    }
    let text = String::from_utf8(run(&[]).stdout).unwrap();
    // 80.2 ms and 320.2 ms of every 40 CPU-seconds.
    assert!(
        text.contains("GC CPU 0.2% -> 0.8% of the CPUs available"),
        "{text}"
    );
    let gated = run(&["--fail-if", "gc_cpu.available_ratio > +50%"]);
    assert_eq!(
        gated.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&gated.stdout)
    );
    let passing = run(&["--fail-if", "gc_cpu.available_ratio > 0.05"]);
    assert_eq!(passing.status.code(), Some(0));
}
