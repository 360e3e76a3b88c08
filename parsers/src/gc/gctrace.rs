//! The Go runtime's `GODEBUG=gctrace=1` lines, written to stderr once per
//! collection cycle (Go 1.9 to 1.23 shapes):
//!
//! ```text
//! gc 7 @0.208s 0%: 0.05+16+0.12 ms clock, 0.2+5.0/15/2.9+0.5 ms cpu, 11->11->7 MB, 12 MB goal, 0 MB stacks, 0 MB globals, 4 P (forced)
//! ```
//!
//! `@` is when the cycle's sweep termination began, in seconds since the
//! program started; the three clock figures are sweep termination (stop the
//! world), concurrent mark and scan, and mark termination (stop the world);
//! the heap figures are at the start, at the end, and marked live. A line may
//! carry a prefix a journal or log shipper put in front of it (`journalctl
//! -o short-iso`, RFC 3339, Kubernetes' CRI `stderr F`), which dates it.
//!
//! Pure and total: anything that is not such a line is `None`, a line that
//! starts like a cycle but does not parse is [`GoLine::Malformed`].

use chrono::{DateTime, Utc};

use super::envelope::{Envelope, Message};
use super::state::{GcLogParser, Grammar, Line, Outcome, UnparsedKind};
use crate::events::*;

/// No Go cycle phase lasts a day: a longer figure is a garbled number.
const MAX_PHASE_MS: f64 = 24.0 * 3600.0 * 1000.0;

/// One collection cycle's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GoCycle {
    /// The runtime's `NumGC` after this cycle.
    pub number: u64,
    /// Start of sweep termination, seconds since the program started.
    pub start_s: f64,
    pub sweep_termination_ms: f64,
    pub concurrent_mark_ms: f64,
    pub mark_termination_ms: f64,
    pub heap_start_bytes: u64,
    pub heap_end_bytes: u64,
    pub live_bytes: u64,
    pub goal_bytes: u64,
    pub processors: u32,
    /// `A+B/C/D+E ms cpu`: sweep termination, assist, background, idle,
    /// mark termination, in milliseconds.
    pub cpu_ms: [f64; 5],
    /// `runtime.GC()` or `debug.FreeOSMemory()` asked for it.
    pub forced: bool,
}

/// What a Go runtime line is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum GoLine {
    Cycle(GoCycle),
    /// `gc N @...` whose fields do not parse.
    Malformed,
    /// Other runtime tracing that carries no pause: `scvg` (scavenger, up to
    /// Go 1.12), `scav` (`scavtrace`), `GC forced` (the two-minute periodic
    /// cycle announcing itself), `pacer:` (`gcpacertrace`).
    Other,
}

/// A Go runtime line and the wall-clock time a prefix gave it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Traced {
    pub wall: Option<DateTime<Utc>>,
    pub line: GoLine,
}

impl GoCycle {
    /// Seconds since the program started at the end of mark termination,
    /// when the runtime prints the line.
    pub fn end_s(&self) -> f64 {
        self.start_s + self.total_clock_ms() / 1000.0
    }

    fn cpu(&self) -> CycleCpu {
        let [sweep_termination, assist, background, idle, mark_termination] =
            self.cpu_ms.map(|ms| ms / 1000.0);
        CycleCpu {
            stop_the_world_s: sweep_termination + mark_termination,
            assist_s: assist,
            background_s: background,
            idle_s: idle,
            processors: self.processors,
        }
    }

    fn total_clock_ms(&self) -> f64 {
        self.sweep_termination_ms + self.concurrent_mark_ms + self.mark_termination_ms
    }

    /// The cycle's events, given the time its line was printed (`end`): the
    /// concurrent mark, one pause whose duration is both stop-the-world
    /// phases (what `runtime.MemStats.PauseNs` records for the cycle), and
    /// the whole cycle with its heap figures. The pause is placed at the end
    /// of the cycle: mark termination, usually the longer phase, ends there.
    pub fn events(&self, end: LogTime) -> [GcEvent; 3] {
        let pause_s = (self.sweep_termination_ms + self.mark_termination_ms) / 1000.0;
        let cause = self.forced.then(|| Name::from("forced"));
        let phase = ConcurrentPhase {
            gc_id: Some(self.number),
            collector: Collector::Go,
            name: "Concurrent Mark".into(),
            generation: None,
            end: end.earlier_by(self.mark_termination_ms / 1000.0),
            duration_s: self.concurrent_mark_ms / 1000.0,
        };
        let pause = Pause {
            gc_id: Some(self.number),
            collector: Collector::Go,
            name: "Pause GC".into(),
            cause: cause.clone(),
            generation: None,
            start: end.earlier_by(pause_s),
            end,
            duration_s: pause_s,
            explicit: self.forced,
            ..Pause::default()
        };
        // After the cycle only the marked heap is live: the rest is swept
        // lazily, so the marked figure is the heap "after" the collection.
        let cycle = Cycle {
            gc_id: Some(self.number),
            collector: Collector::Go,
            name: "GC Cycle".into(),
            cause,
            end,
            duration_s: Some(self.total_clock_ms() / 1000.0),
            heap: Some(HeapTransition {
                before_bytes: self.heap_start_bytes,
                after_bytes: self.live_bytes,
                capacity_bytes: None,
            }),
            cpu: Some(self.cpu()),
        };
        [
            GcEvent::ConcurrentPhase(phase),
            GcEvent::Pause(pause),
            GcEvent::Cycle(cycle),
        ]
    }
}

/// The Go runtime line in `text`, with or without a journal, RFC 3339 or
/// CRI prefix; `None` for any other line. Cheap for unified-logging lines,
/// which start with `[`.
pub(crate) fn recognise(text: &str) -> Option<Traced> {
    let first = *text.as_bytes().first()?;
    if first == b'[' {
        return None;
    }
    if let Some(line) = runtime_line(text) {
        return Some(Traced { wall: None, line });
    }
    // A prefix time is RFC 3339 (`2024-05-01T...`): checked before the
    // line is split, since JDK 8 lines (`12.345: [GC ...`) also start with
    // a digit and were a twentieth of their own parse here.
    if !first.is_ascii_digit() || text.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    let (stamp, rest) = text.split_once(' ')?;
    let wall = prefix_time(stamp)?;
    let message = strip_shipper_fields(rest)?;
    runtime_line(message).map(|line| Traced {
        wall: Some(wall),
        line,
    })
}

/// What follows a timestamp: the message itself, a CRI stream and tag
/// (`stderr F msg`), or a syslog host and identifier (`host app[123]: msg`).
fn strip_shipper_fields(rest: &str) -> Option<&str> {
    for stream in ["stderr ", "stdout "] {
        if let Some(tagged) = rest.strip_prefix(stream) {
            return tagged.strip_prefix("F ").or(tagged.strip_prefix("P "));
        }
    }
    if runtime_line(rest).is_some() {
        return Some(rest);
    }
    rest.split_once(": ").map(|(_, message)| message)
}

/// `2026-12-01T05:41:51+0000` (journalctl short-iso), with a fraction
/// (short-iso-precise), or RFC 3339 (`...Z`, `+00:00`).
fn prefix_time(stamp: &str) -> Option<DateTime<Utc>> {
    // JDK 8's `2014-07-24T13:49:45.090+0400:` date stamps end in a colon:
    // they are turned away before any date is parsed.
    if stamp.len() < 20 || stamp.as_bytes()[10] != b'T' || stamp.ends_with(':') {
        return None;
    }
    DateTime::parse_from_rfc3339(stamp)
        .or_else(|_| DateTime::parse_from_str(stamp, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

fn runtime_line(message: &str) -> Option<GoLine> {
    if let Some(rest) = message.strip_prefix("gc ") {
        if rest.as_bytes().first().is_some_and(u8::is_ascii_digit) {
            return Some(cycle(rest).map_or(GoLine::Malformed, GoLine::Cycle));
        }
        return None;
    }
    let other = message.starts_with("scvg")
        || message.starts_with("scav ")
        || message == "GC forced"
        || message.starts_with("pacer: ");
    other.then_some(GoLine::Other)
}

/// `N @Ts P%: a+b+c ms clock, ... ms cpu, h0->h1->h2 MB, G MB goal, [S MB stacks, G MB globals, ]N P[ (forced)]`.
fn cycle(rest: &str) -> Option<GoCycle> {
    let (number, rest) = rest.split_once(" @")?;
    let number = number.parse().ok()?;
    let (start_s, rest) = rest.split_once("s ")?;
    let start_s = decimal(start_s)?;
    let (utilisation, rest) = rest.split_once("%: ")?;
    utilisation.parse::<u32>().ok()?;
    let (clock, rest) = rest.split_once(" ms clock, ")?;
    let [sweep_termination_ms, concurrent_mark_ms, mark_termination_ms] =
        exactly_three(clock.split('+'), phase_ms)?;
    let (cpu, rest) = rest.split_once(" ms cpu, ")?;
    let (sweep_termination, rest_cpu) = cpu.split_once('+')?;
    let (marking, mark_termination) = rest_cpu.split_once('+')?;
    let [assist, background, idle] = exactly_three(marking.split('/'), phase_ms)?;
    let cpu_ms = [
        phase_ms(sweep_termination)?,
        assist,
        background,
        idle,
        phase_ms(mark_termination)?,
    ];
    let (rest, forced) = match rest.strip_suffix(" (forced)") {
        Some(rest) => (rest, true),
        None => (rest, false),
    };
    let mut fields = rest.split(", ");
    let heaps = fields.next()?.strip_suffix(" MB")?;
    let [heap_start_bytes, heap_end_bytes, live_bytes] =
        exactly_three(heaps.split("->"), megabytes)?;
    let mut goal_bytes = None;
    let mut processors = None;
    for field in fields {
        if let Some(count) = field.strip_suffix(" P") {
            processors = Some(count.parse().ok()?);
        } else if let Some(goal) = field.strip_suffix(" MB goal") {
            goal_bytes = Some(megabytes(goal)?);
        } else {
            // `MB stacks`, `MB globals` (Go 1.18+), or a later addition.
            let (size, _what) = field.split_once(" MB ")?;
            megabytes(size)?;
        }
    }
    Some(GoCycle {
        number,
        start_s,
        sweep_termination_ms,
        concurrent_mark_ms,
        mark_termination_ms,
        heap_start_bytes,
        heap_end_bytes,
        live_bytes,
        goal_bytes: goal_bytes?,
        processors: processors?,
        cpu_ms,
        forced,
    })
}

/// The three figures of `parts`, each read by `read`; `None` unless there
/// are exactly three and each reads.
fn exactly_three<'a, T>(
    mut parts: impl Iterator<Item = &'a str>,
    read: impl Fn(&str) -> Option<T>,
) -> Option<[T; 3]> {
    let figures = [
        read(parts.next()?)?,
        read(parts.next()?)?,
        read(parts.next()?)?,
    ];
    parts.next().is_none().then_some(figures)
}

/// Digits with at most one `.`: what the runtime prints (`parse::<f64>`
/// alone would take `inf`, `1e9` and `-0`).
fn decimal(text: &str) -> Option<f64> {
    let well_formed = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && text.bytes().filter(|&b| b == b'.').count() <= 1;
    well_formed.then(|| text.parse().ok()).flatten()
}

fn phase_ms(text: &str) -> Option<f64> {
    decimal(text).filter(|ms| *ms <= MAX_PHASE_MS)
}

/// Whole mebibytes (the runtime prints `bytes >> 20`) as bytes.
fn megabytes(text: &str) -> Option<u64> {
    text.parse::<u64>().ok()?.checked_mul(1 << 20)
}

/// The Go runtime's `GODEBUG=gctrace=1` output.
pub(super) struct Gctrace;

impl Grammar for Gctrace {
    fn read(&self, p: &mut GcLogParser, line: &Line, out: &mut Vec<GcEvent>) -> Option<Outcome> {
        let traced = recognise(line.text)?;
        Some(p.go_line(traced, out))
    }
}

impl GcLogParser {
    /// A Go runtime line: a cycle is dated by its `@` uptime (and a prefix's
    /// wall clock) and goes through the same restart and anchoring rules as
    /// a unified-logging line, its number standing for the `GC(N)` id.
    fn go_line(&mut self, traced: Traced, out: &mut Vec<GcEvent>) -> Outcome {
        self.flush(out);
        let cycle = match traced.line {
            GoLine::Cycle(cycle) => cycle,
            GoLine::Other => return Outcome::Ignored,
            GoLine::Malformed => return Outcome::Unparsed(UnparsedKind::MalformedEvent),
        };
        let env = Envelope {
            wall_time: traced.wall,
            uptime_s: Some(cycle.end_s()),
            decorated: true,
            ..Envelope::default()
        };
        let message = Message {
            gc_id: Some(cycle.number),
            zgc_generation: None,
            body: "",
        };
        self.check_restart(&env, &message, out);
        self.infer_collector(Some(Collector::Go));
        self.run.saw_collection = true;
        let end = self.time_of(&env);
        for event in cycle.events(end) {
            self.emit(event, out);
        }
        Outcome::Used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle_of(text: &str) -> GoCycle {
        match recognise(text) {
            Some(Traced {
                line: GoLine::Cycle(cycle),
                ..
            }) => cycle,
            other => panic!("{text}: {other:?}"),
        }
    }

    /// Go 1.9, the first line of GCViewer's go1.9.txt.
    #[test]
    fn a_go_1_9_line() {
        let cycle = cycle_of(
            "gc 1 @0.058s 0%: 0+1.9+0 ms clock, 0+0.94/1.9/2.9+0 ms cpu, 4->4->1 MB, 5 MB goal, 4 P",
        );
        assert_eq!(cycle.number, 1);
        assert_eq!(cycle.start_s, 0.058);
        assert_eq!(
            (
                cycle.sweep_termination_ms,
                cycle.concurrent_mark_ms,
                cycle.mark_termination_ms
            ),
            (0.0, 1.9, 0.0)
        );
        assert_eq!(
            (
                cycle.heap_start_bytes,
                cycle.heap_end_bytes,
                cycle.live_bytes,
                cycle.goal_bytes
            ),
            (4 << 20, 4 << 20, 1 << 20, 5 << 20)
        );
        assert_eq!((cycle.processors, cycle.forced), (4, false));
    }

    /// Go 1.19 (golang/go#54649) and a forced cycle (FORMATS.md §10).
    #[test]
    fn go_1_18_fields_and_forced() {
        let cycle = cycle_of("gc 1 @0.016s 19%: 0.053+36+0.016 ms clock, 0.21+36/4.9/39+0.066 ms cpu, 3->3->3 MB, 4 MB goal, 66 MB stacks, 0 MB globals, 4 P");
        assert_eq!(
            cycle.sweep_termination_ms + cycle.mark_termination_ms,
            0.069
        );
        assert_eq!(cycle.goal_bytes, 4 << 20);
        let cpu = cycle.cpu();
        assert!((cpu.stop_the_world_s - 0.000276).abs() < 1e-12);
        assert_eq!(cycle.cpu_ms[1..4], [36.0, 4.9, 39.0]);
        assert_eq!(cpu.idle_s, 0.039);
        let forced = cycle_of("gc 9430 @100.008s 3%: 0.079+0.85+0.013 ms clock, 1.2+0/1.7/3.0+0.21 ms cpu, 1->1->1 MB, 2 MB goal, 16 P (forced)");
        assert!(forced.forced);
        assert_eq!((forced.number, forced.processors), (9430, 16));
    }

    #[test]
    fn prefixes_date_the_line() {
        let line = "gc 3 @1.500s 2%: 0.010+2.0+0.020 ms clock, 0.04+0/1/2+0.08 ms cpu, 4->5->2 MB, 5 MB goal, 0 MB stacks, 0 MB globals, 2 P";
        for (prefix, wall) in [
            (
                "2026-12-01T05:41:51+0000 host app[123]: ",
                "2026-12-01T05:41:51Z",
            ),
            (
                "2026-12-01T05:41:51.250000+0100 host app[123]: ",
                "2026-12-01T04:41:51.250Z",
            ),
            (
                "2026-12-01T05:41:51.123456789Z stderr F ",
                "2026-12-01T05:41:51.123456789Z",
            ),
            ("2026-12-01T05:41:51.5+00:00 ", "2026-12-01T05:41:51.5Z"),
        ] {
            let traced = recognise(&format!("{prefix}{line}")).expect(prefix);
            assert_eq!(traced.wall, Some(wall.parse().unwrap()), "{prefix}");
            assert!(matches!(traced.line, GoLine::Cycle(_)), "{prefix}");
        }
    }

    #[test]
    fn other_runtime_lines_and_foreign_lines() {
        for line in [
            "scvg0: inuse: 49, idle: 3, sys: 52, released: 0, consumed: 52 (MB)",
            "scvg: 0 MB released",
            "GC forced",
            "2026-12-01T05:41:51+0000 host app[1]: GC forced",
        ] {
            assert_eq!(
                recognise(line).map(|t| t.line),
                Some(GoLine::Other),
                "{line}"
            );
        }
        for line in [
            "[0.2s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 7.033ms",
            "2014-07-24T13:49:45.090+0400: 0.231: [GC (Allocation Failure) 1024K->500K(2048K), 0.001 secs]",
            "gc starting...",
            "2026-12-01T05:41:51+0000 host app[1]: listening on :8080",
            "",
        ] {
            assert_eq!(recognise(line), None, "{line}");
        }
    }

    /// GCViewer's TestDataReaderGo drops the line whose heap figure
    /// overflows; so do we, counting it.
    #[test]
    fn garbled_cycles_are_malformed() {
        for line in [
            "gc 2 @997.597s 3%: 68+0.36+0.51 ms clock, 205+0/16/89+1.5 ms cpu, 11111111111111111111111111111111111->84->42 MB, 86 MB goal, 3 P",
            "gc 2 @997.597s 3%: 68+0.36 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P",
            "gc 2 @997.597s 3%: inf+0.36+1 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P",
            "gc 2 @997.597s 3%: 99999999999+0.36+1 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P",
            "gc 2 @997.597s 3%: 1+0.36+1 ms clock, 205+0/16/89+1.5 ms cpu, 84->84->42 MB, 3 P",
            "gc 2 @997.597s 3%: 1+0.36+1 ms clock, 205+0/16+1.5 ms cpu, 84->84->42 MB, 86 MB goal, 3 P",
            "gc 2 @997.597s",
            "gc 17592186044416 @1s 1%: 1+1+1 ms clock, 1+1/1/1+1 ms cpu, 17592186044416->1->1 MB, 1 MB goal, 1 P",
        ] {
            assert_eq!(recognise(line).map(|t| t.line), Some(GoLine::Malformed), "{line}");
        }
    }
}
