//! Which file names belong to which live file: the one rule shared by glob
//! discovery (a rotated name is not a stream of its own) and the follower
//! (the rotated names it searches after a rotation or a restart).

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

/// The live file name `name` is a rotation of, if it is one: `gc.log.3` and
/// `gc.log-20260101` are rotations of `gc.log`; `gc-1234.log` is a live file.
fn live_name_of(name: &str) -> Option<&str> {
    name.char_indices()
        .filter(|&(i, c)| i > 0 && (c == '.' || c == '-'))
        .find(|&(i, _)| is_rotation_suffix(&name[i + 1..]))
        .map(|(i, _)| &name[..i])
}

/// Whether the file called `name` is a rotation of the live file `live_name`.
pub fn is_rotation_of(live_name: &str, name: &str) -> bool {
    !is_compressed(name) && live_name_of(name) == Some(live_name)
}

/// The file a rotated name belongs to; a live path is its own.
pub fn live_path_of(path: &Path) -> PathBuf {
    let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
        return path.to_path_buf();
    };
    match live_name_of(&name) {
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
}
