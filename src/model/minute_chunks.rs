//! A stream's minutes: the newest few open to writes, the rest packed
//! ([`minute_codec`]) in chunks of an hour behind an `Arc`. A day of
//! minutes as structs was 1.6-2 MiB a JVM; packed it is tens of kilobytes.
//! Readers (a scrape, the OTLP thread, the checkpoint, every second) hold
//! snapshots of the stream; the next write copies only the open minutes and
//! shares the packed chunks. A write to a packed minute (a late event, a
//! clock set back) unpacks its chunk, to be packed again later.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use crate::model::minute_codec;
use crate::model::minutes::Minute;

/// The span of one chunk, in seconds.
const CHUNK_SECONDS: i64 = 3600;

/// Open minutes beyond which the older ones are packed, and how many of
/// the newest stay open: events land in the current minute, and sometimes
/// the one before.
const OPEN_LIMIT: usize = 8;
const OPEN_KEPT: usize = 3;

/// The start of the chunk that holds the minute keyed `key`.
fn chunk_of(key: i64) -> i64 {
    key.saturating_sub(key.rem_euclid(CHUNK_SECONDS))
}

/// Packed minutes of one chunk, with their first and last keys.
#[derive(Debug)]
struct Packed {
    bytes: Box<[u8]>,
    first: i64,
    last: i64,
}

impl Packed {
    /// `None` for no minutes.
    fn new(minutes: &BTreeMap<i64, Minute>) -> Option<Arc<Packed>> {
        let (first, last) = (*minutes.keys().next()?, *minutes.keys().next_back()?);
        let bytes = minute_codec::pack(minutes.iter().map(|(k, m)| (*k, m))).into_boxed_slice();
        Some(Arc::new(Packed { bytes, first, last }))
    }

    fn unpack(&self) -> BTreeMap<i64, Minute> {
        minute_codec::unpack(&self.bytes).collect()
    }
}

/// Minutes by key (seconds since the epoch): a key is either open or in
/// the packed chunk its key falls in, never both.
#[derive(Debug, Clone, Default)]
pub struct MinuteChunks {
    open: BTreeMap<i64, Minute>,
    packed: BTreeMap<i64, Arc<Packed>>,
}

impl MinuteChunks {
    pub fn get(&self, key: i64) -> Option<Cow<'_, Minute>> {
        if let Some(minute) = self.open.get(&key) {
            return Some(Cow::Borrowed(minute));
        }
        let packed = self.packed.get(&chunk_of(key))?;
        if !(packed.first..=packed.last).contains(&key) {
            return None;
        }
        minute_codec::unpack(&packed.bytes)
            .find(|(k, _)| *k >= key)
            .filter(|(k, _)| *k == key)
            .map(|(_, minute)| Cow::Owned(minute))
    }

    pub fn contains_key(&self, key: i64) -> bool {
        self.get(key).is_some()
    }

    /// The minute keyed `key`, made with `make` when absent. A write to a
    /// packed minute unpacks its whole chunk, so that a run of writes to
    /// old minutes (the minutes an agent was down for, flagged at its
    /// restart) unpacks and packs each chunk once, not once a minute.
    pub fn get_or_insert_with(&mut self, key: i64, make: impl FnOnce() -> Minute) -> &mut Minute {
        if !self.open.contains_key(&key) {
            if self.open.len() >= OPEN_LIMIT {
                self.pack_all_but_newest(OPEN_KEPT);
            }
            let chunk = chunk_of(key);
            let holds =
                (self.packed.get(&chunk)).is_some_and(|p| (p.first..=p.last).contains(&key));
            if holds {
                if let Some(packed) = self.packed.remove(&chunk) {
                    self.open.extend(packed.unpack());
                }
            }
        }
        self.open.entry(key).or_insert_with(make)
    }

    pub fn insert(&mut self, key: i64, minute: Minute) {
        *self.get_or_insert_with(key, Minute::default) = minute;
    }

    fn replace_chunk(&mut self, chunk: i64, minutes: &BTreeMap<i64, Minute>) {
        match Packed::new(minutes) {
            Some(packed) => self.packed.insert(chunk, packed),
            None => self.packed.remove(&chunk),
        };
    }

    /// Packs the open minutes but the newest `kept`, into the chunks their keys fall in.
    fn pack_all_but_newest(&mut self, kept: usize) {
        let Some(&from) = self.open.keys().rev().nth(kept.saturating_sub(1)) else {
            return;
        };
        let newest = self.open.split_off(&from);
        let mut older = std::mem::replace(&mut self.open, newest);
        while let Some(&first) = older.keys().next() {
            let chunk = chunk_of(first);
            let after = older.split_off(&chunk.saturating_add(CHUNK_SECONDS));
            let mut minutes = std::mem::replace(&mut older, after);
            if let Some(packed) = self.packed.get(&chunk) {
                minutes.extend(packed.unpack());
            }
            self.replace_chunk(chunk, &minutes);
        }
    }

    /// Minutes keyed in `range`, in order.
    pub fn range(&self, range: Range<i64>) -> std::vec::IntoIter<(i64, Cow<'_, Minute>)> {
        if range.start >= range.end {
            return Vec::new().into_iter();
        }
        let mut minutes: Vec<(i64, Cow<'_, Minute>)> = self
            .packed
            .range(chunk_of(range.start)..range.end)
            .flat_map(|(_, packed)| minute_codec::unpack(&packed.bytes))
            .filter(|(key, _)| range.contains(key))
            .map(|(key, minute)| (key, Cow::Owned(minute)))
            .collect();
        let packed = minutes.len();
        minutes.extend(
            self.open
                .range(range)
                .map(|(key, minute)| (*key, Cow::Borrowed(minute))),
        );
        // Open minutes are the newest but for those a late write unpacked.
        let newest_packed = minutes[..packed].last().map(|(key, _)| *key);
        if newest_packed
            .is_some_and(|newest| minutes.get(packed).is_some_and(|(key, _)| *key < newest))
        {
            minutes.sort_by_key(|(key, _)| *key);
        }
        minutes.into_iter()
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = Cow<'_, Minute>> {
        self.range(i64::MIN..i64::MAX).map(|(_, minute)| minute)
    }

    pub fn first_key(&self) -> Option<i64> {
        let packed = self.packed.values().next().map(|p| p.first);
        let open = self.open.keys().next().copied();
        packed.into_iter().chain(open).min()
    }

    pub fn last_key(&self) -> Option<i64> {
        let packed = self.packed.values().next_back().map(|p| p.last);
        let open = self.open.keys().next_back().copied();
        packed.into_iter().chain(open).max()
    }

    /// Drops every minute keyed outside `keep`, unpacking only the chunks
    /// that are cut.
    pub fn retain_range(&mut self, keep: Range<i64>) {
        if keep.start >= keep.end {
            *self = MinuteChunks::default();
            return;
        }
        self.open = self.open.split_off(&keep.start);
        self.open.split_off(&keep.end);
        self.packed = self.packed.split_off(&chunk_of(keep.start));
        self.packed.split_off(&keep.end);
        let cut: Vec<i64> = self
            .packed
            .iter()
            .filter(|(_, p)| p.first < keep.start || p.last >= keep.end)
            .map(|(chunk, _)| *chunk)
            .collect();
        for chunk in cut {
            let mut minutes = self.packed[&chunk].unpack();
            minutes.retain(|key, _| keep.contains(key));
            self.replace_chunk(chunk, &minutes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::minutes::minute_start;

    fn minute(key: i64) -> Minute {
        Minute {
            start: minute_start(key),
            pause_count: key.unsigned_abs() % 7,
            pause_total_seconds: key as f64 / 1e5,
            ..Minute::default()
        }
    }

    fn keys(chunks: &MinuteChunks) -> Vec<i64> {
        chunks.range(i64::MIN..i64::MAX).map(|(k, _)| k).collect()
    }

    #[test]
    fn a_write_after_a_snapshot_shares_the_packed_chunks() {
        let mut chunks = MinuteChunks::default();
        for key in (0..3 * CHUNK_SECONDS).step_by(60) {
            chunks.insert(key, minute(key));
        }
        assert!(chunks.open.len() < OPEN_LIMIT, "the rest is packed");
        let reader = chunks.clone();
        chunks
            .get_or_insert_with(3 * CHUNK_SECONDS - 60, Minute::default)
            .pause_count += 100;
        let shared: Vec<bool> = (0..3)
            .map(|c| {
                Arc::ptr_eq(
                    &chunks.packed[&(c * CHUNK_SECONDS)],
                    &reader.packed[&(c * CHUNK_SECONDS)],
                )
            })
            .collect();
        assert_eq!(shared, [true, true, true]);
        // A late event in a packed minute unpacks its chunk, in the writer only.
        chunks
            .get_or_insert_with(CHUNK_SECONDS, Minute::default)
            .pause_count += 100;
        assert!(!chunks.packed.contains_key(&CHUNK_SECONDS));
        assert!(reader.packed.contains_key(&CHUNK_SECONDS));
        for (key, added) in [(CHUNK_SECONDS, 100), (3 * CHUNK_SECONDS - 60, 100), (60, 0)] {
            assert_eq!(
                reader.get(key).unwrap().pause_count,
                minute(key).pause_count
            );
            assert_eq!(
                chunks.get(key).unwrap().pause_count,
                minute(key).pause_count + added
            );
        }
        assert_eq!(keys(&chunks), keys(&reader));
        let everything: Vec<Minute> = chunks.values().map(Cow::into_owned).collect();
        assert_eq!(everything.len(), 180);
        assert_eq!(
            everything[60].pause_count,
            minute(CHUNK_SECONDS).pause_count + 100
        );
    }

    #[test]
    fn ranges_and_cuts_cross_chunks_as_one_map_would() {
        let mut chunks = MinuteChunks::default();
        let mut map = BTreeMap::new();
        // Out of order, so that open and packed minutes interleave.
        let descending = (-12..18).rev().map(|i| i * 600);
        let late = (-2 * CHUNK_SECONDS + 300..3 * CHUNK_SECONDS).step_by(1200);
        for key in descending.chain(late) {
            chunks.insert(key, minute(key));
            map.insert(key, minute(key));
        }
        let expect = |map: &BTreeMap<i64, Minute>, range: Range<i64>| -> Vec<(i64, Minute)> {
            map.range(range.start..range.end.max(range.start))
                .map(|(k, m)| (*k, m.clone()))
                .collect()
        };
        let got = |chunks: &MinuteChunks, range: Range<i64>| -> Vec<(i64, Minute)> {
            chunks
                .range(range)
                .map(|(k, m)| (k, m.into_owned()))
                .collect()
        };
        for range in [
            -4000..4000,
            3600..3601,
            0..0,
            Range { start: 5, end: -5 },
            -7200..10800,
            1200..7800,
        ] {
            assert_eq!(
                got(&chunks, range.clone()),
                expect(&map, range.clone()),
                "{range:?}"
            );
        }
        for key in map.keys() {
            assert_eq!(chunks.get(*key).as_deref(), map.get(key));
        }
        assert!(chunks.get(-2 * CHUNK_SECONDS + 60).is_none());
        assert_eq!(chunks.first_key(), map.keys().next().copied());
        assert_eq!(chunks.last_key(), map.keys().next_back().copied());
        chunks.retain_range(-3000..4800);
        map.retain(|k, _| (-3000..4800).contains(k));
        let all = i64::MIN..i64::MAX;
        assert_eq!(got(&chunks, all.clone()), expect(&map, all));
        assert!(chunks
            .packed
            .keys()
            .all(|chunk| [-3600, 0, 3600].contains(chunk)));
        chunks.retain_range(600..600);
        assert!(keys(&chunks).is_empty() && chunks.last_key().is_none());
    }

    proptest::proptest! {
        /// Writes anywhere, cuts, snapshots: always what one map would hold.
        #[test]
        fn any_writes_and_cuts_keep_what_one_map_would(
            ops in proptest::collection::vec((0u8..10, -300i64..300), 1..300),
        ) {
            let mut chunks = MinuteChunks::default();
            let mut map = BTreeMap::new();
            let mut snapshot = (chunks.clone(), map.clone());
            for (op, at) in ops {
                let key = at * 60;
                match op {
                    0 => {
                        let keep = key..key + 7200;
                        chunks.retain_range(keep.clone());
                        map.retain(|k, _| keep.contains(k));
                    }
                    1 => snapshot = (chunks.clone(), map.clone()),
                    _ => {
                        chunks.get_or_insert_with(key, || minute(key)).pause_count += 1;
                        map.entry(key).or_insert_with(|| minute(key)).pause_count += 1;
                    }
                }
                let got = chunks.get(key);
                proptest::prop_assert_eq!(got.as_deref(), map.get(&key));
            }
            for (chunks, map) in [(&chunks, &map), (&snapshot.0, &snapshot.1)] {
                let all: Vec<(i64, Minute)> = chunks.range(i64::MIN..i64::MAX).map(|(k, m)| (k, m.into_owned())).collect();
                let want: Vec<(i64, Minute)> = map.iter().map(|(k, m)| (*k, m.clone())).collect();
                proptest::prop_assert_eq!(all, want);
                proptest::prop_assert_eq!(chunks.first_key(), map.keys().next().copied());
                proptest::prop_assert_eq!(chunks.last_key(), map.keys().next_back().copied());
            }
        }
    }
}
