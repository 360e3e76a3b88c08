//! The BPF program's safepoint records (`safepoints.h`), read field by
//! field, and turned into the events the GC log parser emits for the same
//! stop: one `Pause` per collection, as the log's `Pause` lines and the
//! MXBeans count them, then one `Safepoint` with the whole stop.

use chrono::{DateTime, Utc};
use pausewatch_parsers::{
    seconds_to_duration, Collector, GcEvent, Generation, LogTime, Name, Pause,
};

/// `MAX_GCS`, `OPERATION_LEN` and `MANAGER_LEN` of `safepoints.h`.
const MAX_GCS: usize = 4;
const OPERATION_LEN: usize = 48;
const MANAGER_LEN: usize = 24;
const GC_LEN: usize = 8 * 4 + 4 + 4 + 2 * MANAGER_LEN;
const HEADER_LEN: usize = 4 + 4 + 8 * 3 + OPERATION_LEN;
/// The size of `struct safepoint_record`.
pub const RECORD_LEN: usize = HEADER_LEN + MAX_GCS * GC_LEN;

/// One collection inside a safepoint, times in CLOCK_MONOTONIC nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct GcRecord {
    pub begin_ns: u64,
    pub end_ns: u64,
    /// The first memory manager's first pool end, and the begin of a second
    /// manager's collection in the same pause (0: there was none).
    pub first_end_ns: u64,
    pub second_begin_ns: u64,
    /// What was requested (`gc__begin`'s argument).
    pub full: bool,
    pub first_manager: String,
    pub second_manager: String,
}

/// One safepoint of one JVM, times in CLOCK_MONOTONIC nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct SafepointRecord {
    pub tgid: u32,
    pub begin_ns: u64,
    /// When the VM operation began (0: no `vmops__begin` seen).
    pub operation_ns: u64,
    pub end_ns: u64,
    pub operation: String,
    pub gcs: Vec<GcRecord>,
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn text_at(bytes: &[u8], at: usize, len: usize) -> String {
    let field = &bytes[at..at + len];
    let end = memchr::memchr(0, field).unwrap_or(len);
    String::from_utf8_lossy(&field[..end]).into_owned()
}

impl SafepointRecord {
    /// The record in `bytes`, `None` when it is not one (a program of
    /// another build).
    pub fn parse(bytes: &[u8]) -> Option<SafepointRecord> {
        if bytes.len() < RECORD_LEN {
            return None;
        }
        let count = (u32_at(bytes, 4) as usize).min(MAX_GCS);
        let gcs = (0..count)
            .map(|i| {
                let at = HEADER_LEN + i * GC_LEN;
                GcRecord {
                    begin_ns: u64_at(bytes, at),
                    end_ns: u64_at(bytes, at + 8),
                    first_end_ns: u64_at(bytes, at + 16),
                    second_begin_ns: u64_at(bytes, at + 24),
                    full: u32_at(bytes, at + 32) != 0,
                    first_manager: text_at(bytes, at + 40, MANAGER_LEN),
                    second_manager: text_at(bytes, at + 40 + MANAGER_LEN, MANAGER_LEN),
                }
            })
            .collect();
        Some(SafepointRecord {
            tgid: u32_at(bytes, 0),
            begin_ns: u64_at(bytes, 8),
            operation_ns: u64_at(bytes, 16),
            end_ns: u64_at(bytes, 24),
            operation: text_at(bytes, 32, OPERATION_LEN),
            gcs,
        })
    }
}

/// The collector a VM operation's name says, when it says one.
pub fn collector_of_operation(operation: &str) -> Collector {
    if operation.starts_with("G1") {
        Collector::G1
    } else if operation.starts_with("Parallel") {
        Collector::Parallel
    } else if operation.starts_with("Shenandoah") {
        Collector::Shenandoah
    } else if operation.starts_with('Z') {
        if operation.ends_with("Young") || operation.ends_with("Old") {
            Collector::ZGenerational
        } else {
            Collector::Z
        }
    } else if operation.starts_with("GenCollect") || operation.starts_with("Serial") {
        Collector::Serial
    } else {
        Collector::Unknown
    }
}

/// Converts records into events, carrying what one record cannot say alone:
/// whether generational ZGC's young collection belongs to a major one.
#[derive(Debug, Default)]
pub struct Converter {
    /// The last young mark start was a major collection's
    /// (`ZMarkStartYoungAndOld`, not `ZMarkStartYoung`): minor collections
    /// run while a major one marks the old generation, so this is decided
    /// by each young collection's start.
    zgc_young_in_major: bool,
}

/// The instant `ns` on CLOCK_MONOTONIC, given the wall-clock time of
/// monotonic zero.
fn at(ns: u64, zero: DateTime<Utc>) -> LogTime {
    LogTime {
        uptime_s: None,
        wall: zero.checked_add_signed(seconds_to_duration(ns as f64 / 1e9)),
    }
}

fn seconds(from: u64, to: u64) -> f64 {
    to.saturating_sub(from) as f64 / 1e9
}

impl Converter {
    /// The events of `record`: its collections' pauses, then the safepoint.
    /// `collector` is the JVM's as far as known (else the operation's name
    /// says it); `zero` is the wall-clock time of CLOCK_MONOTONIC's zero.
    pub fn events(
        &mut self,
        record: &SafepointRecord,
        collector: Collector,
        zero: DateTime<Utc>,
    ) -> Vec<GcEvent> {
        let operation = record.operation.as_str();
        let collector = match collector {
            Collector::Unknown => collector_of_operation(operation),
            known => known,
        };
        match operation {
            "ZMarkStartYoungAndOld" => self.zgc_young_in_major = true,
            "ZMarkStartYoung" => self.zgc_young_in_major = false,
            _ => {}
        }
        let major = operation.ends_with("Old") || self.zgc_young_in_major;
        let qualifiers = match collector {
            Collector::ZGenerational if major => vec![Name::from("Major")],
            Collector::ZGenerational => vec![Name::from("Minor")],
            _ => Vec::new(),
        };
        let pause = |name: &str, full: bool, begin: u64, end: u64| {
            GcEvent::Pause(Pause {
                collector,
                name: name.into(),
                qualifiers: qualifiers.clone(),
                generation: match name {
                    "Pause Full" => Some(Generation::Full),
                    "Pause Young" => Some(Generation::Young),
                    _ => None,
                },
                start: at(begin, zero),
                end: at(end, zero),
                duration_s: seconds(begin, end),
                full,
                ..Pause::default()
            })
        };
        let mut events = Vec::new();
        for gc in &record.gcs {
            // A collection that another manager's followed inside the same
            // pause (Parallel's or G1's young turned full): two pauses, as
            // the log's `Pause Young` and `Pause Full` lines.
            if gc.second_begin_ns != 0 && gc.first_end_ns != 0 {
                events.push(pause("Pause Young", false, gc.begin_ns, gc.first_end_ns));
                events.push(pause("Pause Full", true, gc.second_begin_ns, gc.end_ns));
                continue;
            }
            let full = gc.full
                || operation == "G1CollectFull"
                || matches!(
                    gc.first_manager.as_str(),
                    "G1 Old Generation" | "PS MarkSweep" | "MarkSweepCompact"
                );
            let name = pause_name(operation, collector, full);
            events.push(pause(&name, full, gc.begin_ns, gc.end_ns));
        }
        let reaching = (record.operation_ns >= record.begin_ns && record.operation_ns != 0)
            .then(|| seconds(record.begin_ns, record.operation_ns));
        events.push(GcEvent::Safepoint(pausewatch_parsers::Safepoint {
            operation: (!operation.is_empty()).then(|| operation.into()),
            start: at(record.begin_ns, zero),
            end: at(record.end_ns, zero),
            reaching_s: reaching,
            cleanup_s: None,
            at_safepoint_s: None,
            leaving_s: None,
            total_s: seconds(record.begin_ns, record.end_ns),
        }));
        events
    }
}

/// The log's name of a collection run by `operation`.
fn pause_name(operation: &str, collector: Collector, full: bool) -> String {
    if full {
        return "Pause Full".to_string();
    }
    let name = match operation {
        "G1PauseRemark" => "Pause Remark",
        "G1PauseCleanup" => "Pause Cleanup",
        _ if matches!(collector, Collector::Z | Collector::ZGenerational) => {
            let phase = operation
                .trim_start_matches('Z')
                .trim_end_matches("YoungAndOld")
                .trim_end_matches("Young")
                .trim_end_matches("Old");
            return match phase {
                "MarkStart" => "Pause Mark Start",
                "MarkEnd" => "Pause Mark End",
                "RelocateStart" => "Pause Relocate Start",
                other => return format!("Pause {other}"),
            }
            .to_string();
        }
        _ => "Pause Young",
    };
    name.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as the BPF program lays it out, built field by field.
    fn bytes(operation: &str, gcs: &[(u64, u64, u64, u64, bool, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend(4242u32.to_ne_bytes());
        out.extend((gcs.len() as u32).to_ne_bytes());
        for ns in [1_000_000u64, 1_100_000, 9_000_000] {
            out.extend(ns.to_ne_bytes());
        }
        let mut name = operation.as_bytes().to_vec();
        name.resize(OPERATION_LEN, 0);
        out.extend(name);
        for &(begin, end, first_end, second_begin, full, manager) in gcs {
            for ns in [begin, end, first_end, second_begin] {
                out.extend(ns.to_ne_bytes());
            }
            out.extend(u32::from(full).to_ne_bytes());
            out.extend(0u32.to_ne_bytes());
            let mut name = manager.as_bytes().to_vec();
            name.resize(2 * MANAGER_LEN, 0);
            out.extend(name);
        }
        out.resize(RECORD_LEN, 0);
        out
    }

    #[test]
    fn an_escalated_parallel_collection_is_two_pauses_inside_one_safepoint() {
        let raw = bytes(
            "ParallelGCFailedAllocation",
            &[(
                2_000_000,
                8_000_000,
                3_000_000,
                3_500_000,
                false,
                "PS Scavenge",
            )],
        );
        let record = SafepointRecord::parse(&raw).unwrap();
        assert_eq!(record.tgid, 4242);
        let zero = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let events = Converter::default().events(&record, Collector::Unknown, zero);
        let pauses: Vec<(&str, f64)> = events
            .iter()
            .filter_map(GcEvent::as_pause)
            .map(|p| (p.name.as_str(), p.duration_s))
            .collect();
        assert_eq!(pauses, [("Pause Young", 0.001), ("Pause Full", 0.0045)]);
        let Some(GcEvent::Safepoint(safepoint)) = events.last() else {
            panic!("no safepoint: {events:?}");
        };
        assert_eq!(safepoint.total_s, 0.008);
        assert_eq!(safepoint.reaching_s, Some(0.0001));
        assert_eq!(
            safepoint.operation.as_deref(),
            Some("ParallelGCFailedAllocation")
        );
    }

    #[test]
    fn a_non_gc_safepoint_is_a_safepoint_only_and_zgc_phases_are_named_as_the_log_names_them() {
        let zero = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let mut converter = Converter::default();
        let cleanup =
            SafepointRecord::parse(&bytes("CleanClassLoaderDataMetaspaces", &[])).unwrap();
        let events = converter.events(&cleanup, Collector::G1, zero);
        assert!(matches!(events.as_slice(), [GcEvent::Safepoint(_)]));
        let mark = bytes("ZMarkStartYoungAndOld", &[(2, 5, 0, 0, false, "")]);
        let events = converter.events(
            &SafepointRecord::parse(&mark).unwrap(),
            Collector::Unknown,
            zero,
        );
        let pause = events[0].as_pause().unwrap();
        assert_eq!(pause.name, "Pause Mark Start");
        assert_eq!(pause.collector, Collector::ZGenerational);
        assert_eq!(pause.qualifiers, ["Major"]);
    }
}
