//! What changed in the model since a reader last looked, for the checkpoint
//! journal: it reads a snapshot without the writer's lock and must write
//! only what changed, so the writer leaves marks the snapshot carries.
//! Neither mark is serialized: a restored state starts with none.

use std::collections::{BTreeMap, VecDeque};

/// How many recently changed keys are remembered: a checkpoint a second
/// finds a few. Remembering every minute of a day cost more than the
/// packed minutes themselves (and was copied with every snapshot).
pub const CHANGES_KEPT: usize = 64;

/// The generation at which each recently changed key of a keyed
/// collection (minutes by start) last changed. Every change takes a new
/// generation, so a reader that remembers the generation it saw finds
/// exactly the keys changed since, or learns that it fell behind.
#[derive(Debug, Clone, Default)]
pub struct Changes {
    generation: u64,
    /// The newest generation whose key is no longer remembered.
    forgotten: u64,
    by_key: BTreeMap<i64, u64>,
    by_generation: BTreeMap<u64, i64>,
}

impl Changes {
    /// Marks `key` changed now.
    pub fn touch(&mut self, key: i64) {
        self.generation += 1;
        if let Some(previous) = self.by_key.insert(key, self.generation) {
            self.by_generation.remove(&previous);
        }
        self.by_generation.insert(self.generation, key);
        if self.by_generation.len() > CHANGES_KEPT {
            if let Some((generation, key)) = self.by_generation.pop_first() {
                self.by_key.remove(&key);
                self.forgotten = generation;
            }
        }
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether [`since`](Self::since) `generation` gives every key changed
    /// after it: it is not from the future, and not so old that some are
    /// forgotten.
    pub fn covers(&self, generation: u64) -> bool {
        (self.forgotten..=self.generation).contains(&generation)
    }

    /// Keys changed after `generation`, in the order of their last change.
    pub fn since(&self, generation: u64) -> impl Iterator<Item = i64> + '_ {
        self.by_generation
            .range(generation.saturating_add(1)..)
            .map(|(_, key)| *key)
    }

    /// Forgets keys below `key`, as their collection dropped them.
    pub fn prune_before(&mut self, key: i64) {
        let kept = self.by_key.split_off(&key);
        for generation in self.by_key.values() {
            self.by_generation.remove(generation);
        }
        self.by_key = kept;
    }
}

/// How many arrivals (stops) a reader may fall behind by and still find
/// every one: at a checkpoint a second, far more than a JVM stops in one.
pub const ARRIVALS_KEPT: usize = 4096;

/// Items appended to a collection that reorders or prunes them (stops by
/// start): a count of every arrival and the most recent ones, so that a
/// reader finds those that arrived since it last looked, or learns that it
/// fell too far behind.
#[derive(Debug, Clone)]
pub struct Arrivals<T> {
    total: u64,
    recent: VecDeque<T>,
}

impl<T> Default for Arrivals<T> {
    fn default() -> Self {
        Arrivals {
            total: 0,
            recent: VecDeque::new(),
        }
    }
}

impl<T> Arrivals<T> {
    pub fn push(&mut self, item: T) {
        self.total += 1;
        if self.recent.len() == ARRIVALS_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(item);
    }

    /// Arrivals since the first.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// The items that arrived after the first `seen`, oldest first; `None`
    /// when some of them are no longer kept (or `seen` is from elsewhere).
    pub fn since(&self, seen: u64) -> Option<impl Iterator<Item = &T>> {
        let new = usize::try_from(self.total.checked_sub(seen)?).ok()?;
        let skip = self.recent.len().checked_sub(new)?;
        Some(self.recent.iter().skip(skip))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_since_a_generation_are_the_keys_touched_after_it() {
        let mut changes = Changes::default();
        changes.touch(60);
        changes.touch(120);
        let seen = changes.generation();
        changes.touch(60);
        changes.touch(180);
        assert_eq!(changes.since(seen).collect::<Vec<_>>(), [60, 180]);
        assert_eq!(changes.since(0).count(), 3);
        changes.prune_before(120);
        assert_eq!(changes.since(0).collect::<Vec<_>>(), [120, 180]);
        assert!(changes.covers(0) && changes.covers(seen) && !changes.covers(5));
        for key in 0..CHANGES_KEPT as i64 {
            changes.touch(key);
        }
        assert!(!changes.covers(seen), "fell behind");
        assert!(changes.covers(changes.generation() - CHANGES_KEPT as u64 + 1));
        assert_eq!(changes.since(0).count(), CHANGES_KEPT);
    }

    #[test]
    fn arrivals_say_when_a_reader_fell_behind() {
        let mut arrivals = Arrivals::default();
        for i in 0..ARRIVALS_KEPT + 10 {
            arrivals.push(i);
        }
        let total = arrivals.total();
        assert_eq!(
            arrivals
                .since(total - 2)
                .unwrap()
                .copied()
                .collect::<Vec<_>>(),
            [ARRIVALS_KEPT + 8, ARRIVALS_KEPT + 9]
        );
        assert!(arrivals.since(total - ARRIVALS_KEPT as u64).is_some());
        assert!(arrivals.since(5).is_none(), "fell behind");
        assert!(arrivals.since(total + 1).is_none());
    }
}
