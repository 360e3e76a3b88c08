//! The floor under any parse of a GC log, for `bench/offline.sh`: the least a
//! reader that looks at every line must do, timed as a whole process beside
//! `wc -l`, the way `analyze` is.
//!
//!   line_floor ends LOG     finds each line's end, as `wc -l` does
//!   line_floor stamps LOG   also reads each line's leading uptime (`[1.234s]`
//!                           or JDK 8's `1.234: `) and, on a unified line,
//!                           finds the `]` closing its uptime, level and tags
//!
//! Both read the file in 1 MiB blocks on one core and print what they found,
//! so that nothing is optimised away. `stamps` is no parser: it makes no
//! event, checks no shape and folds nothing. What it costs per line over
//! `ends` bounds what `analyze` could reach on a log where every line is an
//! event (bench/README.md).

use std::io::Read;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(path), None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: line_floor ends|stamps LOG");
        std::process::exit(64);
    };
    let read_stamps = match mode.as_str() {
        "ends" => false,
        "stamps" => true,
        _ => {
            eprintln!("line_floor: unknown mode {mode} (ends or stamps)");
            std::process::exit(64);
        }
    };
    let mut file = std::fs::File::open(&path).unwrap_or_else(|e| {
        eprintln!("line_floor: cannot open {path}: {e}");
        std::process::exit(66);
    });
    let mut block = vec![0u8; 1 << 20];
    // The unfinished line at a block's end is carried over, as a parser must.
    let mut carried = 0;
    let (mut lines, mut uptime_sum, mut tags_bytes) = (0u64, 0f64, 0usize);
    let mut visit = |line: &[u8]| {
        lines += 1;
        if read_stamps {
            let (uptime, tags) = stamp(line);
            uptime_sum += uptime;
            tags_bytes += tags;
        }
    };
    loop {
        let read = file.read(&mut block[carried..]).expect("read");
        let filled = carried + read;
        let mut at = 0;
        while let Some(end) = memchr::memchr(b'\n', &block[at..filled]) {
            visit(&block[at..at + end]);
            at += end + 1;
        }
        if read == 0 {
            if filled > at {
                visit(&block[at..filled]); // the last line, unfinished
            }
            break;
        }
        block.copy_within(at..filled, 0);
        carried = filled - at;
        if carried == block.len() {
            block.resize(block.len() * 2, 0);
        }
    }
    println!("{lines} lines, uptimes summing to {uptime_sum:.3} s, {tags_bytes} bytes of tags");
}

/// The leading uptime in seconds and the length of the third bracketed
/// decoration (a unified line's tags: `[1.234s][info][gc,heap]`): digits
/// and brackets read once, byte by byte.
fn stamp(line: &[u8]) -> (f64, usize) {
    let start = usize::from(line.first() == Some(&b'['));
    let (mut mantissa, mut fraction_digits, mut in_fraction) = (0u64, 0i32, false);
    let mut at = start;
    while let Some(&byte) = line.get(at) {
        match byte {
            b'0'..=b'9' => {
                mantissa = mantissa.wrapping_mul(10) + u64::from(byte - b'0');
                fraction_digits += i32::from(in_fraction);
            }
            b'.' if !in_fraction => in_fraction = true,
            _ => break,
        }
        at += 1;
    }
    let uptime = mantissa as f64 / 10f64.powi(fraction_digits);
    if start == 0 {
        return (uptime, 0); // JDK 8: no decorations
    }
    // The uptime's, the level's and the tags' closing brackets, a few bytes
    // apart: a byte loop (a `memchr` call each cost more than the search).
    let mut closes = [0; 3];
    for close in &mut closes {
        while line.get(at).is_some_and(|&byte| byte != b']') {
            at += 1;
        }
        if at >= line.len() {
            return (uptime, 0);
        }
        at += 1;
        *close = at;
    }
    (uptime, closes[2] - closes[1])
}
