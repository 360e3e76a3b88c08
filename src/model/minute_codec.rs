//! Minutes packed for history, losslessly: a day of a JVM's minutes is
//! 1,440 structs of about 500 bytes plus their histograms, while what
//! changes from one minute to the next is a few counts and durations.
//!
//! Each minute is written against the one before it: its key as a delta,
//! a mask of the figures that differ, then only those. Counts and byte
//! figures are varint deltas. A duration is the nearest whole number of
//! microseconds or nanoseconds plus the few units in the last place that
//! separate it from the `f64` it was (sums of parsed durations are rarely
//! exact decimals), so that it reads back bit for bit; anything else
//! (a huge or negative value, NaN) is kept as its 8 bytes. Shares the
//! model derives (the collector's share of CPU, a histogram sum equal to
//! the pause total) are flagged and recomputed. A minute the scheme does
//! not fit (a start that is not its key's) is kept as JSON.

use prost::encoding::{decode_varint, encode_varint};

use crate::model::histogram::{Histogram, PAUSE_BUCKETS};
use crate::model::minutes::{minute_start, Minute, MIN_PROCESS_CPU_SECONDS};

/// Bits of the flags figure.
const LOWER_BOUND: u64 = 1;
const SEEN_PARTLY: u64 = 1 << 1;
const HISTOGRAM_SUM_IS_PAUSE_TOTAL: u64 = 1 << 2;
const CPU_OF_PROCESS_DERIVED: u64 = 1 << 3;
const CPU_OF_AVAILABLE_DERIVED: u64 = 1 << 4;
/// Presence of the optional figures, from this bit on, in [`OPTIONAL`] order.
const PRESENT_FROM: u32 = 5;

/// The mask bit that says the minute follows as JSON.
const JSON: u64 = 1 << 63;

const BUCKETS: usize = PAUSE_BUCKETS.len();

/// A figure as the codec sees it: an integer, or a float by its bits.
#[derive(Clone, Copy, PartialEq)]
enum Figure {
    Int(u64),
    Float(u64),
}

/// Figures of a minute in a fixed order, the histogram's buckets last; an
/// absent optional one is zero.
const HEAD: usize = 28;
const FIGURES: usize = HEAD + BUCKETS;

type Figures = [Figure; FIGURES];

/// Which optional figures are present, as flag bits.
fn presence(minute: &Minute) -> u64 {
    let optional = [
        minute.heap_after_gc_bytes.is_some(),
        minute.heap_committed_bytes.is_some(),
        minute.live_data_bytes.is_some(),
        minute.gc_cpu_seconds.is_some(),
        minute.process_cpu_seconds.is_some(),
        minute.cpus.is_some(),
        minute.gc_cpu_of_process.is_some(),
        minute.gc_cpu_of_available.is_some(),
    ];
    optional
        .iter()
        .enumerate()
        .filter(|(_, present)| **present)
        .fold(0, |flags, (i, _)| flags | 1 << (PRESENT_FROM + i as u32))
}

/// The collector's share of the process's CPU as [`Minute::add_gc_cpu`] makes it.
fn derived_cpu_of_process(minute: &Minute) -> Option<f64> {
    let gc = minute.gc_cpu_seconds.unwrap_or(0.0);
    minute
        .process_cpu_seconds
        .and_then(|total| (total >= MIN_PROCESS_CPU_SECONDS).then(|| (gc / total).min(1.0)))
}

/// The collector's share of the available CPUs as [`Minute::add_gc_cpu`] makes it.
fn derived_cpu_of_available(minute: &Minute) -> Option<f64> {
    let gc = minute.gc_cpu_seconds.unwrap_or(0.0);
    minute
        .cpus
        .filter(|cpus| *cpus > 0.0)
        .map(|cpus| gc / (cpus * 60.0))
}

fn same(a: Option<f64>, b: Option<f64>) -> bool {
    a.map(f64::to_bits) == b.map(f64::to_bits)
}

fn float(value: f64) -> Figure {
    Figure::Float(value.to_bits())
}

fn figures(minute: &Minute) -> Figures {
    let histogram = &minute.pause_histogram;
    let mut flags = presence(minute);
    let mut set = |on: bool, bit: u64| {
        if on {
            flags |= bit;
        }
    };
    set(minute.pause_max_lower_bound, LOWER_BOUND);
    set(minute.seen_partly, SEEN_PARTLY);
    let sum_is_total = histogram.sum.to_bits() == minute.pause_total_seconds.to_bits();
    set(sum_is_total, HISTOGRAM_SUM_IS_PAUSE_TOTAL);
    let of_process = same(minute.gc_cpu_of_process, derived_cpu_of_process(minute));
    set(of_process, CPU_OF_PROCESS_DERIVED);
    let of_available = same(minute.gc_cpu_of_available, derived_cpu_of_available(minute));
    set(of_available, CPU_OF_AVAILABLE_DERIVED);
    let derived_or =
        |derived: bool, value: Option<f64>| float(value.filter(|_| !derived).unwrap_or(0.0));
    let mut figures = [Figure::Int(0); FIGURES];
    let head: [Figure; HEAD] = [
        Figure::Int(flags),
        Figure::Int(minute.pause_count),
        float(minute.pause_total_seconds),
        float(minute.pause_max_seconds),
        Figure::Int(minute.records_lost),
        Figure::Int(histogram.buckets.len() as u64),
        Figure::Int(histogram.count),
        float(if sum_is_total { 0.0 } else { histogram.sum }),
        Figure::Int(minute.safepoint_count),
        float(minute.safepoint_total_seconds),
        float(minute.safepoint_max_seconds),
        float(minute.time_to_safepoint_max_seconds),
        Figure::Int(minute.full_gcs),
        Figure::Int(minute.evacuation_failures),
        Figure::Int(minute.degenerated_gcs),
        Figure::Int(minute.allocation_stalls),
        float(minute.allocation_stall_seconds),
        float(minute.concurrent_cycle_seconds),
        Figure::Int(minute.heap_after_gc_bytes.unwrap_or(0)),
        Figure::Int(minute.heap_committed_bytes.unwrap_or(0)),
        Figure::Int(minute.live_data_bytes.unwrap_or(0)),
        Figure::Int(minute.allocated_bytes),
        Figure::Int(minute.promoted_bytes),
        float(minute.gc_cpu_seconds.unwrap_or(0.0)),
        float(minute.process_cpu_seconds.unwrap_or(0.0)),
        float(minute.cpus.unwrap_or(0.0)),
        derived_or(of_process, minute.gc_cpu_of_process),
        derived_or(of_available, minute.gc_cpu_of_available),
    ];
    let (start, buckets) = figures.split_at_mut(head.len());
    start.copy_from_slice(&head);
    for (figure, count) in buckets.iter_mut().zip(&histogram.buckets) {
        *figure = Figure::Int(*count);
    }
    figures
}

/// A figure's value, or a float's bits.
fn int(figure: Figure) -> u64 {
    match figure {
        Figure::Int(value) | Figure::Float(value) => value,
    }
}

/// A float figure's value.
fn f(figure: Figure) -> f64 {
    f64::from_bits(int(figure))
}

fn minute_of_figures(key: i64, figures: &Figures) -> Minute {
    let flags = int(figures[0]);
    let present = |i: u32| flags & 1 << (PRESENT_FROM + i) != 0;
    let optional_int = |i: u32, figure: Figure| present(i).then(|| int(figure));
    let optional_float = |i: u32, figure: Figure| present(i).then(|| f(figure));
    let bucket_count = (int(figures[5]) as usize).min(BUCKETS);
    let pause_total_seconds = f(figures[2]);
    let mut minute = Minute {
        start: minute_start(key),
        pause_count: int(figures[1]),
        pause_total_seconds,
        pause_max_seconds: f(figures[3]),
        pause_max_lower_bound: flags & LOWER_BOUND != 0,
        seen_partly: flags & SEEN_PARTLY != 0,
        records_lost: int(figures[4]),
        pause_histogram: Histogram {
            buckets: figures[HEAD..HEAD + bucket_count]
                .iter()
                .map(|b| int(*b))
                .collect(),
            count: int(figures[6]),
            sum: if flags & HISTOGRAM_SUM_IS_PAUSE_TOTAL != 0 {
                pause_total_seconds
            } else {
                f(figures[7])
            },
        },
        safepoint_count: int(figures[8]),
        safepoint_total_seconds: f(figures[9]),
        safepoint_max_seconds: f(figures[10]),
        time_to_safepoint_max_seconds: f(figures[11]),
        full_gcs: int(figures[12]),
        evacuation_failures: int(figures[13]),
        degenerated_gcs: int(figures[14]),
        allocation_stalls: int(figures[15]),
        allocation_stall_seconds: f(figures[16]),
        concurrent_cycle_seconds: f(figures[17]),
        heap_after_gc_bytes: optional_int(0, figures[18]),
        heap_committed_bytes: optional_int(1, figures[19]),
        live_data_bytes: optional_int(2, figures[20]),
        allocated_bytes: int(figures[21]),
        promoted_bytes: int(figures[22]),
        gc_cpu_seconds: optional_float(3, figures[23]),
        process_cpu_seconds: optional_float(4, figures[24]),
        cpus: optional_float(5, figures[25]),
        gc_cpu_of_process: optional_float(6, figures[26]),
        gc_cpu_of_available: optional_float(7, figures[27]),
    };
    if flags & CPU_OF_PROCESS_DERIVED != 0 {
        minute.gc_cpu_of_process = derived_cpu_of_process(&minute);
    }
    if flags & CPU_OF_AVAILABLE_DERIVED != 0 {
        minute.gc_cpu_of_available = derived_cpu_of_available(&minute);
    }
    minute
}

/// What [`figures`] cannot say: the minute then goes as JSON.
fn fits(key: i64, minute: &Minute) -> bool {
    minute.start == minute_start(key) && minute.pause_histogram.buckets.len() <= BUCKETS
}

fn zigzag(value: i64) -> u64 {
    ((value << 1) ^ (value >> 63)) as u64
}

fn unzigzag(value: u64) -> i64 {
    (value >> 1) as i64 ^ -((value & 1) as i64)
}

/// Scales a duration is tried at, by tag: microseconds, nanoseconds.
const SCALES: [f64; 2] = [1e6, 1e9];
/// The tag of a float kept as its 8 bytes.
const RAW: u64 = 2;
/// Units in the last place a scaled float may be off by and still be
/// written scaled.
const MAX_ULPS: u64 = 1 << 40;

fn varint_len(value: u64) -> usize {
    prost::encoding::encoded_len_varint(value)
}

fn encode_float(bits: u64, out: &mut Vec<u8>) {
    let value = f64::from_bits(bits);
    let scaled = SCALES.iter().enumerate().filter_map(|(tag, scale)| {
        let nearest = (value * scale).round();
        if !(value >= 0.0 && bits >> 63 == 0 && nearest < (1u64 << 53) as f64) {
            return None;
        }
        let units = nearest as u64;
        let off = bits as i64 - (units as f64 / scale).to_bits() as i64;
        (off.unsigned_abs() < MAX_ULPS).then(|| ((zigzag(off) << 2) | tag as u64, units))
    });
    match scaled.min_by_key(|(head, units)| varint_len(*head) + varint_len(*units)) {
        Some((head, units)) => {
            encode_varint(head, out);
            encode_varint(units, out);
        }
        None => {
            encode_varint(RAW, out);
            out.extend_from_slice(&bits.to_le_bytes());
        }
    }
}

fn decode_float(bytes: &mut &[u8]) -> Option<u64> {
    let head = decode_varint(bytes).ok()?;
    let tag = head & 3;
    if tag == RAW {
        let (raw, rest) = bytes.split_first_chunk::<8>()?;
        *bytes = rest;
        return Some(u64::from_le_bytes(*raw));
    }
    let scale = SCALES.get(tag as usize)?;
    let units = decode_varint(bytes).ok()?;
    let near = (units as f64 / scale).to_bits() as i64;
    Some(near.wrapping_add(unzigzag(head >> 2)) as u64)
}

/// Packs minutes (in key order) into bytes that [`unpack`] reads back.
pub fn pack<'a>(minutes: impl IntoIterator<Item = (i64, &'a Minute)>) -> Vec<u8> {
    let mut out = Vec::new();
    let mut previous_key = 0i64;
    let mut previous = figures(&Minute::default());
    for (key, minute) in minutes {
        encode_varint(zigzag(key.wrapping_sub(previous_key)), &mut out);
        previous_key = key;
        if !fits(key, minute) {
            let json = serde_json::to_vec(minute).expect("a minute serializes");
            encode_varint(JSON, &mut out);
            encode_varint(json.len() as u64, &mut out);
            out.extend_from_slice(&json);
            previous = figures(minute);
            continue;
        }
        let current = figures(minute);
        let changed = current
            .iter()
            .zip(&previous)
            .enumerate()
            .filter(|(_, (now, before))| now != before)
            .fold(0u64, |mask, (i, _)| mask | 1 << i);
        encode_varint(changed, &mut out);
        for (now, before) in current.iter().zip(&previous).filter(|(a, b)| a != b) {
            match (now, before) {
                (Figure::Float(bits), _) => encode_float(*bits, &mut out),
                (Figure::Int(now), before) => {
                    encode_varint(zigzag(now.wrapping_sub(int(*before)) as i64), &mut out)
                }
            }
        }
        previous = current;
    }
    out
}

/// The minutes of [`pack`]'s bytes, in order. Stops at the first that does
/// not read (which only bytes that `pack` did not write would give).
pub fn unpack(mut bytes: &[u8]) -> impl Iterator<Item = (i64, Minute)> + '_ {
    let mut key = 0i64;
    let mut previous = figures(&Minute::default());
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        key = key.wrapping_add(unzigzag(decode_varint(&mut bytes).ok()?));
        let changed = decode_varint(&mut bytes).ok()?;
        if changed == JSON {
            let len = usize::try_from(decode_varint(&mut bytes).ok()?).ok()?;
            let json = bytes.get(..len)?;
            bytes = &bytes[len..];
            let minute: Minute = serde_json::from_slice(json).ok()?;
            previous = figures(&minute);
            return Some((key, minute));
        }
        for (i, figure) in previous.iter_mut().enumerate() {
            if changed & 1 << i == 0 {
                continue;
            }
            *figure = match *figure {
                Figure::Float(_) => Figure::Float(decode_float(&mut bytes)?),
                Figure::Int(before) => {
                    let delta = unzigzag(decode_varint(&mut bytes).ok()?);
                    Figure::Int(before.wrapping_add(delta as u64))
                }
            };
        }
        Some((key, minute_of_figures(key, &previous)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn json(minute: &Minute) -> String {
        serde_json::to_string(minute).unwrap()
    }

    /// Keyed minutes as JSON: equal when every figure is equal bit for bit
    /// (serde_json writes the shortest decimal that reads back the same).
    fn as_json(minutes: &[(i64, Minute)]) -> Vec<(i64, String)> {
        minutes.iter().map(|(key, m)| (*key, json(m))).collect()
    }

    /// `minutes` packed, and read back.
    fn round_trip(minutes: &[(i64, Minute)]) -> (Vec<u8>, Vec<(i64, Minute)>) {
        let packed = pack(minutes.iter().map(|(k, m)| (*k, m)));
        let back = unpack(&packed).collect();
        (packed, back)
    }

    fn busy(key: i64, i: u64) -> Minute {
        let mut minute = Minute {
            start: minute_start(key),
            pause_count: 3 + i % 4,
            heap_after_gc_bytes: Some(40_000_000 + 1_234_567 * i),
            heap_committed_bytes: Some(128 << 20),
            allocated_bytes: 300_000_000 + 77_777 * i,
            promoted_bytes: 1_000_000 + i,
            ..Minute::default()
        };
        for ms in [3.21, 12.005, 0.45 + i as f64 / 1000.0] {
            minute.pause_total_seconds += ms / 1000.0;
            minute.pause_max_seconds = minute.pause_max_seconds.max(ms / 1000.0);
            minute.pause_histogram.observe(ms / 1000.0);
        }
        minute.safepoint_count = 7;
        minute.safepoint_total_seconds = 0.016_789_123 + i as f64 * 1e-9;
        minute.add_gc_cpu(0.13, Some(2.5 + i as f64 / 10.0), Some(2.0));
        minute
    }

    #[test]
    fn busy_minutes_read_back_bit_for_bit_in_a_few_dozen_bytes_each() {
        let minutes: Vec<(i64, Minute)> = (0..60)
            .map(|i| (60 * i as i64, busy(60 * i as i64, i)))
            .collect();
        let (packed, back) = round_trip(&minutes);
        assert_eq!(as_json(&back), as_json(&minutes));
        assert_eq!(back, minutes);
        let per_minute = packed.len() / minutes.len();
        assert!(per_minute <= 48, "{per_minute} bytes a minute");
    }

    #[test]
    fn odd_minutes_read_back_too() {
        let mut odd = busy(120, 1);
        odd.pause_total_seconds = f64::NAN;
        odd.pause_max_seconds = -0.0;
        odd.concurrent_cycle_seconds = 1e-300;
        odd.gc_cpu_of_process = Some(0.25);
        odd.cpus = Some(f64::INFINITY);
        let mut elsewhere = busy(180, 2);
        elsewhere.start = minute_start(7);
        let mut long = busy(240, 3);
        long.pause_histogram.buckets.push(1);
        let minutes = [
            (120, odd),
            (180, elsewhere),
            (240, long),
            (-60, Minute::default()),
        ];
        let (_, back) = round_trip(&minutes);
        assert_eq!(as_json(&back), as_json(&minutes));
    }

    /// A float as the model makes them (a duration parsed from a log, a sum
    /// of them, a ratio) or any bits at all.
    fn figure() -> impl Strategy<Value = f64> {
        prop_oneof![
            (0u64..100_000_000).prop_map(|micros| micros as f64 / 1e6),
            (0u64..1_000_000_000_000).prop_map(|nanos| nanos as f64 / 1e9),
            (1u64..1000, 1u64..1000).prop_map(|(a, b)| a as f64 / 1e3 + b as f64 / 1e6),
            any::<f64>(),
        ]
    }

    fn optional<T: std::fmt::Debug + Clone>(
        value: impl Strategy<Value = T>,
    ) -> impl Strategy<Value = Option<T>> {
        proptest::option::of(value)
    }

    prop_compose! {
        fn a_minute()(
            counts in proptest::collection::vec(0u64..5000, 10),
            floats in proptest::collection::vec(figure(), 10),
            flags in any::<[bool; 2]>(),
            buckets in proptest::collection::vec(0u64..50, 0..=BUCKETS),
            heap in (optional(any::<u64>()), optional(0u64..1 << 40), optional(0u64..1 << 40)),
            cpu in (optional(figure()), optional(figure()), optional(figure())),
            added_cpu in optional((figure(), optional(figure()), optional(figure()))),
        ) -> Minute {
            let mut minute = Minute {
                pause_count: counts[0],
                pause_total_seconds: floats[0],
                pause_max_seconds: floats[1],
                pause_max_lower_bound: flags[0],
                seen_partly: flags[1],
                records_lost: counts[1],
                pause_histogram: Histogram { buckets, count: counts[2], sum: floats[2] },
                safepoint_count: counts[3],
                safepoint_total_seconds: floats[3],
                safepoint_max_seconds: floats[4],
                time_to_safepoint_max_seconds: floats[5],
                full_gcs: counts[4],
                evacuation_failures: counts[5],
                degenerated_gcs: counts[6],
                allocation_stalls: counts[7],
                allocation_stall_seconds: floats[6],
                concurrent_cycle_seconds: floats[7],
                heap_after_gc_bytes: heap.0,
                heap_committed_bytes: heap.1,
                live_data_bytes: heap.2,
                allocated_bytes: counts[8] << 20,
                promoted_bytes: counts[9] << 10,
                gc_cpu_seconds: cpu.0,
                process_cpu_seconds: cpu.1,
                cpus: cpu.2,
                ..Minute::default()
            };
            if let Some((gc, process, cpus)) = added_cpu {
                minute.add_gc_cpu(gc, process, cpus);
            }
            if floats[8] < 0.5 {
                minute.pause_histogram.sum = minute.pause_total_seconds;
            }
            minute
        }
    }

    proptest! {
        #[test]
        fn any_minutes_read_back_as_they_were(
            minutes in proptest::collection::vec((0i64..3, a_minute()), 1..40),
        ) {
            let mut key = 1_700_000_000 - 60;
            let keyed: Vec<(i64, Minute)> = minutes
                .into_iter()
                .map(|(gap, mut minute)| {
                    key += 60 * (gap + 1);
                    minute.start = minute_start(key);
                    (key, minute)
                })
                .collect();
            let (_, back) = round_trip(&keyed);
            prop_assert_eq!(as_json(&back), as_json(&keyed));
        }

        #[test]
        fn any_durations_read_back_bit_for_bit(values in proptest::collection::vec(any::<f64>(), 1..20)) {
            let mut out = Vec::new();
            for value in &values {
                encode_float(value.to_bits(), &mut out);
            }
            let mut bytes = &out[..];
            for value in &values {
                prop_assert_eq!(decode_float(&mut bytes), Some(value.to_bits()));
            }
            prop_assert!(bytes.is_empty());
        }
    }
}
