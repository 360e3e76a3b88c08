//! Which file names belong to which live file: the one rule shared by glob
//! discovery (a rotated name is not a stream of its own) and the follower
//! (the rotated names it searches after a rotation or a restart).
//!
//! JDK 8's `-XX:+UseGCLogFileRotation` writes a ring with no file under the
//! configured name: `gc.log.0` ... `gc.log.N-1`, the one being written
//! named `gc.log.K.current` until it is full and renamed to `gc.log.K`. The
//! ring is one stream under the configured name `gc.log`; its `.current`
//! file is that stream's live file ([`ring_current_of`]).

use std::path::{Path, PathBuf};

/// Rotations compressed by logrotate: their bytes were read before they were
/// compressed, and they cannot be tailed.
const COMPRESSED_SUFFIXES: [&str; 5] = [".gz", ".bz2", ".xz", ".zst", ".zip"];

pub fn is_compressed(name: &str) -> bool {
    COMPRESSED_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// A rotation suffix: HotSpot's `3`, `00`, logrotate's `20260101` or
/// `2026-01-01`: digits first, then digits, `-` or `_`.
fn is_rotation_suffix(suffix: &str) -> bool {
    suffix.starts_with(|c: char| c.is_ascii_digit())
        && suffix
            .bytes()
            .all(|b| b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// JDK 8 marks the file of its ring being written with this suffix.
const RING_CURRENT: &str = ".current";

/// The live file name `name` is a rotation of, if it is one: `gc.log.3` and
/// `gc.log-20260101` are rotations of `gc.log`; `gc-1234.log` is a live file.
fn live_name_of(name: &str) -> Option<&str> {
    name.char_indices()
        .filter(|&(i, c)| i > 0 && (c == '.' || c == '-'))
        .find(|&(i, _)| is_rotation_suffix(&name[i + 1..]))
        .map(|(i, _)| &name[..i])
}

/// The ring `name` is the JDK 8 `.current` file of: `gc.log` for
/// `gc.log.3.current` (HotSpot writes the number with `%d`).
fn ring_name_of(name: &str) -> Option<&str> {
    let numbered = name.strip_suffix(RING_CURRENT)?;
    let (ring, number) = numbered.rsplit_once('.')?;
    let is_number = !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit());
    (is_number && !ring.is_empty()).then_some(ring)
}

/// Whether the file called `name` is a rotation of the live file `live_name`.
/// A ring's `.current` file is not: it is being written.
pub fn is_rotation_of(live_name: &str, name: &str) -> bool {
    !is_compressed(name) && ring_name_of(name).is_none() && live_name_of(name) == Some(live_name)
}

/// Whether `name` is the `.current` file of the JDK 8 ring `live_name`.
pub fn ring_current_of(live_name: &str, name: &str) -> bool {
    ring_name_of(name) == Some(live_name)
}

/// Whether the log `live` is there: its file, or a `.current` file of the
/// JDK 8 ring it names.
pub fn log_exists(live: &Path) -> bool {
    if live.exists() {
        return true;
    }
    let (Some(dir), Some(name)) = (live.parent(), live.file_name()) else {
        return false;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let name = name.to_string_lossy();
    let entries = std::fs::read_dir(dir).into_iter().flatten().flatten();
    entries
        .into_iter()
        .any(|entry| ring_current_of(&name, &entry.file_name().to_string_lossy()))
}

/// The file a rotated name belongs to, the ring a `.current` file writes;
/// a live path is its own.
pub fn live_path_of(path: &Path) -> PathBuf {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
        return path.to_path_buf();
    };
    match ring_name_of(&name).or_else(|| live_name_of(&name)) {
        Some(live) => path.with_file_name(live),
        None => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_names_belong_to_their_live_file() {
        for (rotated, live) in [
            ("/l/gc.log.3", "/l/gc.log"),
            ("/l/gc.log.00", "/l/gc.log"),
            ("/l/gc.log-20260101", "/l/gc.log"),
            ("/l/gc.log-2026-01-01", "/l/gc.log"),
            ("/l/gc.log", "/l/gc.log"),
            ("/l/gc-1234.log", "/l/gc-1234.log"),
            ("/l/gc-1234.log.2", "/l/gc-1234.log"),
            ("/l/gc.log.3.current", "/l/gc.log"),
            ("/l/gc-pid42.log.10.current", "/l/gc-pid42.log"),
            ("/l/.current", "/l/.current"),
        ] {
            assert_eq!(
                live_path_of(Path::new(rotated)),
                PathBuf::from(live),
                "{rotated}"
            );
        }
    }

    #[test]
    fn compressed_and_foreign_names_are_not_rotations() {
        assert!(is_rotation_of("gc.log", "gc.log.1"));
        assert!(is_rotation_of("gc.log", "gc.log-20260101"));
        assert!(!is_rotation_of("gc.log", "gc.log.1.gz"));
        assert!(!is_rotation_of("gc.log", "gc.log.bak"));
        assert!(!is_rotation_of("gc.log", "gc.log"));
        assert!(!is_rotation_of("gc.log", "gc.log.0.lck"));
        assert!(!is_rotation_of("gc", "gc.log.1"));
    }

    #[test]
    fn a_jdk8_ring_is_written_in_its_numbered_current_file() {
        assert!(ring_current_of("gc.log", "gc.log.0.current"));
        assert!(ring_current_of("gc.log", "gc.log.12.current"));
        assert!(!ring_current_of("gc.log", "gc.log.current"));
        assert!(!ring_current_of("gc.log", "gc.log.x.current"));
        assert!(!ring_current_of("gc.log", "other.log.0.current"));
        // Being written, it is not a rotation; its renamed self is.
        assert!(!is_rotation_of("gc.log", "gc.log.3.current"));
        assert!(is_rotation_of("gc.log", "gc.log.3"));
    }
}
