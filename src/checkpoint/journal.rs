//! The checkpoint journal: `journal.N` in `checkpoint_dir`, JSON lines
//! appended at every checkpoint for what changed since the one before, each
//! checkpoint closed by a commit line and synced. A restart replays the
//! records up to the last commit; a torn tail after it is cut off. A
//! checkpoint whose records do not match their checksum, or do not parse, is
//! damaged: the replay stops at the checkpoint before it, logs what it cut
//! off and keeps those bytes in `journal.N.damaged` for a look.
//!
//! Every record of one checkpoint is in one commit, so an access log's
//! position and the requests it handed to its GC stream's latency state are
//! committed together, as they were in one file before.
//!
//! Records (one per line, tagged by kind):
//! - `source`: a source's state without its collections (see below), when
//!   it changed; `fresh`: the same, voiding everything recorded for the
//!   source before (the start of its full record). Sources are numbered in
//!   the order these records first name them in a journal.
//! - `delta`: a source's number and what changed in its state since the
//!   record before ([`delta`](super::delta)): a live stream's second of
//!   pauses in some 100 bytes instead of its 2 KB record.
//! - `minutes`, `latency_minutes`: a GC stream's minutes that changed;
//!   `minute_delta`: the change of its newest minute since it was written.
//! - `requests`: requests that arrived for one pending minute, from the
//!   index `from` of that minute's list; `stops`: stops as they arrived.
//!   Both as a [`Timeline`].
//! - `packed`: the records of one checkpoint, deflated and in base64, when
//!   they are many (a host of live streams): the same fields of the same
//!   streams, one checkpoint after another, pack about four to one.
//! - `sealed`: the end of a checkpoint: its sequence number and the CRC-32
//!   of its records (every byte since the line that closed the checkpoint
//!   before) and of that number. Journals of version 3 end each checkpoint
//!   with `commit`, its sequence number alone; they still replay.
//!
//! A source's state and a minute are written as the checkpoint's record
//! types (`records`: `SourceV5`, `MinuteV5`, `LatencyMinuteV5`), the deltas
//! taken over their JSON. The records leave the collections out, and read
//! them from checkpoints of versions 1 and 2, which hold them. The writer
//! finds what changed from a snapshot through the marks the model leaves
//! ([`crate::model::changes`]); when it cannot (it fell behind), it writes
//! the source in full.
//!
//! When the journal has grown past [`COMPACT_FROM`] and twice the full
//! snapshot it started with, the next checkpoint writes `journal.N+1` with a
//! full snapshot (plain records: no deltas, not packed), switches the
//! manifest to it and deletes the old one.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::delta;
use super::records::{LatencyMinuteV5, MinuteV5, SourceV5};
use super::timeline::{nanos, seconds_of, time, whole_nanos, Timeline};
use super::{write_atomically, Manifest, FILE_NAME, VERSION};
use crate::model::correlate::{LatencyMinute, RequestTiming, Stop};
use crate::model::minutes::{minute_start, Minute};
use crate::sources::{SourceCheckpoint, SourceKey};

/// The journal is compacted once it is larger than this and than twice its
/// opening snapshot: a small host compacts rarely, a large one in
/// proportion to its state.
pub const COMPACT_FROM: u64 = 4 << 20;

const NAME_PREFIX: &str = "journal.";

/// A checkpoint's records are packed from this size on, when that is
/// shorter: below it the records stay readable.
const PACK_FROM: usize = 4096;

/// What a packed checkpoint may inflate to: far more than any checkpoint
/// holds; past it the line is damaged, not a reason to run out of memory.
const PACKED_MAX: u64 = 1 << 30;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Record<'a> {
    Source(SourceV5<'a>),
    Fresh(SourceV5<'a>),
    /// A source's number and the change of its state.
    Delta(usize, Vec<Value>),
    Minutes {
        log: Cow<'a, str>,
        minutes: Vec<MinuteV5>,
    },
    /// A source's number, the minute's key and the minute's change.
    MinuteDelta(usize, i64, Vec<Value>),
    LatencyMinutes {
        log: Cow<'a, str>,
        minutes: Vec<LatencyMinuteV5>,
    },
    Requests {
        log: Cow<'a, str>,
        minute: i64,
        from: usize,
        times: Timeline,
        /// The durations, when some are not whole nanoseconds (the access
        /// log parser's always are): `times` would round them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seconds: Option<Vec<f64>>,
    },
    Stops {
        log: Cow<'a, str>,
        names: Vec<Cow<'a, str>>,
        /// Each stop's index in `names`.
        name_of: Vec<usize>,
        times: Timeline,
    },
    Packed(String),
    Commit(u64),
    Sealed {
        sequence: u64,
        crc32: u32,
    },
}

/// The checksum of a checkpoint's records and its sequence number.
fn checksum(records: &[u8], sequence: u64) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(records);
    hasher.update(&sequence.to_le_bytes());
    hasher.finalize()
}

/// Closes the checkpoint whose records are all of `buf`.
fn seal(buf: &mut Vec<u8>, sequence: u64) -> Result<()> {
    let crc32 = checksum(buf, sequence);
    line(buf, &Record::Sealed { sequence, crc32 })
}

fn line(buf: &mut Vec<u8>, record: &Record) -> Result<()> {
    serde_json::to_writer(&mut *buf, record)?;
    buf.push(b'\n');
    Ok(())
}

fn stops_record<'a>(log: &'a str, stops: impl Iterator<Item = &'a Stop>) -> Option<Record<'a>> {
    let stops: Vec<&Stop> = stops.collect();
    if stops.is_empty() {
        return None;
    }
    let mut names: Vec<Cow<str>> = Vec::new();
    let name_of = stops
        .iter()
        .map(|stop| match names.iter().position(|n| *n == stop.name) {
            Some(index) => index,
            None => {
                names.push(Cow::Borrowed(&stop.name));
                names.len() - 1
            }
        })
        .collect();
    let intervals: Vec<(i128, i128)> = stops
        .iter()
        .map(|s| (nanos(s.start), nanos(s.end) - nanos(s.start)))
        .collect();
    Some(Record::Stops {
        log: Cow::Borrowed(log),
        names,
        name_of,
        times: Timeline::new(&intervals),
    })
}

fn requests_record<'a>(
    log: &'a str,
    minute: i64,
    from: usize,
    requests: &[RequestTiming],
) -> Record<'a> {
    let intervals: Vec<(i128, i128)> = requests
        .iter()
        .map(|r| (nanos(r.start), whole_nanos(r.duration_s)))
        .collect();
    let exact = requests
        .iter()
        .zip(&intervals)
        .all(|(r, (_, length))| seconds_of(*length) == r.duration_s);
    Record::Requests {
        log: Cow::Borrowed(log),
        minute,
        from,
        times: Timeline::new(&intervals),
        seconds: (!exact).then(|| requests.iter().map(|r| r.duration_s).collect()),
    }
}

/// What the journal holds of one source: its last record, and how far its
/// collections' marks had come when it was written.
#[derive(Debug, Clone, Default)]
struct Written {
    /// The state last written, as the base of the next delta; `None` for
    /// a restored source, written in full at its first checkpoint.
    base: Option<Value>,
    /// The newest minute written, by key, as the base of its next change.
    minute: Option<(i64, Value)>,
    minutes: u64,
    latency_minutes: u64,
    stops: u64,
    /// Requests written per pending minute.
    requests: BTreeMap<i64, usize>,
}

impl Written {
    /// For a source restored from the journal: its state starts with no
    /// marks, its pending requests are all in; its record is written again
    /// at the first checkpoint (the source's start changes it).
    fn restored(source: &SourceCheckpoint) -> Written {
        let requests = source.stream().and_then(|(_, state)| {
            state.latency.as_ref().map(|latency| {
                let pending = latency.pending();
                pending.iter().map(|(m, r)| (*m, r.len())).collect()
            })
        });
        Written {
            requests: requests.unwrap_or_default(),
            ..Written::default()
        }
    }
}

/// Appends the records of what changed in `source` since `before`; all of
/// it when there is no `before` or the marks say the writer fell behind.
/// `number` is the source's in the open journal, if it has one: deltas
/// name it. The bases of `before` are moved out, so that a checkpoint of
/// many streams does not hold their old and new records at once: should
/// it fail, the journal is rewritten in full at the next one.
fn changes(
    buf: &mut Vec<u8>,
    source: &SourceCheckpoint,
    before: Option<&mut Written>,
    number: Option<usize>,
) -> Result<Written> {
    let Some(before) = before else {
        return full(buf, source);
    };
    let mut out = Vec::new();
    let record = SourceV5::from(source);
    let value = serde_json::to_value(&record)?;
    let base = before.base.take().filter(|_| number.is_some());
    match (base.map(|base| delta::diff(&base, &value)), number) {
        (Some(Some(ops)), Some(number)) => {
            if !ops.is_empty() {
                line(&mut out, &Record::Delta(number, ops))?;
            }
        }
        _ => line(&mut out, &Record::Source(record))?,
    }
    let mut written = Written {
        base: Some(value),
        minute: before.minute.take(),
        minutes: before.minutes,
        latency_minutes: before.latency_minutes,
        stops: before.stops,
        requests: before.requests.clone(),
    };
    if let Some((log, state)) = source.stream() {
        let log = log.as_str();
        let minutes = &state.jvm.minutes;
        let marks = minutes.changes();
        if !marks.covers(before.minutes) {
            return full(buf, source);
        }
        let mut changed = Vec::new();
        for key in marks.since(before.minutes) {
            let Some(minute) = minutes.get(minute_start(key)) else {
                continue;
            };
            let minute = MinuteV5::from(minute.into_owned());
            let value = serde_json::to_value(&minute)?;
            let base = match (&written.minute, number) {
                (Some((written, base)), Some(number)) if *written == key => {
                    delta::diff(base, &value).map(|ops| (number, ops))
                }
                _ => None,
            };
            match base {
                Some((_, ops)) if ops.is_empty() => {}
                Some((number, ops)) => line(&mut out, &Record::MinuteDelta(number, key, ops))?,
                None => changed.push(minute),
            }
            if written
                .minute
                .as_ref()
                .is_none_or(|(newest, _)| *newest <= key)
            {
                written.minute = Some((key, value));
            }
        }
        if !changed.is_empty() {
            line(
                &mut out,
                &Record::Minutes {
                    log: Cow::Borrowed(log),
                    minutes: changed,
                },
            )?;
        }
        written.minutes = marks.generation();
        if let Some(latency) = &state.latency {
            let marks = latency.minute_changes();
            let arrivals = latency.arrived_stops();
            let (Some(stops), true) = (
                arrivals.since(before.stops),
                marks.covers(before.latency_minutes),
            ) else {
                return full(buf, source);
            };
            let changed: Vec<_> = marks
                .since(before.latency_minutes)
                .filter_map(|key| latency.minutes.get(&key).map(Into::into))
                .collect();
            if !changed.is_empty() {
                line(
                    &mut out,
                    &Record::LatencyMinutes {
                        log: Cow::Borrowed(log),
                        minutes: changed,
                    },
                )?;
            }
            if let Some(record) = stops_record(log, stops) {
                line(&mut out, &record)?;
            }
            written.latency_minutes = marks.generation();
            written.stops = arrivals.total();
            written.requests.clear();
            for (minute, requests) in latency.pending() {
                let from = before.requests.get(minute).copied().unwrap_or(0);
                let Some(new) = requests.get(from..) else {
                    return full(buf, source);
                };
                if !new.is_empty() {
                    line(&mut out, &requests_record(log, *minute, from, new))?;
                }
                written.requests.insert(*minute, requests.len());
            }
        }
    }
    buf.extend_from_slice(&out);
    Ok(written)
}

/// What replaying a journal builds: each source's record (as the JSON
/// value deltas apply to) and, apart, the collections of GC streams by
/// their log, put together at the end.
#[derive(Default)]
struct Replay {
    sources: BTreeMap<SourceKey, Value>,
    /// The sources by number, in the order records first named them.
    numbers: Vec<SourceKey>,
    minutes: BTreeMap<String, BTreeMap<i64, Minute>>,
    latency_minutes: BTreeMap<String, BTreeMap<i64, LatencyMinute>>,
    requests: BTreeMap<String, BTreeMap<i64, Vec<RequestTiming>>>,
    stops: BTreeMap<String, Vec<Stop>>,
}

impl Replay {
    fn insert(&mut self, source: &SourceCheckpoint) -> Result<()> {
        let key = source.key();
        if !self.sources.contains_key(&key) {
            self.numbers.push(key.clone());
        }
        self.sources
            .insert(key, serde_json::to_value(SourceV5::from(source))?);
        Ok(())
    }

    /// The key of source `number`.
    fn numbered(&self, number: usize) -> Result<&SourceKey> {
        self.numbers
            .get(number)
            .with_context(|| format!("no source numbered {number}"))
    }

    fn apply(&mut self, record: Record<'static>) -> Result<()> {
        match record {
            Record::Source(source) => self.insert(&source.into_model())?,
            Record::Fresh(source) => {
                let source = source.into_model();
                if let Some((log, _)) = source.stream() {
                    self.minutes.remove(&log);
                    self.latency_minutes.remove(&log);
                    self.requests.remove(&log);
                    self.stops.remove(&log);
                }
                self.insert(&source)?;
            }
            Record::Delta(number, ops) => {
                let key = self.numbered(number)?.clone();
                let value = self.sources.get_mut(&key).context("no such source")?;
                delta::apply(value, &ops)?;
            }
            Record::MinuteDelta(number, key, ops) => {
                let Some(log) = self.numbered(number)?.stream_name() else {
                    bail!("minutes of a source that has no stream");
                };
                let minute = self
                    .minutes
                    .get_mut(&log)
                    .and_then(|minutes| minutes.get_mut(&key))
                    .with_context(|| format!("no minute {key} to change"))?;
                let mut value = serde_json::to_value(MinuteV5::from(minute.clone()))?;
                delta::apply(&mut value, &ops)?;
                *minute = serde_json::from_value::<MinuteV5>(value)?.into();
            }
            Record::Minutes { log, minutes } => {
                let kept = self.minutes.entry(log.into_owned()).or_default();
                for minute in minutes {
                    kept.insert(minute.key(), minute.into());
                }
            }
            Record::LatencyMinutes { log, minutes } => {
                let kept = self.latency_minutes.entry(log.into_owned()).or_default();
                for minute in minutes {
                    let minute = LatencyMinute::from(minute);
                    kept.insert(minute.start.timestamp(), minute);
                }
            }
            Record::Requests {
                log,
                minute,
                from,
                times,
                seconds,
            } => {
                let kept = self.requests.entry(log.into_owned()).or_default();
                let list = kept.entry(minute).or_default();
                if list.len() != from {
                    bail!(
                        "requests of minute {minute} from {from}, but {} recorded",
                        list.len()
                    );
                }
                let intervals = times.intervals().context("damaged requests")?;
                if seconds.as_ref().is_some_and(|s| s.len() != intervals.len()) {
                    bail!("damaged requests");
                }
                for (index, (start, length)) in intervals.into_iter().enumerate() {
                    list.push(RequestTiming {
                        start: time(start).context("request out of range")?,
                        duration_s: seconds.as_ref().map_or(seconds_of(length), |s| s[index]),
                    });
                }
            }
            Record::Stops {
                log,
                names,
                name_of,
                times,
            } => {
                let intervals = times.intervals().context("damaged stops")?;
                if intervals.len() != name_of.len() {
                    bail!("damaged stops");
                }
                let kept = self.stops.entry(log.into_owned()).or_default();
                for ((start, length), name) in intervals.into_iter().zip(name_of) {
                    kept.push(Stop {
                        start: time(start).context("stop out of range")?,
                        end: time(start + length).context("stop out of range")?,
                        name: names.get(name).context("damaged stops")?.as_ref().into(),
                    });
                }
            }
            Record::Packed(_) => bail!("a packed record inside a packed one"),
            Record::Commit(_) | Record::Sealed { .. } => {}
        }
        Ok(())
    }

    /// Every source with its collections put back.
    fn finish(mut self) -> Result<Vec<SourceCheckpoint>> {
        let mut sources = Vec::with_capacity(self.sources.len());
        for (key, value) in std::mem::take(&mut self.sources) {
            let source: SourceV5 = serde_json::from_value(value)
                .with_context(|| format!("the state of {key:?} does not read back"))?;
            sources.push(self.put_back(source.into_model()));
        }
        Ok(sources)
    }

    /// A source with its collections.
    fn put_back(&mut self, mut source: SourceCheckpoint) -> SourceCheckpoint {
        if let Some((log, state)) = source.stream_mut() {
            let state = std::sync::Arc::make_mut(state);
            for minute in self
                .minutes
                .remove(&log)
                .into_iter()
                .flat_map(|m| m.into_values())
            {
                state.jvm.minutes.restore(minute);
            }
            if let Some(latency) = &mut state.latency {
                latency.restore(
                    self.latency_minutes
                        .remove(&log)
                        .into_iter()
                        .flat_map(|m| m.into_values()),
                    self.requests.remove(&log).unwrap_or_default(),
                    self.stops.remove(&log).unwrap_or_default(),
                );
            }
        }
        source
    }
}

/// The journal being appended to.
#[derive(Debug)]
struct Open {
    number: u64,
    file: File,
    /// Bytes up to the end of the last commit.
    len: u64,
    /// Bytes of the full snapshot it opened with.
    snapshot_len: u64,
}

impl Open {
    /// Appends `bytes` and syncs; on failure cuts the file back to its last
    /// commit, so that the next append does not follow a torn line.
    fn append(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let written = self
            .file
            .write_all(bytes)
            .and_then(|()| self.file.sync_data());
        if let Err(error) = written {
            return Err(self.file.set_len(self.len).err().unwrap_or(error));
        }
        self.len += bytes.len() as u64;
        Ok(())
    }
}

/// The writer of the checkpoint journal: it remembers what it wrote of
/// every source, so each checkpoint appends only what changed.
#[derive(Debug)]
pub struct Journal {
    dir: PathBuf,
    open: Option<Open>,
    sequence: u64,
    written: BTreeMap<SourceKey, Written>,
    /// The sources' numbers in the open journal.
    numbers: BTreeMap<SourceKey, usize>,
    /// A failure left the open journal in doubt: the next checkpoint
    /// starts a new one.
    compact_next: bool,
    /// Records of one checkpoint past which a new journal is written
    /// instead of appending them ([`COMPACT_FROM`]; lower in tests).
    append_max: u64,
}

/// Numbers `key` next, unless it has a number: as the replay numbers the
/// sources, in the order the journal's records first name them.
fn number(numbers: &mut BTreeMap<SourceKey, usize>, key: SourceKey) {
    let next = numbers.len();
    numbers.entry(key).or_insert(next);
}

/// The number of a journal file's name, `journal.N`.
fn number_of(name: &str) -> Option<u64> {
    let digits = name.strip_prefix(NAME_PREFIX)?;
    digits
        .bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| digits.parse().ok())
        .flatten()
}

pub(super) fn name_of(number: u64) -> String {
    format!("{NAME_PREFIX}{number}")
}

/// The journal files in `dir`, by number.
pub(super) fn journals_in(dir: &Path) -> Vec<u64> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| number_of(&e.ok()?.file_name().into_string().ok()?))
        .collect()
}

impl Journal {
    /// A writer with nothing written yet: its first checkpoint is a full
    /// snapshot in a new journal.
    pub fn new(dir: &Path) -> Journal {
        Journal {
            dir: dir.to_path_buf(),
            open: None,
            sequence: 0,
            written: BTreeMap::new(),
            numbers: BTreeMap::new(),
            compact_next: false,
            append_max: COMPACT_FROM,
        }
    }

    /// Replays the journal `name` of `dir` up to its last commit, cuts off
    /// what follows, and returns its sources with a writer that appends to it.
    pub fn open(dir: &Path, name: &str) -> Result<(Vec<SourceCheckpoint>, Journal)> {
        let number = number_of(name).with_context(|| format!("not a journal name: {name:?}"))?;
        let path = dir.join(name);
        let bytes =
            std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let (sources, numbers, committed) =
            replay(&bytes).with_context(|| format!("cannot replay {}", path.display()))?;
        if let Some(damage) = &committed.damage {
            let tail = &bytes[committed.len as usize..];
            let kept = path.with_file_name(format!("{name}.damaged"));
            let kept = match std::fs::write(&kept, tail) {
                Ok(()) => kept.display().to_string(),
                Err(error) => format!("not kept ({error})"),
            };
            tracing::error!(
                path = %path.display(),
                %damage,
                replayed_to = committed.sequence,
                bytes_cut = tail.len(),
                kept,
                "checkpoint journal damaged: replayed up to the last good checkpoint; its sources read again what came after it"
            );
        }
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .and_then(|file| {
                file.set_len(committed.len)?;
                Ok(file)
            })
            .with_context(|| format!("cannot open {} to append", path.display()))?;
        let written = sources
            .iter()
            .map(|source| (source.key(), Written::restored(source)))
            .collect();
        let journal = Journal {
            dir: dir.to_path_buf(),
            open: Some(Open {
                number,
                file,
                len: committed.len,
                snapshot_len: committed.snapshot_len,
            }),
            sequence: committed.sequence,
            written,
            numbers: numbers.into_iter().zip(0..).collect(),
            compact_next: false,
            append_max: COMPACT_FROM,
        };
        Ok((sources, journal))
    }

    /// Makes the next checkpoint a full snapshot in a new journal: the one
    /// open is of an older format.
    pub(super) fn compact_next(&mut self) {
        self.compact_next = true;
    }

    /// Records `sources` (the running ones) and `kept` (restored ones not
    /// running, written only in full snapshots): appends what changed, or
    /// writes a new journal when one is due. A checkpoint where nothing
    /// changed writes nothing.
    pub fn write<'a>(
        &mut self,
        sources: &[SourceCheckpoint],
        kept: impl Iterator<Item = &'a SourceCheckpoint>,
    ) -> Result<()> {
        let due = match &self.open {
            None => true,
            Some(open) => self.compact_next || open.len > COMPACT_FROM.max(2 * open.snapshot_len),
        };
        if due {
            self.compact_next = true;
            self.compact(sources, kept)?;
            self.compact_next = false;
            return Ok(());
        }
        let mut buf = Vec::new();
        let mut written = Vec::with_capacity(sources.len());
        for source in sources {
            let key = source.key();
            let number = self.numbers.get(&key).copied();
            written.push(changes(
                &mut buf,
                source,
                self.written.get_mut(&key),
                number,
            )?);
            if buf.len() as u64 > self.append_max {
                // Many sources changed a lot (a day of history read at
                // start-up): a new journal written a source at a time
                // holds one source's records in memory, not all of them.
                // It writes every base anew.
                self.compact_next = true;
                self.compact(sources, kept)?;
                self.compact_next = false;
                return Ok(());
            }
        }
        if buf.is_empty() {
            // Nothing to append, but the bases were moved out: put them back.
            for (source, written) in sources.iter().zip(written) {
                self.written.insert(source.key(), written);
            }
            return Ok(());
        }
        pack(&mut buf)?;
        seal(&mut buf, self.sequence + 1)?;
        let open = self
            .open
            .as_mut()
            .expect("a journal is open unless one is due");
        if let Err(error) = open.append(&buf) {
            self.compact_next = true;
            return Err(error).with_context(|| {
                format!(
                    "cannot append to {}",
                    self.dir.join(name_of(open.number)).display()
                )
            });
        }
        self.sequence += 1;
        for (source, written) in sources.iter().zip(written) {
            // A source new to this journal was written in full.
            number(&mut self.numbers, source.key());
            self.written.insert(source.key(), written);
        }
        Ok(())
    }

    /// Writes every source in full to a new journal, synced, then points
    /// the manifest at it and deletes the journals before it. Until the
    /// manifest is switched, the old journal stays whole and in use.
    fn compact<'a>(
        &mut self,
        sources: &[SourceCheckpoint],
        kept: impl Iterator<Item = &'a SourceCheckpoint>,
    ) -> Result<()> {
        let sequence = self.sequence + 1;
        let number = journals_in(&self.dir)
            .into_iter()
            .chain(self.open.as_ref().map(|open| open.number))
            .max()
            .unwrap_or(0)
            + 1;
        let path = self.dir.join(name_of(number));
        let (len, written, numbers) = match write_full(&path, sources, kept, sequence) {
            Ok(done) => done,
            Err(error) => {
                // On a full disk the partial file would hold the space left.
                let _ = std::fs::remove_file(&path);
                return Err(error).with_context(|| format!("cannot write {}", path.display()));
            }
        };
        let manifest = serde_json::to_vec(&Manifest {
            version: VERSION,
            journal: name_of(number),
        })?;
        write_atomically(&self.dir.join(FILE_NAME), &manifest)?;
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .with_context(|| format!("cannot open {} to append", path.display()))?;
        for old in journals_in(&self.dir).into_iter().filter(|n| *n != number) {
            let _ = std::fs::remove_file(self.dir.join(name_of(old)));
        }
        self.open = Some(Open {
            number,
            file,
            len,
            snapshot_len: len,
        });
        self.sequence = sequence;
        self.written = written;
        self.numbers = numbers;
        Ok(())
    }
}

/// Where a journal's committed part ends.
struct Committed {
    len: u64,
    snapshot_len: u64,
    sequence: u64,
    /// Why the replay stopped before the end of the file's complete lines,
    /// when something there was damaged rather than torn.
    damage: Option<String>,
}

/// The sources a journal's bytes hold up to the last good commit, their
/// keys by number, and where that commit ends. A checkpoint is applied only once its closing
/// line is read and its checksum matches; the first one that does not, or
/// holds a line that does not parse, ends the replay there (`damage`). A
/// journal without one good checkpoint is an error.
fn replay(bytes: &[u8]) -> Result<(Vec<SourceCheckpoint>, Vec<SourceKey>, Committed)> {
    let mut replay = Replay::default();
    let mut pending = Vec::new();
    let mut committed: Option<Committed> = None;
    let mut damage = None;
    let (mut start, mut checkpoint_start) = (0, 0);
    for (number, end) in memchr::memchr_iter(b'\n', bytes).enumerate() {
        let text = &bytes[start..end];
        let line_start = start;
        start = end + 1;
        if text.is_empty() {
            continue;
        }
        let sequence = match serde_json::from_slice::<Record>(text) {
            Err(error) => {
                damage = Some(format!("line {}: {error}", number + 1));
                break;
            }
            Ok(Record::Commit(sequence)) => sequence,
            Ok(Record::Sealed { sequence, crc32 }) => {
                if checksum(&bytes[checkpoint_start..line_start], sequence) != crc32 {
                    damage = Some(format!(
                        "line {}: checkpoint {sequence} does not match its checksum",
                        number + 1
                    ));
                    break;
                }
                sequence
            }
            Ok(Record::Packed(packed)) => {
                match unpack(&packed) {
                    Ok(records) => pending.extend(records.into_iter().map(|r| (number, r))),
                    Err(error) => {
                        damage = Some(format!("line {}: {error:#}", number + 1));
                        break;
                    }
                }
                continue;
            }
            Ok(record) => {
                pending.push((number, record));
                continue;
            }
        };
        for (number, record) in pending.drain(..) {
            replay
                .apply(record)
                .with_context(|| format!("line {}", number + 1))?;
        }
        checkpoint_start = start;
        let snapshot_len = committed.as_ref().map_or(start as u64, |c| c.snapshot_len);
        committed = Some(Committed {
            len: start as u64,
            snapshot_len,
            sequence,
            damage: None,
        });
    }
    let Some(mut committed) = committed else {
        match damage {
            Some(damage) => bail!("no good commit: {damage}"),
            None => bail!("no commit"),
        }
    };
    committed.damage = damage;
    let numbers = std::mem::take(&mut replay.numbers);
    Ok((replay.finish()?, numbers, committed))
}

/// Replaces a checkpoint's records (all of `buf`) by one `packed` record
/// when they are many and that is shorter.
fn pack(buf: &mut Vec<u8>) -> Result<()> {
    if buf.len() < PACK_FROM {
        return Ok(());
    }
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::new(6));
    encoder.write_all(buf)?;
    let packed = base64::engine::general_purpose::STANDARD.encode(encoder.finish()?);
    if packed.len() + 16 < buf.len() {
        buf.clear();
        line(buf, &Record::Packed(packed))?;
    }
    Ok(())
}

/// The records of a `packed` one.
fn unpack(packed: &str) -> Result<Vec<Record<'static>>> {
    let deflated = base64::engine::general_purpose::STANDARD
        .decode(packed)
        .context("not base64")?;
    let mut text = Vec::new();
    std::io::Read::read_to_end(
        &mut std::io::Read::take(flate2::read::DeflateDecoder::new(&deflated[..]), PACKED_MAX),
        &mut text,
    )
    .context("does not inflate")?;
    text.split(|b| *b == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| Ok(serde_json::from_slice(line)?))
        .collect()
}

#[path = "journal_snapshot.rs"]
mod snapshot;
use snapshot::{full, write_full};

#[cfg(test)]
#[path = "journal_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "journal_format_tests.rs"]
mod format_tests;
