//! A discovered JVM's own stream across agent restarts. Its minutes,
//! latency and counts are checkpointed as a configured log's are, keyed by
//! the JVM (`pid@start_ticks`), so that a restart neither erases what was
//! published nor presents the minutes it did not watch as whole.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::model::minutes::minute_of;
use crate::model::runtime::PauseCounters;
use crate::store::StreamState;

/// What a restarted agent needs of a discovered JVM without a GC log.
#[derive(Debug, Clone)]
pub struct DiscoveredCheckpoint {
    /// `pid@start_ticks`: a pid reused by another process is not the JVM.
    pub jvm: String,
    /// The minute (key) the agent was watching in when this was taken:
    /// from then until its restart it saw nothing of the JVM. Kept to the
    /// minute, so that an idle JVM's record changes once a minute.
    pub watched_minute: i64,
    pub state: Arc<StreamState>,
    /// The hsperfdata pause counters at the last sample, by collector:
    /// pauses recovered from them while the agent was down are counted at
    /// its first sample, not lost.
    pub counters: BTreeMap<String, PauseCounters>,
}

impl DiscoveredCheckpoint {
    /// The stream as the previous run left it, with `labels` (the
    /// configuration's, not the checkpoint's) and every minute from the
    /// one it was last watched in to `now`'s flagged as seen partly, its
    /// maximum a lower bound: pauses in between were not seen one by one.
    pub fn resumed(
        self,
        labels: BTreeMap<String, String>,
        now: DateTime<Utc>,
    ) -> (StreamState, BTreeMap<String, PauseCounters>) {
        let mut stream = Arc::unwrap_or_clone(self.state);
        stream.labels = labels;
        // Figures of the previous run's samples: the first sample restates them.
        stream.runtime = None;
        stream.exited = false;
        stream.readable = true;
        stream
            .jvm
            .mark_seen_partly(self.watched_minute, minute_of(now), true);
        (stream, self.counters)
    }

    /// The stream of a JVM that exited while the agent was down: its
    /// minutes stay in `/api/v1/minutes` until `history` drops them.
    pub fn exited(self) -> StreamState {
        let mut stream = Arc::unwrap_or_clone(self.state);
        stream.exited = true;
        stream.runtime = None;
        let watched = self.watched_minute;
        stream.jvm.mark_seen_partly(watched, watched, true);
        stream
    }
}
