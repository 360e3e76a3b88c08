//! `pausewatch replay`: writes a recorded GC log into a file line by line, at
//! the pace the log's own timestamps give (or a fixed line rate), optionally
//! moving its wall-clock decorations to the present. It feeds the demo, the
//! tests and the overhead benchmark with a real log written live.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};
use pausewatch_parsers::line_time;

pub struct ReplayOptions {
    /// Multiplier on the log's own pace; ignored when `lines_per_second` is set.
    pub speed: f64,
    pub lines_per_second: Option<f64>,
    /// Shift `time` decorations so that the first line is stamped now.
    pub retime: bool,
}

/// `2022-01-29T16:34:51.654+0000`, HotSpot's `time` decoration.
const TIME_FORMAT: &str = "%Y-%m-%dT%H:%M:%S%.3f%z";

/// `line` with its `time` decoration moved by `shift`; in a JDK 6 to 8
/// line, every date stamp (`2016-04-14T22:30:09.108+0200: `, one per nested
/// group).
pub fn retimed(line: &str, shift: chrono::Duration) -> String {
    let Some(rest) = line.strip_prefix('[') else {
        return retimed_date_stamps(line, shift);
    };
    let Some(close) = rest.find(']') else {
        return line.to_string();
    };
    match DateTime::parse_from_str(rest[..close].trim(), TIME_FORMAT) {
        Ok(time) => format!(
            "[{}]{}",
            (time + shift).format(TIME_FORMAT),
            &rest[close + 1..]
        ),
        Err(_) => line.to_string(),
    }
}

/// Length of HotSpot's date stamp, `2016-04-14T22:30:09.108+0200`.
const DATE_STAMP_LEN: usize = 28;

fn retimed_date_stamps(line: &str, shift: chrono::Duration) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find('T').filter(|&at| at >= 10) {
        let start = at - 10;
        let moved = rest
            .get(start..start + DATE_STAMP_LEN)
            .filter(|_| rest[start + DATE_STAMP_LEN..].starts_with(": "))
            .and_then(|stamp| DateTime::parse_from_str(stamp, TIME_FORMAT).ok());
        match moved {
            Some(time) => {
                out.push_str(&rest[..start]);
                out.push_str(&(time + shift).format(TIME_FORMAT).to_string());
                rest = &rest[start + DATE_STAMP_LEN..];
            }
            None => {
                out.push_str(&rest[..=at]);
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Seconds since the first timed line, from the line's uptime or wall time.
fn log_offset(line: &str, first: &mut Option<(Option<f64>, Option<DateTime<Utc>>)>) -> Option<f64> {
    let time = line_time(line)?;
    let (first_uptime, first_wall) = *first.get_or_insert((time.uptime_s, time.wall));
    match (time.uptime_s, first_uptime, time.wall, first_wall) {
        (Some(now), Some(start), _, _) => Some(now - start),
        (_, _, Some(now), Some(start)) => Some((now - start).num_microseconds()? as f64 / 1e6),
        _ => None,
    }
}

/// Replays the file `source` into `destination`.
pub fn replay(source: &Path, destination: &Path, options: &ReplayOptions) -> Result<u64> {
    let input = BufReader::new(
        std::fs::File::open(source).with_context(|| format!("cannot open {}", source.display()))?,
    );
    let lines = input
        .lines()
        .map(|line| line.with_context(|| format!("cannot read {}", source.display())));
    replay_lines(lines, destination, options)
}

/// Appends `lines` to `destination` at their own pace; returns how many.
pub fn replay_lines<S: AsRef<str>>(
    lines: impl IntoIterator<Item = Result<S>>,
    destination: &Path,
    options: &ReplayOptions,
) -> Result<u64> {
    let mut output = OpenOptions::new()
        .create(true)
        .append(true)
        .open(destination)
        .with_context(|| format!("cannot open {}", destination.display()))?;
    let started = Instant::now();
    let mut first = None;
    let mut shift = None;
    let mut written = 0u64;
    for line in lines {
        let line = line?;
        let line = line.as_ref();
        let due = match options.lines_per_second {
            Some(rate) => Some(written as f64 / rate),
            None => log_offset(line, &mut first).map(|offset| offset / options.speed),
        };
        if let Some(due) = due {
            let due = Duration::from_secs_f64(due.max(0.0));
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        if options.retime && shift.is_none() {
            // The first line with a wall-clock time fixes the shift.
            shift = line_time(line)
                .and_then(|t| t.wall)
                .map(|wall| Utc::now() - wall);
        }
        let line = match shift {
            Some(shift) => retimed(line, shift),
            None => line.to_string(),
        };
        // One write per line, as HotSpot does.
        output.write_all(format!("{line}\n").as_bytes())?;
        written += 1;
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retime_moves_only_the_time_decoration() {
        let line = "[2022-01-29T16:34:51.654+0000][245ms][info][gc] GC(6) Pause Young (Normal) (G1 Evacuation Pause) 14M->14M(46M) 9.772ms";
        let moved = retimed(line, chrono::Duration::hours(1));
        assert!(
            moved.starts_with("[2022-01-29T17:34:51.654+0000][245ms]"),
            "{moved}"
        );
        assert!(moved.ends_with("14M->14M(46M) 9.772ms"));
        assert_eq!(
            retimed("[0.1s][info][gc] Using G1", chrono::Duration::hours(1)),
            "[0.1s][info][gc] Using G1"
        );
    }

    #[test]
    fn retime_moves_every_jdk8_date_stamp() {
        let line = "2016-04-14T22:30:09.108+0200: 1.053: [GC (Allocation Failure) 2016-04-14T22:30:09.108+0200: 1.053: [ParNew: 218496K->25704K(245760K), 0.0145305 secs] 218496K->25704K(791936K), 0.0146984 secs] [Times: user=0.13 sys=0.00, real=0.01 secs]";
        let moved = retimed(line, chrono::Duration::hours(1));
        assert_eq!(
            moved,
            line.replace(
                "2016-04-14T22:30:09.108+0200",
                "2016-04-14T23:30:09.108+0200"
            )
        );
        let plain = "Desired survivor size 1343488 bytes, new threshold 1 (max 1) T";
        assert_eq!(retimed(plain, chrono::Duration::hours(1)), plain);
    }
}
