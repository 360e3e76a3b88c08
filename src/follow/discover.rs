//! The live files a configured path or glob names now. Rotated and
//! compressed names are folded into their live file, so each live file is
//! one stream.
//!
//! Globs are walked here rather than by the `glob` crate, whose walk
//! follows every directory symlink: a `current -> releases/r1` link made one
//! file two streams, and links to `..` made the walk exponential. This walk
//! enters each directory once, reaches directories through real paths before
//! symlinks (so a stream keeps its real name when a link is re-pointed), can
//! be kept inside the configured directories, and stops at [`MAX_MATCHES`].

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::Metadata;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use glob::{MatchOptions, Pattern};

use super::confine::Confine;
use super::siblings::{is_compressed, live_path_of};

/// Files one glob may match before the walk stops.
pub const MAX_MATCHES: usize = 10_000;
/// How long a directory's listing is believed while its modification time
/// stays the same: a symlink in it re-pointed elsewhere changes nothing here.
const LISTING_FOR: Duration = Duration::from_secs(30);
/// How old a directory's last change must be for its listing to be kept.
const SETTLED_AFTER: Duration = Duration::from_secs(1);

/// Directory listings kept from one discovery to the next. A directory's
/// entries change only with its modification time, so an unchanged one costs
/// a `stat` instead of a listing, a `stat` per entry and the resolution of
/// its real path: 200 JVM directories re-walked every second were half of an
/// idle agent's CPU.
#[derive(Default)]
pub struct Listings {
    by_dir: HashMap<PathBuf, Listing>,
}

struct Listing {
    /// Device, inode and modification time of the directory listed.
    stamp: (u64, u64, Option<SystemTime>),
    /// Whether the directory had not changed for a while when it was listed.
    settled: bool,
    listed_at: Instant,
    /// Whether the walk's confinement allows the directory.
    allowed: bool,
    entries: Vec<Entry>,
    /// Walked in the current pass, see [`Listings::forget_unvisited`].
    visited: bool,
}

#[derive(Clone)]
struct Entry {
    name: String,
    path: PathBuf,
    is_link: bool,
    is_dir: bool,
}

impl Listings {
    /// The entries of `dir` (of metadata `meta`), sorted by name, and
    /// whether `confine` allows it: listed again when it changed.
    fn of(&mut self, dir: &Path, meta: &Metadata, confine: &Confine) -> (bool, Vec<Entry>) {
        let stamp = (meta.dev(), meta.ino(), meta.modified().ok());
        if let Some(listing) = self.by_dir.get_mut(dir) {
            if listing.settled
                && listing.stamp == stamp
                && listing.listed_at.elapsed() < LISTING_FOR
            {
                listing.visited = true;
                return (listing.allowed, listing.entries.clone());
            }
        }
        let allowed = confine.allows(dir);
        let entries = if allowed { list(dir) } else { Vec::new() };
        // A change within the same tick of the file system's clock leaves
        // the modification time as it was: a listing taken less than a
        // second after a change is not believed the next time.
        let settled = stamp
            .2
            .is_some_and(|mtime| mtime.elapsed().is_ok_and(|age| age >= SETTLED_AFTER));
        let listing = Listing {
            stamp,
            settled,
            listed_at: Instant::now(),
            allowed,
            entries: entries.clone(),
            visited: true,
        };
        self.by_dir.insert(dir.to_path_buf(), listing);
        (allowed, entries)
    }

    /// Drops the listings of directories no walk reached since the last
    /// call, so that removed directories do not pile up.
    pub fn forget_unvisited(&mut self) {
        self.by_dir
            .retain(|_, listing| std::mem::take(&mut listing.visited));
    }
}

/// The entries of `dir`, sorted by name.
fn list(dir: &Path) -> Vec<Entry> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut entries: Vec<Entry> = entries
        .flatten()
        .map(|entry| {
            let path = entry.path();
            Entry {
                name: entry.file_name().to_string_lossy().into_owned(),
                is_link: entry.file_type().is_ok_and(|t| t.is_symlink()),
                is_dir: std::fs::metadata(&path).is_ok_and(|m| Metadata::is_dir(&m)),
                path,
            }
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    entries
}

/// `*` and `?` match within one path component, as in a shell.
const COMPONENT: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

pub fn has_glob_chars(pattern: &str) -> bool {
    pattern.contains(['*', '?', '['])
}

/// The directory a configured path names: the parent of a plain path, the
/// part of a glob before its first glob character.
pub fn base_dir(pattern: &str) -> PathBuf {
    let path = Path::new(pattern);
    let base: PathBuf = if has_glob_chars(pattern) {
        path.components()
            .take_while(|c| !has_glob_chars(&c.as_os_str().to_string_lossy()))
            .collect()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    if base.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        base
    }
}

/// What one discovery found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// Live paths of the streams.
    pub live: BTreeSet<PathBuf>,
    /// Whether the walk stopped at [`MAX_MATCHES`].
    pub capped: bool,
}

/// Live paths of the streams a path or glob names now, walking only
/// directories `confine` allows.
pub fn discover(pattern: &str, confine: &Confine) -> Discovery {
    discover_with(pattern, confine, &mut Listings::default())
}

/// [`discover`], with the directory listings of earlier walks.
pub fn discover_with(pattern: &str, confine: &Confine, listings: &mut Listings) -> Discovery {
    if !has_glob_chars(pattern) {
        return Discovery {
            live: BTreeSet::from([PathBuf::from(pattern)]),
            capped: false,
        };
    }
    let base = base_dir(pattern);
    let rest = Path::new(pattern)
        .strip_prefix(&base)
        .unwrap_or(Path::new(pattern));
    let Ok(mut parts) = rest
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| Part::new(&c.as_os_str().to_string_lossy()))
        .collect::<Result<Vec<Part>, _>>()
    else {
        return Discovery::default();
    };
    // `dir/**` means every file below `dir`.
    if matches!(parts.last(), Some(Part::AnyDirs)) {
        parts.push(Part::Name(Pattern::new("*").expect("a valid pattern")));
    }
    let mut walk = Walk {
        parts,
        confine,
        listings,
        visited: HashSet::new(),
        through_links: Vec::new(),
        found: Discovery::default(),
        matches: 0,
    };
    walk.dir(&base, 0);
    // Directories reached only through symlinks, after every real path.
    while let Some((dir, index)) = walk.through_links.pop() {
        walk.dir(&dir, index);
    }
    walk.found
}

/// One component of a glob.
enum Part {
    /// `**`: any number of directories.
    AnyDirs,
    Name(Pattern),
}

impl Part {
    fn new(text: &str) -> Result<Part, glob::PatternError> {
        Ok(match text {
            "**" => Part::AnyDirs,
            _ => Part::Name(Pattern::new(text)?),
        })
    }
}

struct Walk<'a> {
    parts: Vec<Part>,
    confine: &'a Confine,
    listings: &'a mut Listings,
    /// Directories (device, inode) already walked at a part of the glob.
    visited: HashSet<(u64, u64, usize)>,
    through_links: Vec<(PathBuf, usize)>,
    found: Discovery,
    matches: usize,
}

impl Walk<'_> {
    /// Matches `parts[index..]` below `dir`.
    fn dir(&mut self, dir: &Path, index: usize) {
        if self.found.capped {
            return;
        }
        let Ok(meta) = std::fs::metadata(dir) else {
            return;
        };
        if !meta.is_dir() || !self.visited.insert((meta.dev(), meta.ino(), index)) {
            return;
        }
        let (allowed, entries) = self.listings.of(dir, &meta, self.confine);
        if !allowed {
            return;
        }
        let last = index + 1 == self.parts.len();
        for Entry {
            name,
            path,
            is_link,
            is_dir,
        } in entries
        {
            match &self.parts[index] {
                Part::AnyDirs => {
                    if is_dir {
                        self.enter(path, index, is_link);
                    }
                }
                Part::Name(pattern) if pattern.matches_with(&name, COMPONENT) => {
                    if last && !is_dir {
                        self.matched(path);
                    } else if !last && is_dir {
                        self.enter(path, index + 1, is_link);
                    }
                }
                Part::Name(_) => {}
            }
        }
        if matches!(self.parts[index], Part::AnyDirs) {
            // `**` may also match no directory at all.
            self.dir(dir, index + 1);
        }
    }

    fn enter(&mut self, dir: PathBuf, index: usize, through_link: bool) {
        if through_link {
            self.through_links.push((dir, index));
        } else {
            self.dir(&dir, index);
        }
    }

    fn matched(&mut self, path: PathBuf) {
        if path
            .file_name()
            .is_some_and(|n| is_compressed(&n.to_string_lossy()))
        {
            return;
        }
        self.matches += 1;
        if self.matches > MAX_MATCHES {
            self.found.capped = true;
            return;
        }
        self.found.live.insert(live_path_of(&path));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "x\n").unwrap();
    }

    fn found(pattern: &Path, confine: &Confine) -> Vec<PathBuf> {
        discover(&pattern.display().to_string(), confine)
            .live
            .into_iter()
            .collect()
    }

    #[test]
    fn kept_listings_see_files_and_directories_that_come_and_go() {
        let root = tempfile::tempdir().unwrap();
        let pattern = root.path().join("jvm-*/gc.log").display().to_string();
        let mut listings = Listings::default();
        let walk = |listings: &mut Listings| {
            let found = discover_with(&pattern, &Confine::Anywhere, listings);
            listings.forget_unvisited();
            found.live.into_iter().collect::<Vec<_>>()
        };
        touch(&root.path().join("jvm-1/gc.log"));
        assert_eq!(walk(&mut listings), [root.path().join("jvm-1/gc.log")]);
        // A new directory, and a log in a directory already listed empty.
        std::fs::create_dir(root.path().join("jvm-2")).unwrap();
        assert_eq!(walk(&mut listings).len(), 1);
        touch(&root.path().join("jvm-2/gc.log"));
        assert_eq!(walk(&mut listings).len(), 2);
        // A removed directory is gone from the walk and from the listings.
        std::fs::remove_dir_all(root.path().join("jvm-1")).unwrap();
        assert_eq!(walk(&mut listings), [root.path().join("jvm-2/gc.log")]);
        assert!(!listings.by_dir.contains_key(&root.path().join("jvm-1")));
        assert_eq!(listings.by_dir.len(), 2, "the base and jvm-2");
    }

    #[test]
    fn the_base_is_what_precedes_the_first_glob_character() {
        assert_eq!(
            base_dir("/var/log/app/gc.log"),
            PathBuf::from("/var/log/app")
        );
        assert_eq!(base_dir("/var/log/*/gc.log"), PathBuf::from("/var/log"));
        assert_eq!(base_dir("logs/**/gc.log*"), PathBuf::from("logs"));
        assert_eq!(base_dir("gc.log"), PathBuf::from("."));
    }

    #[test]
    fn rotated_names_fold_into_their_live_file() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "a/gc.log",
            "a/gc.log.1",
            "a/gc.log.2.gz",
            "b/gc.log.0",
            "c/gc.log.0",
            "c/gc.log.1.current",
        ] {
            touch(&dir.path().join(name));
        }
        assert_eq!(
            found(&dir.path().join("*/gc.log*"), &Confine::Anywhere),
            vec![
                dir.path().join("a/gc.log"),
                dir.path().join("b/gc.log"),
                dir.path().join("c/gc.log")
            ]
        );
    }

    #[test]
    fn a_directory_reached_through_a_link_is_walked_once_under_its_real_name() {
        let dir = tempfile::tempdir().unwrap();
        touch(&dir.path().join("releases/r1/gc.log"));
        symlink("releases/r1", dir.path().join("a-current")).unwrap();
        symlink("..", dir.path().join("releases/up")).unwrap();
        assert_eq!(
            found(&dir.path().join("**/gc.log"), &Confine::Anywhere),
            vec![dir.path().join("releases/r1/gc.log")]
        );
    }

    #[test]
    fn links_to_parents_do_not_multiply_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..6 {
            let jvm = dir.path().join(format!("jvm{i}"));
            touch(&jvm.join("gc.log"));
            for link in ["up", "up2"] {
                symlink("..", jvm.join(link)).unwrap();
            }
        }
        assert_eq!(
            found(&dir.path().join("**/gc.log"), &Confine::Anywhere).len(),
            6
        );
    }

    #[test]
    fn the_walk_stops_at_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let many = dir.path().join("many");
        std::fs::create_dir(&many).unwrap();
        for i in 0..=MAX_MATCHES {
            std::fs::write(many.join(format!("{i}.log")), "").unwrap();
        }
        let discovery = discover(&format!("{}/*.log", many.display()), &Confine::Anywhere);
        assert!(discovery.capped);
        assert_eq!(discovery.live.len(), MAX_MATCHES);
    }

    #[test]
    fn a_confined_walk_does_not_leave_the_configured_directories() {
        let dir = tempfile::tempdir().unwrap();
        touch(&dir.path().join("outside/gc.log"));
        std::fs::create_dir(dir.path().join("logs")).unwrap();
        symlink("../outside", dir.path().join("logs/out")).unwrap();
        let pattern = dir.path().join("logs/*/gc.log");
        let confine = Confine::within([base_dir(&pattern.display().to_string())]);
        assert!(found(&pattern, &confine).is_empty());
        assert_eq!(found(&pattern, &Confine::Anywhere).len(), 1);
    }
}
