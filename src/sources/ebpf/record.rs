//! The BPF program's safepoint records, read through the type libbpf-cargo
//! generates from the object's BTF (`safepoint_record` of `safepoints.h`),
//! and turned into the events the GC log parser emits for the same stop:
//! one `Pause` per collection, as the log's `Pause` lines and the MXBeans
//! count them, then one `Safepoint` with the whole stop.

use chrono::{DateTime, Utc};
use pausewatch_parsers::{
    seconds_to_duration, Collector, GcEvent, Generation, LogTime, Name, Pause,
};

use super::skel::types;

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

/// A NUL-terminated C string of a fixed-size field.
fn text(field: &[std::ffi::c_char]) -> String {
    let bytes: Vec<u8> = field
        .iter()
        .map(|c| c.to_ne_bytes()[0])
        .take_while(|b| *b != 0)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// A value of the generated type `T` from the bytes a map or the ring
/// buffer gave, `None` when they are too few (a program of another build).
pub fn read<T: Copy>(bytes: &[u8]) -> Option<T> {
    if bytes.len() < std::mem::size_of::<T>() {
        return None;
    }
    // SAFETY: only instantiated with the skeleton's BTF types, plain old
    // data (integers and arrays of them) for which any bytes are a value;
    // the length is checked above and the read is unaligned.
    Some(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
}

impl SafepointRecord {
    /// The record in `bytes`, `None` when it is not one.
    pub fn parse(bytes: &[u8]) -> Option<SafepointRecord> {
        read::<types::safepoint_record>(bytes).map(SafepointRecord::from)
    }
}

impl SafepointRecord {
    /// The safepoint in flight a map entry holds, with the collection in
    /// progress in it (its `end_ns` 0: not ended).
    pub fn in_flight(raw: types::inflight) -> SafepointRecord {
        let open = raw.record.gcs.get(raw.record.gc_count as usize).copied();
        let mut record = SafepointRecord::from(raw.record);
        if let Some(gc) = open.filter(|_| raw.in_gc != 0) {
            record.gcs.push(GcRecord {
                begin_ns: gc.begin_ns,
                end_ns: 0,
                first_end_ns: gc.first_end_ns,
                second_begin_ns: gc.second_begin_ns,
                full: gc.full != 0,
                first_manager: text(&gc.first_manager),
                second_manager: text(&gc.second_manager),
            });
        }
        record
    }

    /// The record of a stop that never ended, its process gone: closed at
    /// `last_seen_ns`, when the process was last seen in it, as are the
    /// collections still running in it.
    pub fn closed_at(mut self, last_seen_ns: u64) -> SafepointRecord {
        self.end_ns = last_seen_ns;
        for gc in self.gcs.iter_mut().filter(|gc| gc.end_ns == 0) {
            gc.end_ns = last_seen_ns;
        }
        self
    }
}

impl From<types::safepoint_record> for SafepointRecord {
    fn from(raw: types::safepoint_record) -> SafepointRecord {
        let count = (raw.gc_count as usize).min(raw.gcs.len());
        let gcs = raw.gcs[..count]
            .iter()
            .map(|gc| GcRecord {
                begin_ns: gc.begin_ns,
                end_ns: gc.end_ns,
                first_end_ns: gc.first_end_ns,
                second_begin_ns: gc.second_begin_ns,
                full: gc.full != 0,
                first_manager: text(&gc.first_manager),
                second_manager: text(&gc.second_manager),
            })
            .collect();
        SafepointRecord {
            tgid: raw.tgid,
            begin_ns: raw.begin_ns,
            operation_ns: raw.operation_ns,
            end_ns: raw.end_ns,
            operation: text(&raw.operation),
            gcs,
        }
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

    /// A C string field of `len` characters holding `text`.
    fn field<const N: usize>(text: &str) -> [std::ffi::c_char; N] {
        let mut field = [0; N];
        for (to, from) in field.iter_mut().zip(text.bytes()) {
            *to = from as std::ffi::c_char;
        }
        field
    }

    /// A record as the BPF program sends it, through the generated type.
    fn bytes(operation: &str, gcs: &[(u64, u64, u64, u64, bool, &str)]) -> Vec<u8> {
        let mut raw = types::safepoint_record {
            tgid: 4242,
            gc_count: gcs.len() as u32,
            begin_ns: 1_000_000,
            operation_ns: 1_100_000,
            end_ns: 9_000_000,
            operation: field(operation),
            ..Default::default()
        };
        for (slot, &(begin, end, first_end, second_begin, full, manager)) in
            raw.gcs.iter_mut().zip(gcs)
        {
            *slot = types::gc_record {
                begin_ns: begin,
                end_ns: end,
                first_end_ns: first_end,
                second_begin_ns: second_begin,
                full: u32::from(full),
                first_manager: field(manager),
                ..Default::default()
            };
        }
        let size = std::mem::size_of::<types::safepoint_record>();
        // SAFETY: the generated type is plain old data of `size` bytes.
        unsafe {
            std::slice::from_raw_parts((&raw as *const types::safepoint_record).cast::<u8>(), size)
        }
        .to_vec()
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
        assert!(SafepointRecord::parse(&raw[..raw.len() - 1]).is_none());
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
