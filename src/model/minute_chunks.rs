//! A stream's minutes in chunks of an hour, each behind an `Arc`. Readers
//! (a scrape, the OTLP thread, the checkpoint, every second) hold snapshots
//! of the stream; the next write then copies the stream, which used to copy
//! its 24 h of minutes. Now it copies the map of chunks (24 pointers) and,
//! on the write itself, the one chunk it touches.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};

use crate::model::minutes::Minute;

/// The span of one chunk, in seconds.
const CHUNK_SECONDS: i64 = 3600;

/// The start of the chunk that holds the minute keyed `key`.
fn chunk_of(key: i64) -> i64 {
    key.saturating_sub(key.rem_euclid(CHUNK_SECONDS))
}

/// Minutes by key (seconds since the epoch), in chunks shared between
/// copies until one of them writes.
#[derive(Debug, Clone, Default)]
pub struct MinuteChunks {
    chunks: BTreeMap<i64, Arc<BTreeMap<i64, Minute>>>,
}

impl MinuteChunks {
    pub fn get(&self, key: i64) -> Option<&Minute> {
        self.chunks.get(&chunk_of(key))?.get(&key)
    }

    pub fn contains_key(&self, key: i64) -> bool {
        self.get(key).is_some()
    }

    /// The minute keyed `key`, made with `make` when absent; its chunk is
    /// copied first if a reader holds it.
    pub fn get_or_insert_with(&mut self, key: i64, make: impl FnOnce() -> Minute) -> &mut Minute {
        let chunk = self.chunks.entry(chunk_of(key)).or_default();
        Arc::make_mut(chunk).entry(key).or_insert_with(make)
    }

    pub fn insert(&mut self, key: i64, minute: Minute) {
        *self.get_or_insert_with(key, Minute::default) = minute;
    }

    /// Minutes keyed in `range`, in order.
    pub fn range(&self, range: Range<i64>) -> impl DoubleEndedIterator<Item = (&i64, &Minute)> {
        let chunks = if range.start < range.end {
            self.chunks.range(chunk_of(range.start)..range.end)
        } else {
            self.chunks.range(0..0)
        };
        chunks.flat_map(move |(_, chunk)| chunk.range(range.clone()))
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Minute> {
        self.chunks.values().flat_map(|chunk| chunk.values())
    }

    pub fn last_key(&self) -> Option<i64> {
        self.chunks
            .values()
            .next_back()?
            .keys()
            .next_back()
            .copied()
    }

    /// Drops every minute keyed outside `keep`, copying only the chunks
    /// that are cut.
    pub fn retain_range(&mut self, keep: Range<i64>) {
        if keep.start >= keep.end {
            self.chunks.clear();
            return;
        }
        self.chunks = self.chunks.split_off(&chunk_of(keep.start));
        self.chunks.split_off(&keep.end);
        let ends = [self.chunks.keys().next(), self.chunks.keys().next_back()];
        for start in ends.into_iter().flatten().copied().collect::<Vec<_>>() {
            let Some(chunk) = self.chunks.get_mut(&start) else {
                continue;
            };
            let (first, last) = (chunk.keys().next(), chunk.keys().next_back());
            if first.is_some_and(|k| *k < keep.start) || last.is_some_and(|k| *k >= keep.end) {
                let chunk = Arc::make_mut(chunk);
                *chunk = chunk.split_off(&keep.start);
                chunk.split_off(&keep.end);
            }
            if chunk.is_empty() {
                self.chunks.remove(&start);
            }
        }
    }
}

/// Read from a checkpoint of version 1 or 2 as the plain map it was.
impl<'de> Deserialize<'de> for MinuteChunks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut chunks = MinuteChunks::default();
        for (key, minute) in BTreeMap::<i64, Minute>::deserialize(deserializer)? {
            chunks.insert(key, minute);
        }
        Ok(chunks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(chunks: &MinuteChunks) -> Vec<i64> {
        chunks.range(i64::MIN..i64::MAX).map(|(k, _)| *k).collect()
    }

    #[test]
    fn a_write_copies_only_the_chunk_it_touches() {
        let mut chunks = MinuteChunks::default();
        for key in (0..3 * CHUNK_SECONDS).step_by(60) {
            chunks.insert(key, Minute::default());
        }
        let reader = chunks.clone();
        chunks
            .get_or_insert_with(2 * CHUNK_SECONDS, Minute::default)
            .pause_count += 1;
        let shared: Vec<bool> = (0..3)
            .map(|c| {
                Arc::ptr_eq(
                    &chunks.chunks[&(c * CHUNK_SECONDS)],
                    &reader.chunks[&(c * CHUNK_SECONDS)],
                )
            })
            .collect();
        assert_eq!(shared, [true, true, false]);
        assert_eq!(reader.get(2 * CHUNK_SECONDS).unwrap().pause_count, 0);
        assert_eq!(chunks.get(2 * CHUNK_SECONDS).unwrap().pause_count, 1);
    }

    #[test]
    fn ranges_and_cuts_cross_chunks_as_one_map_would() {
        let mut chunks = MinuteChunks::default();
        let mut map = BTreeMap::new();
        for key in (-2 * CHUNK_SECONDS..3 * CHUNK_SECONDS).step_by(600) {
            chunks.insert(key, Minute::default());
            map.insert(key, ());
        }
        let expect = |range: Range<i64>| -> Vec<i64> {
            map.range(range.start..range.end.max(range.start))
                .map(|(k, _)| *k)
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
            let got: Vec<i64> = chunks.range(range.clone()).map(|(k, _)| *k).collect();
            assert_eq!(got, expect(range.clone()), "{range:?}");
            let back: Vec<i64> = chunks.range(range.clone()).rev().map(|(k, _)| *k).collect();
            assert_eq!(
                back,
                expect(range.clone()).into_iter().rev().collect::<Vec<_>>()
            );
        }
        assert_eq!(chunks.last_key(), map.keys().next_back().copied());
        chunks.retain_range(-3000..4800);
        assert_eq!(keys(&chunks), expect(-3000..4800));
        assert_eq!(chunks.chunks.len(), 3);
        chunks.retain_range(600..600);
        assert!(keys(&chunks).is_empty() && chunks.last_key().is_none());
    }
}
