//! A source's records in full: the opening of a new journal, and a source
//! the journal has no base for.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::Path;

use super::*;

/// Appends every record of `source` (a `fresh` one first).
pub(super) fn full(buf: &mut Vec<u8>, source: &SourceCheckpoint) -> Result<Written> {
    let record = SourceV5::from(source);
    let mut written = Written {
        base: Some(serde_json::to_value(&record)?),
        ..Written::default()
    };
    line(buf, &Record::Fresh(record))?;
    let Some((log, state)) = source.stream() else {
        return Ok(written);
    };
    let log = log.as_str();
    let minutes = &state.jvm.minutes;
    written.minutes = minutes.changes().generation();
    let all: Vec<MinuteV5> = minutes.iter().map(|m| m.into_owned().into()).collect();
    if let Some(newest) = all.last() {
        written.minute = Some((newest.key(), serde_json::to_value(newest)?));
        line(
            buf,
            &Record::Minutes {
                log: Cow::Borrowed(log),
                minutes: all,
            },
        )?;
    }
    let Some(latency) = &state.latency else {
        return Ok(written);
    };
    written.latency_minutes = latency.minute_changes().generation();
    written.stops = latency.arrived_stops().total();
    if !latency.minutes.is_empty() {
        line(
            buf,
            &Record::LatencyMinutes {
                log: Cow::Borrowed(log),
                minutes: latency.minutes.values().map(Into::into).collect(),
            },
        )?;
    }
    if let Some(record) = stops_record(log, latency.stops.iter()) {
        line(buf, &record)?;
    }
    for (minute, requests) in latency.pending() {
        line(buf, &requests_record(log, *minute, 0, requests))?;
        written.requests.insert(*minute, requests.len());
    }
    Ok(written)
}

/// What [`Journal::compact`] wrote: the journal's length, and what it
/// wrote of each source and under which number.
pub(super) type WrittenInFull = (
    u64,
    BTreeMap<SourceKey, Written>,
    BTreeMap<SourceKey, usize>,
);

/// Writes every source in full to a new journal at `path`, one source at a
/// time: a day of minutes of 200 JVMs is about 150 MB of records, which a
/// single buffer held at once, more than the agent's whole state.
pub(super) fn write_full<'a>(
    path: &Path,
    sources: &[SourceCheckpoint],
    kept: impl Iterator<Item = &'a SourceCheckpoint>,
    sequence: u64,
) -> Result<WrittenInFull> {
    let mut file = std::io::BufWriter::new(File::create(path)?);
    let mut hasher = crc32fast::Hasher::new();
    let mut len = 0u64;
    let mut buf = Vec::new();
    let mut put = |buf: &mut Vec<u8>| -> std::io::Result<()> {
        hasher.update(buf);
        file.write_all(buf)?;
        len += buf.len() as u64;
        buf.clear();
        Ok(())
    };
    let mut written = BTreeMap::new();
    let mut numbers = BTreeMap::new();
    for source in sources {
        number(&mut numbers, source.key());
        written.insert(source.key(), full(&mut buf, source)?);
        put(&mut buf)?;
    }
    for source in kept {
        full(&mut buf, source)?;
        put(&mut buf)?;
        number(&mut numbers, source.key());
        written.insert(source.key(), Written::restored(source));
    }
    hasher.update(&sequence.to_le_bytes());
    let crc32 = hasher.finalize();
    line(&mut buf, &Record::Sealed { sequence, crc32 })?;
    file.write_all(&buf)?;
    len += buf.len() as u64;
    file.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok((len, written, numbers))
}
