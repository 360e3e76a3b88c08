//! The HotSpot unified logging grammar (`-Xlog:gc*,safepoint`, JDK 9 and
//! later): the events of one collection are assembled by `GC(N)` id across
//! interleaved lines. The front door in `gc/mod.rs` owns the state and the
//! run's clock; this module holds what only unified lines mean.

use super::envelope::{split_message, Envelope, Message};
use super::grammar::{self, collector_from_pool, collector_from_using, plausible, Groups};
use super::legacy::is_legacy_line;
use super::state::{
    GcLogParser, Grammar, Line, OpenCollection, Outcome, SafepointBegin, Understood, UnparsedKind,
};
use crate::events::*;

/// At most this many collections are tracked as open at once; the oldest ids
/// are dropped first. Keeps memory bounded on any input.
pub(super) const MAX_OPEN_COLLECTIONS: usize = 128;

/// At most this many pool lines are kept per collection (HotSpot writes two
/// to five); more means a garbled log, and memory must stay bounded.
pub(super) const MAX_POOLS_PER_COLLECTION: usize = 16;

/// Room made for a collection's pools at its first.
const POOLS_RESERVED: usize = 8;

/// Parenthesised groups that qualify a pause rather than name its cause.
pub(super) const QUALIFIERS: &[&str] = &[
    "Normal",
    "Concurrent Start",
    "Prepare Mixed",
    "Mixed",
    "Young",
    "Old",
    "Global",
    "Major",
    "Minor",
    "process weakrefs",
    "unload classes",
    "update refs",
    "Outside of Cycle",
    "Mark",
    "Evacuation",
    "Update Refs",
    "Update Roots",
    "Roots",
];

/// A size from a preamble line such as `Heap Region Size: 1M`.
pub(super) fn preamble_size(body: &str, prefixes: &[&str]) -> Option<u64> {
    let value = prefixes
        .iter()
        .find_map(|prefix| body.strip_prefix(prefix))?;
    grammar::size_bytes(value.trim())
        .ok()
        .map(|(_, bytes)| bytes)
}

/// Collector implied by a pause's name and groups, for logs without a preamble.
pub(super) fn collector_from_pause(
    name: &str,
    groups: Groups,
    zgc_generation: Option<char>,
) -> Option<Collector> {
    if zgc_generation.is_some() {
        return Some(Collector::ZGenerational);
    }
    match name {
        "Pause Init Mark"
        | "Pause Final Mark"
        | "Pause Init Update Refs"
        | "Pause Final Update Refs"
        | "Pause Final Roots"
        | "Pause Final Evac"
        | "Pause Degenerated GC" => Some(Collector::Shenandoah),
        "Pause Mark Start" | "Pause Mark End" | "Pause Relocate Start" => Some(Collector::Z),
        "Pause Mixed" | "Pause Cleanup" => Some(Collector::G1),
        _ if groups.iter().any(|g| {
            g.starts_with("G1 ")
                || matches!(g, "Normal" | "Concurrent Start" | "Prepare Mixed" | "Mixed")
        }) =>
        {
            Some(Collector::G1)
        }
        "Pause Initial Mark" => Some(Collector::Cms),
        _ => None,
    }
}
impl GcLogParser {
    pub(super) fn add_pool(&mut self, id: u64, pool: PoolTransition) {
        let pools = &mut self.open_collection(id).pools;
        if pools.len() < MAX_POOLS_PER_COLLECTION {
            // A collection names up to eight pools: one allocation, not a
            // vector that grows twice.
            if pools.is_empty() {
                pools.reserve_exact(POOLS_RESERVED);
            }
            pools.push(pool);
        }
    }

    pub(super) fn open_collection(&mut self, id: u64) -> &mut OpenCollection {
        if self.open.len() >= MAX_OPEN_COLLECTIONS && !self.open.contains_key(&id) {
            self.open.pop_first();
        }
        self.open.entry(id).or_default()
    }

    /// Lines without a `GC(N)` id: preamble, safepoints, stalls.
    pub(super) fn plain_line(
        &mut self,
        body: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        // Most such lines are statistics tables: one look at the first
        // byte dismisses them, and picks the one or two prefixes a line
        // that starts with it can have (ZGC's `TLAB: fill thread` and
        // `Rule Minor:` lines went through a dozen comparisons).
        match body.as_bytes().first() {
            Some(b'S') => {
                if let Some(quoted_onward) = body.strip_prefix("Safepoint ") {
                    return self.safepoint_line(quoted_onward, env, out);
                }
            }
            Some(b'E') => {
                if let Some(operation) = body.strip_prefix("Entering safepoint region: ") {
                    self.safepoint_begin = Some(SafepointBegin {
                        operation: operation.into(),
                        time: self.time_of(env),
                    });
                    return Understood::Yes;
                }
            }
            Some(b'T') => {
                if let Some(rest) =
                    body.strip_prefix("Total time for which application threads were stopped: ")
                {
                    return self.stopped_time_line(rest, env, out);
                }
            }
            Some(b'A') => {
                if let Some(rest) = body.strip_prefix("Allocation Stall (") {
                    return self.stall_line(StallKind::Allocation, rest, env, out);
                }
            }
            Some(b'R') => {
                if let Some(rest) = body.strip_prefix("Relocation Stall (") {
                    return self.stall_line(StallKind::Relocation, rest, env, out);
                }
            }
            Some(b'U') => {
                if let Some(collector) = body.strip_prefix("Using ").and_then(collector_from_using)
                {
                    if self.run.collector != Collector::ZGenerational {
                        self.run.collector = collector;
                    }
                    return Understood::Yes;
                }
            }
            Some(b'I') if body.starts_with("Initializing The Z Garbage Collector") => {
                self.infer_collector(Some(Collector::Z));
                return Understood::Yes;
            }
            Some(b'V') => {
                if let Some(version) = body.strip_prefix("Version: ") {
                    // `17.0.15+6-Debian-1deb12u1 (release)`: the build type is not part of the version.
                    let version = version.split(" (").next().unwrap_or(version);
                    self.run.version = Some(version.to_string());
                    return Understood::Yes;
                }
            }
            Some(b'H' | b'M') => {
                if let Some(bytes) = preamble_size(body, &["Heap Max Capacity: ", "Max Capacity: "])
                {
                    self.run.max_heap_bytes = Some(bytes);
                    return Understood::Yes;
                }
                if let Some(bytes) =
                    preamble_size(body, &["Heap Region Size: ", "Heap region size: "])
                {
                    self.run.region_bytes = Some(bytes);
                    return Understood::Yes;
                }
            }
            _ => {}
        }
        Understood::Ignored
    }

    /// JDK 13+: `Safepoint "op", Time since last: N ns, Reaching safepoint: N ns, ... Total: N ns`.
    pub(super) fn safepoint_line(
        &mut self,
        quoted_onward: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((mut rest, operation)) = grammar::quoted(quoted_onward) else {
            return Understood::Malformed;
        };
        let mut safepoint = Safepoint {
            operation: Some(operation.into()),
            start: LogTime::default(),
            end: LogTime::default(),
            reaching_s: None,
            cleanup_s: None,
            at_safepoint_s: None,
            leaving_s: None,
            total_s: f64::NAN,
        };
        while let Some(after) = rest.strip_prefix(", ") {
            let Ok((after_field, (key, value))) = grammar::safepoint_field(after) else {
                // A field without a key, such as the `12 total` tail of JDK 25's `Threads:`.
                rest = after.find(',').map_or("", |comma| &after[comma..]);
                continue;
            };
            rest = after_field;
            let slot = match key {
                "Reaching safepoint" => &mut safepoint.reaching_s,
                "Cleanup" => &mut safepoint.cleanup_s,
                "At safepoint" => &mut safepoint.at_safepoint_s,
                "Leaving safepoint" => &mut safepoint.leaving_s,
                "Total" => {
                    let Ok(("", total)) = grammar::nanos(value) else {
                        return Understood::Malformed;
                    };
                    if !plausible(total) {
                        return Understood::Malformed;
                    }
                    safepoint.total_s = total;
                    continue;
                }
                // "Time since last", "Threads: N runnable" and its ", M total" tail.
                _ => continue,
            };
            match grammar::nanos(value) {
                Ok(("", seconds)) if plausible(seconds) => *slot = Some(seconds),
                _ => return Understood::Malformed,
            }
        }
        if safepoint.total_s.is_nan() {
            return Understood::Malformed;
        }
        // The line is written when the safepoint ends.
        safepoint.end = self.time_of(env);
        safepoint.start = safepoint.end.earlier_by(safepoint.total_s);
        self.emit(GcEvent::Safepoint(safepoint), out);
        Understood::Yes
    }

    /// JDK 9-12: `Total time for which application threads were stopped: X seconds, Stopping threads took: Y seconds`.
    pub(super) fn stopped_time_line(
        &mut self,
        rest: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((rest, total_s)) = grammar::seconds_word(rest) else {
            return Understood::Malformed;
        };
        let reaching_s = rest
            .strip_prefix(", Stopping threads took: ")
            .and_then(|r| grammar::seconds_word(r).ok())
            .map(|(_, s)| s);
        if !plausible(total_s) || reaching_s.is_some_and(|r| !plausible(r)) {
            return Understood::Malformed;
        }
        let end = self.time_of(env);
        let begin = self.safepoint_begin.take();
        let safepoint = Safepoint {
            operation: begin.as_ref().map(|b| b.operation.clone()),
            start: begin.map_or_else(|| end.earlier_by(total_s), |b| b.time),
            end,
            reaching_s,
            cleanup_s: None,
            at_safepoint_s: reaching_s.map(|r| (total_s - r).max(0.0)),
            leaving_s: None,
            total_s,
        };
        self.emit(GcEvent::Safepoint(safepoint), out);
        Understood::Yes
    }

    /// `Allocation Stall (thread name) 0.706ms`; the thread name may hold parentheses.
    pub(super) fn stall_line(
        &mut self,
        kind: StallKind,
        rest: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Some((thread, duration)) = rest.rsplit_once(") ") else {
            return Understood::Malformed;
        };
        let Ok(("", duration_s)) = grammar::duration(duration) else {
            return Understood::Malformed;
        };
        if !plausible(duration_s) {
            return Understood::Malformed;
        }
        self.infer_collector(Some(Collector::Z));
        let end = self.time_of(env);
        self.emit(
            GcEvent::Stall(Stall {
                kind,
                thread: thread.into(),
                end,
                duration_s,
            }),
            out,
        );
        Understood::Yes
    }

    pub(super) fn collection_line(
        &mut self,
        id: u64,
        message: &Message,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let body = message.body;
        // The first byte picks the prefix to compare: most lines of a
        // collection are detail that none of them starts.
        match body.as_bytes().first() {
            // Indented phase breakdowns, heap tables: the bulk of a gc* log.
            None | Some(b' ') => return Understood::Ignored,
            Some(b'P') if body.starts_with("Pause ") => return self.pause_line(id, message, env),
            Some(b'C') if body.starts_with("Concurrent ") => {
                return self.concurrent_line(id, message, env, out)
            }
            Some(b'G' | b'M')
                if body.starts_with("Garbage Collection (")
                    || body.starts_with("Minor Collection (")
                    || body.starts_with("Major Collection (") =>
            {
                return self.zgc_collection_line(id, body, env, out)
            }
            Some(b'T') if body == "To-space exhausted" => {
                self.infer_collector(Some(Collector::G1));
                self.open_collection(id).evacuation_failure = true;
                return Understood::Yes;
            }
            _ => {}
        }
        // `PSYoungGen: 33275K->5090K(38400K)`, `Eden regions: 6->0(6)`: checked by
        // label first, since most `Label: value` lines are detail we ignore.
        // memchr, not `split_once`: this runs on most lines of a trace-level
        // log, and the two-way string search was a seventh of the whole run.
        let label_value = memchr::memchr_iter(b':', body.as_bytes())
            .find(|&at| body.as_bytes().get(at + 1) == Some(&b' '))
            .map(|at| (&body[..at], &body[at + 2..]));
        if let Some((label, value)) = label_value {
            if let Some(collector) = collector_from_pool(label) {
                // JDK 17+ appends the Eden/From breakdown after the pool's own figures.
                let parsed = grammar::heap_transition(value)
                    .ok()
                    .filter(|(rest, _)| rest.is_empty() || rest.starts_with(' '));
                if let Some((_, transition)) = parsed {
                    self.infer_collector(Some(collector));
                    self.add_pool(
                        id,
                        PoolTransition {
                            name: label.into(),
                            before_bytes: transition.before_bytes,
                            after_bytes: transition.after_bytes,
                            capacity_bytes: transition.capacity_bytes,
                        },
                    );
                    return Understood::Yes;
                }
            } else if label.ends_with(" regions") {
                if let Ok(("", (before, after, capacity))) = grammar::region_transition(value) {
                    self.infer_collector(Some(Collector::G1));
                    if let Some(region_bytes) = self.run.region_bytes {
                        self.add_pool(
                            id,
                            PoolTransition {
                                name: label.into(),
                                before_bytes: before.saturating_mul(region_bytes),
                                after_bytes: after.saturating_mul(region_bytes),
                                capacity_bytes: capacity.map(|c| c.saturating_mul(region_bytes)),
                            },
                        );
                    }
                    return Understood::Yes;
                }
            }
        }
        if message.zgc_generation.is_some() {
            self.infer_collector(Some(Collector::ZGenerational));
        }
        Understood::Ignored
    }

    pub(super) fn pause_line(&mut self, id: u64, message: &Message, env: &Envelope) -> Understood {
        let Ok((_, line)) = grammar::phase_line(message.body) else {
            return Understood::Malformed;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        self.infer_collector(collector_from_pause(
            line.name,
            line.groups,
            message.zgc_generation,
        ));
        let mut qualifiers: Vec<Name> = Vec::new();
        let mut cause: Option<Name> = None;
        let mut evacuation_failure = false;
        for group in line.groups.iter() {
            if group.starts_with("Evacuation Failure") {
                evacuation_failure = true;
                qualifiers.push(Name::from(group));
            } else if QUALIFIERS.contains(&group) {
                qualifiers.push(Name::from(group));
            } else if cause.is_none() {
                cause = Some(Name::from(group));
            }
        }
        let generation = pause_generation(
            self.run.collector,
            line.name,
            &qualifiers,
            message.zgc_generation,
        );
        let time = self.time_of(env);
        let Some(duration_s) = line.duration_s else {
            // The `gc,start` twin of a pause: remember when it began.
            let open = self.open_collection(id);
            open.pause_start = Some(time);
            if cause.is_some() {
                open.cause = cause;
            }
            if generation.is_some() {
                open.generation = generation;
            }
            return Understood::Yes;
        };
        // HotSpot accounts a generational-ZGC pause to the minor collection
        // whenever one is running (ZServiceabilityPauseTracer::minor_is_active),
        // so an old-generation pause during a minor collection is a minor pause.
        match message.zgc_generation {
            Some('y') => qualifiers.push("Minor".into()),
            Some(_) if self.run.zgc_minor_active.is_some() => qualifiers.push("Minor".into()),
            Some(_) if !qualifiers.iter().any(|q| q == "Major") => qualifiers.push("Major".into()),
            _ => {}
        }
        let collector = self.run.collector;
        let open = self.open_collection(id);
        let start = open
            .pause_start
            .take()
            .unwrap_or_else(|| time.earlier_by(duration_s));
        let cause = cause.or_else(|| open.cause.clone());
        let generation = generation.or(open.generation);
        let pools = std::mem::take(&mut open.pools);
        let evacuation_failure = evacuation_failure || std::mem::take(&mut open.evacuation_failure);
        // A collection is over with its pause unless a cycle spans it (ZGC)
        // or later pauses of the cycle inherit its generation or cause
        // (Shenandoah's `Pause Final Update Refs` after `Pause Init Mark
        // (Young)`). Kept with nothing to pass on, it would only fill the
        // parser's checkpointed state, and keep a guess of that state
        // ([`GcLogParser::speculate`]) from ever matching it.
        let keep = open.cycle_start.is_some()
            || (collector == Collector::Shenandoah && *open != OpenCollection::default());
        if !keep {
            self.open.remove(&id);
        }
        let pause = Pause {
            gc_id: Some(id),
            collector,
            full: line.name == "Pause Full",
            degenerated: line.name.starts_with("Pause Degenerated"),
            humongous: cause.as_deref().is_some_and(grammar::humongous_cause),
            explicit: cause.as_deref() == Some("System.gc()"),
            name: line.name.into(),
            qualifiers,
            cause,
            generation,
            start,
            end: time,
            duration_s,
            heap: line.heap,
            pools,
            cpu: None,
            evacuation_failure,
        };
        self.pending = Some(pause);
        Understood::Yes
    }

    pub(super) fn concurrent_line(
        &mut self,
        id: u64,
        message: &Message,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((_, line)) = grammar::phase_line(message.body) else {
            // Shapes such as JDK 9's `Concurrent Mark (0.298s, 0.318s)` carry nothing we need.
            return Understood::Ignored;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        if line
            .groups
            .iter()
            .any(|g| g == "Young" || g == "Old" || g == "Global")
        {
            self.infer_collector(Some(Collector::Shenandoah));
        }
        let Some(duration_s) = line.duration_s else {
            return Understood::Ignored;
        };
        let collector = self.run.collector;
        let end = self.time_of(env);
        if line.name.ends_with(" Cycle") {
            self.infer_collector(Some(Collector::G1));
            let cause = self.open.get(&id).and_then(|o| o.cause.clone());
            let cycle = Cycle {
                gc_id: Some(id),
                collector: self.run.collector,
                name: line.name.into(),
                cause,
                end,
                duration_s: Some(duration_s),
                heap: line.heap,
                cpu: None,
            };
            self.emit(GcEvent::Cycle(cycle), out);
            return Understood::Yes;
        }
        let generation = match message.zgc_generation {
            Some('y') | Some('Y') => Some(Generation::Young),
            Some(_) => Some(Generation::Old),
            None => line.groups.iter().find_map(generation_from_qualifier),
        };
        let phase = ConcurrentPhase {
            gc_id: Some(id),
            collector,
            name: line.name.into(),
            generation,
            end,
            duration_s,
        };
        self.emit(GcEvent::ConcurrentPhase(phase), out);
        Understood::Yes
    }

    /// ZGC cycle lines: `Garbage Collection (cause) a->b` (single generation),
    /// `Minor|Major Collection (cause) a->b D s` (generational).
    pub(super) fn zgc_collection_line(
        &mut self,
        id: u64,
        body: &str,
        env: &Envelope,
        out: &mut Vec<GcEvent>,
    ) -> Understood {
        let Ok((_, line)) = grammar::phase_line(body) else {
            return Understood::Malformed;
        };
        if line.duration_s.is_some_and(|d| !plausible(d)) {
            return Understood::Malformed;
        }
        self.infer_collector(Some(if line.name == "Garbage Collection" {
            Collector::Z
        } else {
            Collector::ZGenerational
        }));
        let time = self.time_of(env);
        let cause = line.groups.iter().next().map(Name::from);
        let minor = line.name == "Minor Collection";
        if line.heap.is_none() {
            if minor {
                self.run.zgc_minor_active = Some(id);
            }
            let open = self.open_collection(id);
            open.cycle_start = Some(time);
            open.cause = cause;
            return Understood::Yes;
        }
        if minor && self.run.zgc_minor_active == Some(id) {
            self.run.zgc_minor_active = None;
        }
        let started = self.open.get(&id).and_then(|o| o.cycle_start);
        let duration_s = line.duration_s.or_else(|| match (started, time.uptime_s) {
            (
                Some(LogTime {
                    uptime_s: Some(s), ..
                }),
                Some(e),
            ) => Some(e - s),
            (Some(LogTime { wall: Some(s), .. }), _) => time
                .wall
                .map(|e| (e - s).num_microseconds().unwrap_or(0) as f64 / 1e6),
            _ => None,
        });
        let cycle = Cycle {
            gc_id: Some(id),
            collector: self.run.collector,
            name: line.name.into(),
            cause,
            end: time,
            duration_s,
            heap: line.heap,
            cpu: None,
        };
        self.open.remove(&id);
        self.emit(GcEvent::Cycle(cycle), out);
        Understood::Yes
    }
}

pub(super) fn generation_from_qualifier(qualifier: &str) -> Option<Generation> {
    match qualifier {
        "Young" => Some(Generation::Young),
        "Old" => Some(Generation::Old),
        "Global" => Some(Generation::Global),
        "Mixed" => Some(Generation::Mixed),
        _ => None,
    }
}

pub(super) fn pause_generation(
    collector: Collector,
    name: &str,
    qualifiers: &[Name],
    zgc_generation: Option<char>,
) -> Option<Generation> {
    if name == "Pause Full" {
        return Some(Generation::Full);
    }
    match zgc_generation {
        Some('y') | Some('Y') => return Some(Generation::Young),
        Some(_) => return Some(Generation::Old),
        None => {}
    }
    if let Some(generation) = qualifiers.iter().find_map(|q| generation_from_qualifier(q)) {
        return Some(generation);
    }
    match (collector, name) {
        (_, "Pause Mixed") => Some(Generation::Mixed),
        (_, "Pause Young") | (Collector::G1, "Pause Initial Mark") => Some(Generation::Young),
        (Collector::G1 | Collector::Cms, "Pause Remark")
        | (Collector::G1, "Pause Cleanup")
        | (Collector::Cms, "Pause Initial Mark") => Some(Generation::Old),
        _ => None,
    }
}

/// HotSpot unified logging (JDK 9 and later); it reads every line the other
/// formats leave, and says whether it is foreign output.
pub(super) struct Unified;

impl Grammar for Unified {
    fn read(&self, p: &mut GcLogParser, line: &Line, out: &mut Vec<GcEvent>) -> Option<Outcome> {
        Some(p.unified_line(line, out))
    }
}

impl GcLogParser {
    /// Handles a line no other format claimed and says what became of it.
    pub(super) fn unified_line(&mut self, line: &Line<'_>, out: &mut Vec<GcEvent>) -> Outcome {
        let text = line.text;
        let Some(env) = line.envelope() else {
            self.flush(out);
            return Outcome::Unparsed(if is_legacy_line(text) {
                UnparsedKind::LegacyFormat
            } else {
                UnparsedKind::NotUnifiedLogging
            });
        };
        if env.continuation || (env.message.is_empty() && (env.decorated || text.is_empty())) {
            self.flush(out);
            return Outcome::Ignored;
        }
        let message = split_message(env.message);
        if let (Some(pending), Some(id)) = (&self.pending, message.gc_id) {
            if pending.gc_id == Some(id) {
                if let Ok((_, cpu)) = grammar::cpu_times(message.body) {
                    let mut pause = self.pending.take().expect("checked above");
                    let cpu_ok = [cpu.user_s, cpu.sys_s, cpu.real_s]
                        .into_iter()
                        .all(plausible);
                    if cpu_ok {
                        pause.cpu = Some(cpu);
                    }
                    self.emit(GcEvent::Pause(pause), out);
                    return if cpu_ok {
                        Outcome::Used
                    } else {
                        Outcome::Unparsed(UnparsedKind::MalformedEvent)
                    };
                }
            }
        }
        self.flush(out);
        self.check_restart(env, &message, out);
        let understood = match message.gc_id {
            Some(id) => {
                self.run.saw_collection = true;
                self.collection_line(id, &message, env, out)
            }
            None => self.plain_line(message.body, env, out),
        };
        if !env.decorated && (message.gc_id.is_some() || matches!(understood, Understood::Yes)) {
            self.undecorated_logging = true;
        }
        match understood {
            Understood::Yes => Outcome::Used,
            Understood::Ignored => {
                if env.decorated || message.gc_id.is_some() || self.undecorated_logging {
                    Outcome::Ignored
                } else if is_legacy_line(text) {
                    Outcome::Unparsed(UnparsedKind::LegacyFormat)
                } else {
                    Outcome::Unparsed(UnparsedKind::NotUnifiedLogging)
                }
            }
            Understood::Malformed => Outcome::Unparsed(UnparsedKind::MalformedEvent),
        }
    }
}
