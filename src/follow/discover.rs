//! The live files a configured path or glob names now. Rotated and
//! compressed names are folded into their live file, so each live file is
//! one stream.

use std::collections::BTreeSet;
use std::path::PathBuf;

use super::siblings::{is_compressed, live_path_of};

pub fn has_glob_chars(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// Live paths of the streams a path or glob names now.
pub fn discover(pattern: &str) -> BTreeSet<PathBuf> {
    if !has_glob_chars(pattern) {
        return BTreeSet::from([PathBuf::from(pattern)]);
    }
    let Ok(paths) = glob::glob(pattern) else {
        return BTreeSet::new();
    };
    paths
        .flatten()
        .filter(|path| {
            !path
                .file_name()
                .is_some_and(|n| is_compressed(&n.to_string_lossy()))
        })
        .map(|path| live_path_of(&path))
        .collect()
}
