//! The checkpoint's format: the types the journal writes and reads, owned
//! here rather than derived from the sources' and the model's in-memory
//! types, so that changing those is a compile error in a conversion below,
//! not a silent change of what is on disk (`tests/fixtures/checkpoint-v5`
//! pins it).
//!
//! Each record type names the in-memory type it records and the version of
//! the format (`SourceV5` is a [`SourceCheckpoint`](crate::sources::SourceCheckpoint)
//! as version 5 writes it). The JSON carries no version: the manifest's
//! says which types read a journal. Version 5's source records are those of
//! versions 1 to 4 as well. The journal writes every changed stream every
//! second, so writing borrows the model's strings and collections
//! (`From<&'a Model>`, `Cow`s) and copies only small plain parts
//! (`both_ways!`); reading converts back (`into_model`, `From`). Each
//! conversion names every field of the type it builds (no `..`), so a field
//! added to the model does not compile until its record has it.
//!
//! Changing the format: add the new version's types beside these (the
//! changed ones only), write them, bump [`VERSION`](super::VERSION), and
//! read the older version with its own types, migrated to the model on
//! load; commit a fixture of the new version, and keep the old one loading.
//!
//! `Minute`, `Histogram`, `LatencySummary`, `Attribution`, `Stop`,
//! `EventCounters`, `GcCpu` and `Correlation` keep serde derives for the
//! HTTP API and `analyze`, which the checkpoint does not depend on. The
//! parsers' states and types (`GcLogParser`, `AccessLogParser`,
//! `ParseStats`, `AccessStats`, `Collector`, `LogTime`, `Name`) are written
//! through the parsers crate's own derives: it is pure, its state is
//! private and serialisable by design for this use, and mirroring it here
//! would mean opening its internals. A change to them changes the format:
//! the fixture test says so.

/// `From` both ways between a plain model type and its record, each field
/// converted by one expression of `$v` that serves both directions.
macro_rules! both_ways {
    ($model:ident, $record:ident, |$v:ident| { $($field:ident: $convert:expr),* $(,)? }) => {
        impl From<$model> for $record {
            fn from($v: $model) -> Self {
                $record { $($field: $convert),* }
            }
        }

        impl From<$record> for $model {
            fn from($v: $record) -> Self {
                $model { $($field: $convert),* }
            }
        }
    };
}

/// A record enum of unit variants, named as the model's are (snake case),
/// with `From` both ways.
macro_rules! unit_enum {
    ($(#[$doc:meta])* $record:ident <=> $model:ident { $($(#[$attr:meta])* $variant:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $record {
            $($(#[$attr])* $variant),*
        }

        impl From<$model> for $record {
            fn from(value: $model) -> Self {
                match value {
                    $($model::$variant => $record::$variant),*
                }
            }
        }

        impl From<$record> for $model {
            fn from(value: $record) -> Self {
                match value {
                    $($record::$variant => $model::$variant),*
                }
            }
        }
    };
}

mod histogram;
mod jvm;
mod latency;
mod minutes;
mod runtime;
mod sources;
mod stream;

pub use latency::LatencyMinuteV5;
pub use minutes::MinuteV5;
pub use sources::{AccessLogV5, GcLogV5, SourceV5};
