//! What a JDK 8 event's text means: recognising collections, concurrent
//! phases and noise, and turning a bracket tree into a pause and the
//! concurrent phases spliced into it.

use std::sync::LazyLock;

use memchr::memmem::Finder;

use super::groups::*;
use crate::events::*;
use crate::gc::grammar::{self, collector_from_pool, plausible};

/// What the `-Xloggc` header says about the JVM.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Preamble {
    pub collector: Option<Collector>,
    pub version: Option<String>,
    pub max_heap_bytes: Option<u64>,
}

/// At most this many pool transitions are kept per pause.
pub(super) const MAX_POOLS: usize = 16;

/// Old-generation pools: a young collection that also ran one of these with
/// its own duration (promotion failed, concurrent mode failure) was full.
pub(super) const OLD_POOLS: &[&str] = &["Tenured", "CMS", "PSOldGen", "ParOldGen"];

/// Lines HotSpot writes inside or between GC events that carry nothing
/// pausewatch uses: tenuring distribution, adaptive size policy,
/// `PrintFLSStatistics`, `PrintCMSInitiationStatistics`, `PrintReferenceGC`
/// summaries, G1 and Shenandoah sentences.
pub(super) const NOISE_PREFIXES: &[&str] = &[
    "Desired survivor size",
    "- age ",
    "AdaptiveSize",
    "PSAdaptiveSize",
    "PSYoungGen::",
    "PSYoungGen: ",
    "Statistics for ",
    "---",
    "Total Free Space:",
    "Max   Chunk Size:",
    "Number of Blocks:",
    "Av.  Block  Size:",
    "Tree      Height:",
    "Before GC:",
    "After GC:",
    "CMS: Large ",
    "GC locker: ",
    "Finished ",
    "Concurrent ",
    "Pacer for ",
    "Trigger: ",
    "Free: ",
    "Evacuation Reserve: ",
    "Uncommitted ",
    "Cancelling ",
    "Periodic GC ",
    "Capacity: ",
    "Using ",
    "Adaptive CSet ",
    "Collectable Garbage: ",
    "Immediate Garbage: ",
    "Heap",
    "Shenandoah ",
    "GC STATISTICS",
    "Pause ",
    "All times are ",
    "all workers. ",
    "Allocation pacing ",
    "===",
    "size[",
    "No shared spaces ",
    "time_until_cms",
    "cms_",
    "promotion_rate=",
    "occupancy=",
    "initiatingOccupancy=",
    "free=",
    "contiguous_available=",
    "initiatingPermOccupancy=",
    "CMSCollector ",
    ", [Metaspace: ",
    "Pacing ",
];

/// `Eden: 24.0M(24.0M)->0.0B(30.0M) Survivors: 0.0B->3072.0K Heap: 33.6M(256.0M)->13.9M(256.0M)]`.
pub(super) fn g1_summary(pause: &mut Pause, summary: &str) {
    let mut fields = vec![("Eden", summary)];
    for label in ["Survivors", "Heap"] {
        if let Some(at) = summary.find(&format!(" {label}: ")) {
            fields.push((label, &summary[at + label.len() + 3..]));
        }
    }
    for (label, value) in fields {
        let Ok((_, transition)) = grammar::heap_transition(value) else {
            continue;
        };
        if label == "Heap" {
            pause.heap = Some(transition);
        } else if pause.pools.len() < MAX_POOLS {
            pause.pools.push(PoolTransition {
                name: label.into(),
                before_bytes: transition.before_bytes,
                after_bytes: transition.after_bytes,
                capacity_bytes: transition.capacity_bytes,
            });
        }
    }
}

/// `Times: user=0.08 sys=0.02, real=0.03 secs`, the opening bracket taken
/// off. By hand: every event ends with one, and nom's tags cost more than
/// the figures.
pub(super) fn times(text: &str) -> Option<CpuTimes> {
    let (rest, user_s) = grammar::decimal(text.strip_prefix("Times: user=")?).ok()?;
    let (rest, sys_s) = grammar::decimal(rest.strip_prefix(" sys=")?).ok()?;
    let (rest, real_s) = grammar::decimal(rest.strip_prefix(", real=")?).ok()?;
    rest.strip_prefix(" secs")?;
    Some(CpuTimes {
        user_s,
        sys_s,
        real_s,
    })
}

/// Output that HotSpot starts in the middle of an event's line and
/// continues on lines of its own (`PrintAdaptiveSizePolicy`,
/// `PrintFLSStatistics`): the event's part of the line ends where it starts.
const SPLICED: [&str; 3] = ["AdaptiveSize", "Before GC:", "After GC:"];

/// Where `-XX:+PrintHeapAtGC`'s block starts, which may be at the end of an
/// event's line.
pub(super) fn heap_before(text: &str) -> Option<usize> {
    first_marker(text.as_bytes(), [b'{', b'{'], &["{Heap before GC"])
}

/// Where the first of `markers`, which all begin with one of `firsts`,
/// starts in `haystack`: a `memchr` for those bytes, which a line holds few
/// of, then a comparison at each. A substring search per marker on every
/// line was a twentieth of reading a CMS log.
fn first_marker(haystack: &[u8], firsts: [u8; 2], markers: &[&str]) -> Option<usize> {
    memchr::memchr2_iter(firsts[0], firsts[1], haystack).find(|&at| {
        markers
            .iter()
            .any(|marker| haystack[at..].starts_with(marker.as_bytes()))
    })
}

/// Collections in `-verbose:gc` output mixed with other lines.
pub(super) static COLLECTIONS: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
    [
        Finder::new("[GC ("),
        Finder::new("[Full GC"),
        Finder::new("[GC pause"),
    ]
});

pub(super) fn cut_spliced(text: &str) -> &str {
    let Some(open) = memchr::memchr(b'[', text.as_bytes()) else {
        return text;
    };
    first_marker(&text.as_bytes()[open..], [b'A', b'B'], &SPLICED)
        .map_or(text, |at| &text[..open + at])
}

/// The kinds of top-level event a JDK 6 to 8 log writes.
pub(super) fn starts_legacy_group(text: &str) -> bool {
    starts_collection(text)
        || text.starts_with("[GC concurrent-")
        || text.starts_with("[CMS-concurrent-")
        || text.starts_with("[ASCMS-concurrent-")
        || text.starts_with("[GC remark")
        || text.starts_with("[GC cleanup")
        || text.starts_with("[Pause ")
        || text.starts_with("[Concurrent ")
        || text.starts_with("[G1Ergonomics")
}

/// A stop-the-world collection starts here: `[GC (`, `[GC pause`, `[GC
/// remark`, `[Full GC`, JDK 6's `[GC--` and `[GC[YG occupancy`, or a `[GC`
/// whose line continues elsewhere.
pub(super) fn starts_collection(text: &str) -> bool {
    text.starts_with("[Full GC")
        || text.strip_prefix("[GC").is_some_and(|rest| {
            matches!(
                rest.as_bytes().first(),
                None | Some(b' ' | b'(' | b'-' | b'[' | b'0'..=b'9')
            ) && !rest.starts_with(" concurrent-")
        })
}

/// Where a collection starts inside a line of other output, with its stamps.
pub(super) fn find_collection(text: &str) -> Option<usize> {
    let at = COLLECTIONS
        .iter()
        .filter_map(|needle| needle.find(text.as_bytes()))
        .min()?;
    let (before, _) = trailing_stamp(&text[..at]);
    Some(before.len())
}

/// `   1:       2050241     4701812112  [Ljava.lang.Object;`: a row of the
/// `-XX:+PrintClassHistogramBeforeFullGC` table printed inside a full
/// collection (its `[` never closes).
pub(super) fn is_histogram_row(trimmed: &str) -> bool {
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && trimmed[digits..].starts_with(": ")
}

/// A collection's group, which must carry a duration.
pub(super) fn names_collection(text: &str) -> bool {
    let text = trim_start(text);
    ["GC pause", "GC remark", "GC cleanup", "Full GC", "Pause "]
        .iter()
        .any(|name| text.starts_with(name))
        || young_collection(text).is_some()
}

/// What follows `GC` in a young collection's group (`GC (Allocation
/// Failure) ...`, `GC--`, JDK 1.4's `GC 1534K->276K(16256K), ...`), but not
/// in G1's `GC Worker Start (ms): ...` detail groups.
pub(super) fn young_collection(text: &str) -> Option<&str> {
    text.strip_prefix("GC")
        .filter(|rest| !trim_start(rest).starts_with(char::is_alphabetic))
}

pub(super) fn is_concurrent(text: &str) -> bool {
    text.starts_with("CMS-concurrent-")
        || text.starts_with("ASCMS-concurrent-")
        || text.starts_with("GC concurrent-")
        || text.starts_with("Concurrent ")
}

/// Top-level groups that are not events: Shenandoah's `start` markers and
/// G1 ergonomics decisions.
pub(super) fn ignored_group(text: &str) -> bool {
    text.ends_with(", start") || text.ends_with(", start ") || text.starts_with("G1Ergonomics")
}

pub(super) fn is_noise(text: &str) -> bool {
    text.starts_with([' ', '\t'])
        || text.starts_with('}')
        || NOISE_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// The `-Xloggc` header: the VM line, `Memory:` and `CommandLine flags:`.
pub(super) fn preamble(text: &str) -> Option<Preamble> {
    if text.starts_with("Memory: ") || text == "/proc/meminfo:" {
        return Some(Preamble::default());
    }
    if text.starts_with("Java HotSpot(TM) ")
        || (text.starts_with("OpenJDK ") && text.contains(" VM ("))
    {
        let version = text
            .split_once(" JRE (")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(version, _)| version.to_string());
        return Some(Preamble {
            version,
            ..Preamble::default()
        });
    }
    let flags = text.strip_prefix("CommandLine flags: ")?;
    let mut preamble = Preamble::default();
    for flag in flags.split_whitespace() {
        let collector = match flag {
            "-XX:+UseG1GC" => Collector::G1,
            "-XX:+UseConcMarkSweepGC" => Collector::Cms,
            "-XX:+UseParallelGC" | "-XX:+UseParallelOldGC" => Collector::Parallel,
            "-XX:+UseSerialGC" => Collector::Serial,
            "-XX:+UseShenandoahGC" => Collector::Shenandoah,
            _ => {
                if let Some(size) = flag.strip_prefix("-XX:MaxHeapSize=") {
                    preamble.max_heap_bytes = size.parse().ok();
                }
                continue;
            }
        };
        preamble.collector = Some(collector);
    }
    Some(preamble)
}

/// The duration a group's own text ends with: `, 0.0146984 secs`,
/// `0.146/0.280 secs` (CMS concurrent: CPU/wall, the wall figure), `1.983 ms`
/// (JDK 8 Shenandoah). A number without a unit is not a duration: G1's
/// detail groups end with bare figures.
pub(super) fn trailing_duration(text: &str) -> Option<f64> {
    let text = trim_end(text);
    let (number, scale) = if let Some(t) = text.strip_suffix(" secs") {
        (t, 1.0)
    } else if let Some(t) = text.strip_suffix(" sec") {
        (t, 1.0)
    } else {
        (text.strip_suffix(" ms")?, 1e-3)
    };
    trailing_seconds(number).map(|value| value * scale)
}

/// The bare number a text ends with, as JDK 6 G1 ends `GC concurrent-count-end, 0.0019007`.
pub(super) fn trailing_seconds(number: &str) -> Option<f64> {
    let number = trim_end(number);
    let token = &number
        [number.len() - trailing_len(number, |b| matches!(b, b'0'..=b'9' | b'.' | b',' | b'/'))..];
    let token = memchr::memrchr(b'/', token.as_bytes()).map_or(token, |at| &token[at + 1..]);
    match uptime_prefix_exact(token) {
        Some((value, "")) if value.is_finite() => Some(value),
        _ => None,
    }
}

/// The first `a->b(c)` in a group's own text.
pub(super) fn heap_in(text: &str) -> Option<HeapTransition> {
    let arrow = find_pair(text, *b"->")?;
    let start = arrow
        - trailing_len(&text[..arrow], |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b',')
        });
    grammar::heap_transition(&text[start..])
        .ok()
        .map(|(_, heap)| heap)
}

/// The parenthesised groups at the start of `text` (`(System.gc()) (young)`)
/// and what follows them.
pub(super) fn groups_after(text: &str) -> (Vec<&str>, &str) {
    let mut rest = text;
    let mut groups = Vec::new();
    loop {
        let trimmed = trim_start(rest);
        match grammar::paren_group(trimmed) {
            Ok((after, group)) => {
                groups.push(group);
                rest = after;
            }
            Err(_) => return (groups, rest),
        }
    }
}

/// What a top-level group is. Spliced concurrent phases and a nested young
/// collection (CMS scavenge before remark) go to `out` at once; the pause
/// the group itself stands for is returned, to wait for its `[Times: ...]`.
pub(super) fn interpret(root: Group, out: &mut Vec<GcEvent>) -> Option<Pause> {
    let text = trim(root.text());
    let mut pause = blank_pause(root.stamp());
    let rest = if let Some(rest) = text.strip_prefix("GC pause") {
        pause.collector = Collector::G1;
        let (groups, rest) = groups_after(rest);
        g1_groups(&mut pause, &groups);
        // JDK 7's `(young)-- 90M->94M(128M)`: to-space overflow.
        if rest.starts_with("--") {
            pause.evacuation_failure = true;
        }
        rest
    } else if let Some(rest) = text.strip_prefix("GC remark") {
        pause.collector = Collector::G1;
        pause.name = "Pause Remark".into();
        pause.generation = Some(Generation::Old);
        rest
    } else if let Some(rest) = text.strip_prefix("GC cleanup") {
        pause.collector = Collector::G1;
        pause.name = "Pause Cleanup".into();
        pause.generation = Some(Generation::Old);
        rest
    } else if let Some(rest) = text.strip_prefix("Full GC") {
        pause.name = "Pause Full".into();
        pause.generation = Some(Generation::Full);
        pause.full = true;
        let (groups, rest) = groups_after(rest);
        pause.cause = groups.first().map(|g| Name::from(*g));
        rest
    } else if let Some(rest) = text.strip_prefix("Pause ") {
        // JDK 8 Shenandoah backport: `Pause Init Mark (process weakrefs), 1.983 ms`.
        pause.collector = Collector::Shenandoah;
        let name_end = rest.find(['(', ',']).unwrap_or(rest.len());
        pause.name = compact_str::format_compact!("Pause {}", rest[..name_end].trim_end());
        pause.degenerated = pause.name.starts_with("Pause Degenerated");
        pause.full = pause.name == "Pause Full";
        pause.generation = pause.full.then_some(Generation::Full);
        let (groups, rest) = groups_after(&rest[name_end..]);
        pause.qualifiers = groups.iter().map(|g| Name::from(*g)).collect();
        rest
    } else if let Some(rest) = young_collection(text) {
        let rest = match rest.strip_prefix("--") {
            Some(rest) => {
                pause.qualifiers.push("promotion failed".into());
                rest
            }
            None => rest,
        };
        let (groups, rest) = groups_after(rest);
        pause.cause = groups.first().map(|g| Name::from(*g));
        rest
    } else {
        return None;
    };
    let own = trailing_duration(rest).filter(|d| plausible(*d));
    pause.heap = heap_in(rest);
    let nested = children(root, &mut pause, out);
    pause.duration_s = (own? - nested).max(0.0);
    if pause.collector == Collector::Shenandoah {
        // Shenandoah writes its pause line when the pause ends.
        pause.end = pause.start;
        pause.start = pause.end.earlier_by(pause.duration_s);
    } else {
        pause.end = pause.start.later_by(pause.duration_s);
    }
    pause.humongous = pause.cause.as_deref().is_some_and(grammar::humongous_cause);
    pause.explicit = pause.cause.as_deref() == Some("System.gc()");
    Some(pause)
}

/// `-XX:+PrintGCID` and the stamps of the group a pause starts at.
pub(super) fn blank_pause(stamp: Stamp) -> Pause {
    let start = stamp.time();
    Pause {
        gc_id: stamp.gc_id,
        collector: Collector::Unknown,
        name: "Pause Young".into(),
        generation: Some(Generation::Young),
        start,
        end: start,
        ..Pause::default()
    }
}

/// G1's `(G1 Evacuation Pause) (young) (initial-mark) (to-space exhausted)`,
/// named as unified logging names them (`Mixed`, `Concurrent Start`).
pub(super) fn g1_groups(pause: &mut Pause, groups: &[&str]) {
    for group in groups {
        match *group {
            "young" => {}
            "mixed" | "partial" => {
                pause.qualifiers.push("Mixed".into());
                pause.generation = Some(Generation::Mixed);
            }
            "initial-mark" => pause.qualifiers.push("Concurrent Start".into()),
            "to-space exhausted" | "to-space overflow" => {
                pause.evacuation_failure = true;
                pause.qualifiers.push((*group).into());
            }
            cause if pause.cause.is_none() => pause.cause = Some(cause.into()),
            _ => {}
        }
    }
}

/// `CMS-concurrent-mark: 0.005/0.013 secs`, `GC concurrent-mark-end, 0.0027 secs`,
/// Shenandoah's `Concurrent marking, 38.059 ms`; `-start` markers carry no duration.
pub(super) fn concurrent_phase(group: Group) -> Option<ConcurrentPhase> {
    let text = trim(group.text());
    // `AS`: JDK 6's -XX:+UseAdaptiveSizePolicy CMS (`ASParNew`, `ASCMS`).
    let text = text.strip_prefix("AS").unwrap_or(text);
    let collector = if text.starts_with("CMS-concurrent-") {
        Collector::Cms
    } else if text.starts_with("GC concurrent-") {
        Collector::G1
    } else if text.starts_with("Concurrent ") {
        Collector::Shenandoah
    } else {
        return None;
    };
    // Bytes, not chars: the separators are ASCII.
    let name_end = (text.bytes())
        .position(|b| matches!(b, b':' | b',' | b'('))
        .unwrap_or(text.len());
    let name = text[..name_end].trim_end();
    let name = name.strip_suffix("-end").unwrap_or(name);
    let tail = &text[name_end..];
    let duration_s = trailing_duration(tail).or_else(|| trailing_seconds(tail))?;
    Some(ConcurrentPhase {
        gc_id: group.stamp().gc_id,
        collector,
        name: name.into(),
        generation: Some(Generation::Old),
        end: group.stamp().time(),
        duration_s,
    })
}

/// Reads a pause's nested groups into it: pools, CMS phase markers, the
/// outcome of failures. Concurrent phases spliced in, and a whole young
/// collection nested in a CMS remark, go to `out`; returns the time of the
/// nested collections, which the outer figure includes.
pub(super) fn children(root: Group, pause: &mut Pause, out: &mut Vec<GcEvent>) -> f64 {
    let mut nested_s = 0.0;
    let mut last_nested: Option<usize> = None;
    for child in root.children() {
        let text = trim(child.text());
        // A phase spliced into the pause's group, or into a pool's group:
        // `[CMS2016-...: [CMS-concurrent-mark: ...] (concurrent mode failure): ...]`.
        // A loop, not `extend` by a filtered chain, whose bookkeeping cost
        // more than the search for the few children that are phases.
        for group in std::iter::once(child).chain(child.children()) {
            if let Some(phase) = concurrent_phase(group).filter(|p| plausible(p.duration_s)) {
                out.push(GcEvent::ConcurrentPhase(phase));
            }
        }
        if is_concurrent(text) {
            continue;
        }
        if let Some(cpu) = times(text) {
            match last_nested.and_then(|i| out.get_mut(i)) {
                Some(GcEvent::Pause(young)) => young.cpu = Some(cpu),
                _ => pause.cpu = Some(cpu),
            }
            continue;
        }
        if text.starts_with("GC") {
            if let Some(young) = interpret(child, out) {
                nested_s += young.duration_s;
                last_nested = Some(out.len());
                out.push(GcEvent::Pause(young));
            }
            continue;
        }
        let Some((label, value)) =
            memchr::memchr(b':', text.as_bytes()).map(|at| (&text[..at], &text[at + 1..]))
        else {
            continue;
        };
        let label = trim(label);
        let label = label.strip_prefix("1 AS").unwrap_or(label);
        match label.strip_prefix("1 ").unwrap_or(label) {
            "CMS-initial-mark" => {
                pause.collector = Collector::Cms;
                pause.name = "Pause Initial Mark".into();
                pause.generation = Some(Generation::Old);
                continue;
            }
            "CMS-remark" => {
                pause.collector = Collector::Cms;
                pause.name = "Pause Remark".into();
                pause.generation = Some(Generation::Old);
                continue;
            }
            _ => {}
        }
        // `ParNew (promotion failed)`, `CMS (concurrent mode failure)`.
        let (pool, failures) = groups_split(label);
        let pool = match pool.strip_prefix("AS") {
            Some(pool @ ("ParNew" | "CMS")) => pool,
            _ => pool,
        };
        // Only a pool's group holds a transition; G1 ergonomics decisions
        // (`G1Ergonomics (CSet Construction) ...: 0, ...`) do not.
        let Ok((after, transition)) = grammar::heap_transition(trim_start(value)) else {
            continue;
        };
        for failure in failures {
            pause.qualifiers.push(failure.into());
        }
        if let Some(collector) = collector_from_pool(pool) {
            if pause.collector == Collector::Unknown {
                pause.collector = collector;
            }
        }
        if OLD_POOLS.contains(&pool) && trailing_duration(after).is_some() && !pause.full {
            // Promotion failed or concurrent mode failure: the young
            // collection became a full one, and GCViewer counts it as such.
            pause.full = true;
            pause.name = "Pause Full".into();
            pause.generation = Some(Generation::Full);
        }
        if pause.pools.len() < MAX_POOLS {
            pause.pools.push(PoolTransition {
                name: pool.into(),
                before_bytes: transition.before_bytes,
                after_bytes: transition.after_bytes,
                capacity_bytes: transition.capacity_bytes,
            });
        }
    }
    nested_s
}

/// `CMS (concurrent mode failure)` into `CMS` and its groups; `CMS Perm ` trimmed.
pub(super) fn groups_split(label: &str) -> (&str, Vec<&str>) {
    match find_pair(label, *b" (") {
        Some(at) => {
            let (groups, _) = groups_after(&label[at..]);
            (trim(&label[..at]), groups)
        }
        None => (trim(label), Vec::new()),
    }
}
