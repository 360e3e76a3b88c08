//! Following one JVM's GC log through rotation as a single byte stream.
//!
//! HotSpot rotates by renaming `gc.log` to `gc.log.N` and opening a new
//! `gc.log` (and archives an existing one at JVM start); logrotate users
//! copy and truncate; people delete and recreate files. The follower keeps
//! the file it reads open, so a renamed file is finished to its last byte
//! before the next one is started, and it identifies files by device, inode
//! and a fingerprint of their first KiB, never by name or first line: two
//! JVM runs start their logs with the same line, and inodes are reused.

use std::collections::BTreeSet;
use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use siblings::{is_rotation_of, ring_current_of};

mod confine;
mod descriptors;
mod discover;
mod siblings;

use descriptors::Slot;
pub use descriptors::{
    plan, raise_open_files_limit, room_for_probes, set_budget, set_held_by_probes, Plan,
};

pub use confine::{open_regular, Confine, OpenError};
pub use discover::{
    base_dir, discover, discover_with, has_glob_chars, Discovery, Listings, MAX_MATCHES,
};
pub use siblings::{live_path_of, log_exists};

/// Bytes of a file's head that identify it.
const HEAD_BYTES: usize = 1024;
/// Bytes just before the read position that must still be there at the
/// next read: a writer without `O_APPEND` continues at its old offset after
/// a copytruncate, so the file's length and (after one truncation, a hole
/// of NULs) its head can look unchanged.
const TAIL_BYTES: u64 = 64;
const READ_CHUNK: usize = 64 * 1024;
const FILES_KNOWN_REFRESH: Duration = Duration::from_secs(5);

/// FNV-1a: a small, stable hash for the head fingerprint (std's hasher is not
/// guaranteed stable across releases, and checkpoints outlive binaries).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Fingerprint of a file's first `len` bytes (up to 1 KiB).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadPrint {
    pub len: u32,
    pub hash: u64,
}

impl HeadPrint {
    fn of(file: &File, file_len: u64) -> io::Result<HeadPrint> {
        let len = (file_len as usize).min(HEAD_BYTES);
        let mut buffer = [0u8; HEAD_BYTES];
        file.read_exact_at(&mut buffer[..len], 0)?;
        Ok(HeadPrint {
            len: len as u32,
            hash: fnv1a(&buffer[..len]),
        })
    }

    /// Whether `file` starts with the bytes this print was taken from.
    fn matches(&self, file: &File, file_len: u64) -> io::Result<bool> {
        if file_len < u64::from(self.len) {
            return Ok(false);
        }
        let len = (self.len as usize).min(HEAD_BYTES);
        let mut buffer = [0u8; HEAD_BYTES];
        file.read_exact_at(&mut buffer[..len], 0)?;
        Ok(fnv1a(&buffer[..len]) == self.hash)
    }

    /// The print of the (up to [`TAIL_BYTES`]) bytes just before `offset`.
    fn before(file: &File, offset: u64) -> io::Result<HeadPrint> {
        let len = offset.min(TAIL_BYTES) as usize;
        let mut buffer = [0u8; TAIL_BYTES as usize];
        file.read_exact_at(&mut buffer[..len], offset - len as u64)?;
        Ok(HeadPrint {
            len: len as u32,
            hash: fnv1a(&buffer[..len]),
        })
    }

    /// Whether the bytes before `offset` in `file` are still those this
    /// print was taken from (unreadable ones are not).
    fn matches_before(&self, file: &File, offset: u64) -> bool {
        HeadPrint::before(file, offset).is_ok_and(|now| now == *self)
    }
}

/// Where reading stopped: which file (by identity) and at what offset. This is
/// what a checkpoint stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub dev: u64,
    pub ino: u64,
    pub head: HeadPrint,
    pub offset: u64,
    /// The file's modification time when it was last read: if the file is
    /// gone after a restart, the rotated files modified later are the ones
    /// not read yet. Absent in checkpoints of older agents.
    pub mtime: Option<SystemTime>,
    /// Print of the bytes just before `offset`: the file is still the one
    /// read only while they are unchanged. Absent in checkpoints of older
    /// agents.
    pub tail: Option<HeadPrint>,
}

impl Position {
    /// Whether `file` still holds, before this position's offset, the
    /// bytes read there (true when no print was taken).
    fn tail_matches(&self, file: &File) -> bool {
        self.tail
            .is_none_or(|tail| tail.matches_before(file, self.offset))
    }

    /// Whether `file` (of `file_len` bytes) holds what was read up to this
    /// position: its head and the bytes just before the offset.
    fn read_in(&self, file: &File, file_len: u64) -> bool {
        file_len >= self.offset
            && self.head.matches(file, file_len).unwrap_or(false)
            && self.tail_matches(file)
    }
}

/// Where to begin reading a file that has no checkpoint yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StartAt {
    /// Read the whole file: replays history, useful for a first import.
    Beginning,
    /// Skip what is already there: a fresh agent reports only new pauses.
    #[default]
    End,
}

/// Something worth a log line and a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Opened(PathBuf),
    /// The live file was replaced (rotation, or delete and recreate).
    Rotated,
    /// The live file was truncated or rewritten in place (copytruncate).
    Truncated,
    /// A file could not be opened for want of descriptors; tried again at
    /// the next poll.
    OutOfDescriptors,
    /// After a truncation, the bytes not yet read were found in this copy.
    RecoveredFromCopy(PathBuf),
    /// The checkpointed file is gone; reading restarts from the live file.
    CheckpointFileGone,
    Unreadable(String),
    /// The live path does not exist.
    Missing,
    /// This path resolves to `real`, outside the configured directories: not read.
    SymlinkOutside {
        path: PathBuf,
        real: PathBuf,
    },
    /// This path is, or leads to, a FIFO, socket, device or directory: not
    /// opened (a FIFO blocks an open, `/dev/zero` never ends).
    NotRegular {
        path: PathBuf,
        kind: &'static str,
    },
    /// The file was replaced or rewritten after its one writer exited
    /// ([`Follower::of_one_writer`]): the new file is another process's,
    /// and this follower ends.
    WriterExited,
}

/// Whether the one process writing a followed file still runs.
pub type StillWriting = Box<dyn FnMut() -> bool + Send>;

/// Puts rotated files, sorted by modification time, oldest first where the
/// caller knows better (a GC log's first timestamp survives a copy, mtimes
/// do not).
pub type Order = fn(Vec<PathBuf>) -> Vec<PathBuf>;

/// How a follower starts and what it may open.
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Where to begin in a file with no checkpoint.
    pub start_at: StartAt,
    pub confine: Confine,
    pub order: Order,
    /// Rotated files last modified before this are not of the stream, even
    /// at the beginning (a JVM's own log: its previous run's archives).
    pub written_since: Option<SystemTime>,
}

impl Default for FollowOptions {
    fn default() -> FollowOptions {
        FollowOptions {
            start_at: StartAt::default(),
            confine: Confine::Anywhere,
            order: |paths| paths,
            written_since: None,
        }
    }
}

/// Rotated files to read before the live file is first opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CatchUp {
    Nothing,
    /// `start_at = "beginning"`: every rotated file already there.
    All,
    /// The checkpointed file is gone: those rotated after it was last read.
    ModifiedAfter(SystemTime),
}

#[derive(Debug, Default)]
pub struct PollOutcome {
    pub bytes_read: u64,
    /// Bytes in the live file past the read position.
    pub lag_bytes: u64,
    pub files_known: u64,
    pub readable: bool,
    pub notes: Vec<Note>,
}

struct Current {
    file: File,
    position: Position,
    /// Modification time at the last read, to find files rotated after it.
    mtime: SystemTime,
    /// The right to keep `file` open after this poll.
    slot: Option<Slot>,
}

/// Whether a path is the file a position was taken in.
enum Identified {
    Yes(File, Metadata),
    No,
    /// It could not be opened for want of descriptors: nothing is known.
    OutOfDescriptors,
}

/// Follows `live_path` and the rotated files beside it.
pub struct Follower {
    live_path: PathBuf,
    /// The file written now, found at the start of each poll: `live_path`,
    /// or the `.current` file of a JDK 8 ring named `live_path`.
    live_file: PathBuf,
    start_at: StartAt,
    confine: Confine,
    order: Order,
    current: Option<Current>,
    /// Checkpointed position not yet matched to a file.
    resume: Option<Position>,
    catch_up: CatchUp,
    /// Paths refused by `confine` or for not being regular files, each
    /// reported once.
    refused: BTreeSet<PathBuf>,
    /// Notes made outside a poll's outcome, handed over at its end.
    notes: Vec<Note>,
    unreadable: Option<String>,
    /// Whether the file was closed after the last poll for want of a
    /// descriptor slot (`resume` says where it was): reopened quietly.
    parked: bool,
    /// Since when the live path has not existed, while it does not.
    missing_since: Option<Instant>,
    files_known: u64,
    files_known_at: Option<Instant>,
    /// Asked when the file is replaced or rewritten, for a file one process
    /// writes: once it has exited, the new file is not of this stream.
    writer: Option<StillWriting>,
    /// The writer exited and its file was replaced: nothing more to read.
    ended: bool,
}

fn identity(meta: &Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

impl Follower {
    pub fn new(
        live_path: PathBuf,
        options: FollowOptions,
        checkpoint: Option<Position>,
    ) -> Follower {
        let catch_up = match (checkpoint, options.start_at, options.written_since) {
            (None, StartAt::Beginning, None) => CatchUp::All,
            (None, StartAt::Beginning, Some(since)) => CatchUp::ModifiedAfter(since),
            _ => CatchUp::Nothing,
        };
        Follower {
            live_file: live_path.clone(),
            live_path,
            start_at: options.start_at,
            confine: options.confine,
            order: options.order,
            current: None,
            resume: checkpoint,
            catch_up,
            refused: BTreeSet::new(),
            notes: Vec::new(),
            unreadable: None,
            parked: false,
            missing_since: None,
            files_known: 0,
            files_known_at: None,
            writer: None,
            ended: false,
        }
    }

    /// How long the live path has been missing, if it is.
    pub fn missing_for(&self) -> Option<Duration> {
        self.missing_since.map(|since| since.elapsed())
    }

    pub fn live_path(&self) -> &Path {
        &self.live_path
    }

    /// The position to checkpoint: the file being read and how far.
    pub fn position(&self) -> Option<Position> {
        self.current
            .as_ref()
            .map(|c| Position {
                mtime: Some(c.mtime),
                ..c.position
            })
            .or(self.resume)
    }

    /// What decides where this follower's files may lead.
    pub fn confine(&self) -> &Confine {
        &self.confine
    }

    /// Opens `path` if `confine` allows where it leads and it is a regular
    /// file; `None` when not (noted once per path).
    fn open(&mut self, path: &Path) -> Option<io::Result<File>> {
        match self.confine.open(path) {
            Ok(file) => Some(Ok(file)),
            Err(OpenError::Io(error)) => Some(Err(error)),
            Err(OpenError::Outside(real)) => {
                self.refuse(
                    path,
                    Note::SymlinkOutside {
                        path: path.to_path_buf(),
                        real,
                    },
                );
                None
            }
            Err(OpenError::NotRegular(kind)) => {
                self.refuse(
                    path,
                    Note::NotRegular {
                        path: path.to_path_buf(),
                        kind,
                    },
                );
                None
            }
        }
    }

    fn refuse(&mut self, path: &Path, note: Note) {
        if self.refused.insert(path.to_path_buf()) {
            self.notes.push(note);
        }
    }

    /// The regular files beside the live path whose names `belongs` accepts
    /// (called with the live name and the file's name).
    fn beside(&self, belongs: fn(&str, &str) -> bool) -> Vec<(PathBuf, Metadata)> {
        let (Some(dir), Some(name)) = (self.live_path.parent(), self.live_path.file_name()) else {
            return Vec::new();
        };
        let name = name.to_string_lossy();
        let Ok(entries) = std::fs::read_dir(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        }) else {
            return Vec::new();
        };
        entries
            .filter_map(|entry| entry.ok())
            .filter(|entry| belongs(&name, &entry.file_name().to_string_lossy()))
            .filter_map(|entry| {
                let path = entry.path();
                let meta = std::fs::metadata(&path).ok()?;
                meta.is_file().then_some((path, meta))
            })
            .collect()
    }

    /// The file written now. The live path when it exists; else, for a JDK 8
    /// ring, the newest `gc.log.K.current` that is not older than the file
    /// being read: one an earlier JVM run left behind is not where writing
    /// goes on, and between HotSpot's rename of the full file and its
    /// creation of the next one there is none (the open file is kept).
    fn find_live_file(&self) -> PathBuf {
        if std::fs::symlink_metadata(&self.live_path).is_ok() {
            return self.live_path.clone();
        }
        // The file being read is still written to: no need to list the
        // directory (a stale one is listed past, when the JVM restarted).
        if let Some(current) = &self.current {
            let growing = std::fs::metadata(&self.live_file).is_ok_and(|meta| {
                identity(&meta) == (current.position.dev, current.position.ino)
                    && meta.len() > current.position.offset
            });
            if growing {
                return self.live_file.clone();
            }
        }
        let read_since = self.current.as_ref().map(|c| c.mtime);
        self.beside(ring_current_of)
            .into_iter()
            .filter_map(|(path, meta)| Some((meta.modified().ok()?, path)))
            .filter(|(mtime, _)| read_since.is_none_or(|since| *mtime >= since))
            .max()
            .map_or_else(|| self.live_path.clone(), |(_, path)| path)
    }

    /// The rotated siblings of the live file (`gc.log.0`, `gc.log.1`, ...).
    fn siblings(&mut self) -> Vec<(PathBuf, Metadata)> {
        self.beside(is_rotation_of)
            .into_iter()
            .filter(|(path, _)| match path.canonicalize() {
                Ok(real) if !self.confine.allows(&real) => {
                    let note = Note::SymlinkOutside {
                        path: path.clone(),
                        real,
                    };
                    self.refuse(path, note);
                    false
                }
                _ => true,
            })
            .collect()
    }

    /// Reads everything new, in order, handing the bytes to `sink`.
    /// The same follower for a file only `still_writing`'s process writes
    /// (a log discovery found): when the file is replaced or rewritten after
    /// that process exited, the last bytes of the old file are read and the
    /// follower ends, as the new file is another process's (a JVM restarted
    /// into the same log is a new stream).
    pub fn of_one_writer(mut self, still_writing: StillWriting) -> Follower {
        self.writer = Some(still_writing);
        self
    }

    /// Whether the file's one writer has exited (never, for a file anyone
    /// may write): then this follower ends, releasing the file.
    fn writer_exited(&mut self, outcome: &mut PollOutcome) -> bool {
        if self
            .writer
            .as_mut()
            .is_none_or(|still_writing| still_writing())
        {
            return false;
        }
        outcome.notes.push(Note::WriterExited);
        self.current = None;
        self.resume = None;
        self.ended = true;
        true
    }

    pub fn poll(&mut self, sink: &mut dyn FnMut(&[u8])) -> PollOutcome {
        let mut outcome = self.poll_files(sink);
        self.hold_or_park();
        outcome.notes.append(&mut self.notes);
        outcome
    }

    /// Keeps the file open for the next poll when a descriptor slot is
    /// free; otherwise closes it, to be found again by identity.
    fn hold_or_park(&mut self) {
        let Some(current) = &mut self.current else {
            return;
        };
        if current.slot.is_none() {
            current.slot = Slot::take();
        }
        if current.slot.is_none() {
            self.resume = self.position();
            self.current = None;
            self.parked = true;
        }
    }

    /// Whether nothing can have happened since the last read: the file at
    /// the path read last is the one held open, its length is the read
    /// position and its modification time the one seen after that read. One
    /// `stat` then stands for the poll's seven system calls and the hashing
    /// of its head: 200 quiet logs polled four times a second cost 16 % of a
    /// core before.
    fn unchanged_since_last_read(&self) -> bool {
        let Some(current) = &self.current else {
            return false;
        };
        // A JDK 8 ring's next `.current` file appears beside the one read,
        // which stays as it was: only a directory listing finds it.
        if self.live_file != self.live_path
            || self.resume.is_some()
            || self.unreadable.is_some()
            || self.missing_since.is_some()
            || self
                .files_known_at
                .is_none_or(|at| at.elapsed() >= FILES_KNOWN_REFRESH)
        {
            return false;
        }
        std::fs::metadata(&self.live_file).is_ok_and(|meta| {
            identity(&meta) == (current.position.dev, current.position.ino)
                && meta.len() == current.position.offset
                && meta.modified().is_ok_and(|mtime| mtime == current.mtime)
        })
    }

    fn poll_files(&mut self, sink: &mut dyn FnMut(&[u8])) -> PollOutcome {
        let mut outcome = PollOutcome {
            readable: true,
            ..PollOutcome::default()
        };
        if self.ended || self.unchanged_since_last_read() {
            outcome.files_known = self.files_known;
            return outcome;
        }
        self.live_file = self.find_live_file();
        if let Some(resume) = self.resume.take() {
            self.open_checkpointed(resume, &mut outcome);
            if self.resume.is_some() {
                // Not found yet, nor known to be gone: nothing to read now.
                return outcome;
            }
        }
        // Before reading on: a truncated file must not be read from the old offset.
        self.check_rewritten(sink, &mut outcome);
        if self.ended {
            return outcome;
        }
        self.drain(sink, &mut outcome);
        let live = match std::fs::metadata(&self.live_file) {
            // A directory is no trap (it cannot be opened for reading):
            // counted as unreadable, as before the other kinds were refused.
            Ok(meta) if meta.is_dir() => {
                let error = io::Error::new(io::ErrorKind::InvalidInput, "not a regular file");
                self.note_unreadable(error, &mut outcome);
                return outcome;
            }
            Ok(meta) if !meta.is_file() => {
                let kind = confine::kind_of(meta.file_type());
                let message = format!("{}: not a regular file ({kind})", self.live_path.display());
                let note = Note::NotRegular {
                    path: self.live_file.clone(),
                    kind,
                };
                self.note_unreadable_as(message, note, &mut outcome);
                return outcome;
            }
            Ok(meta) => {
                self.missing_since = None;
                meta
            }
            Err(error) if error.kind() == io::ErrorKind::NotFound => {
                // Between a rename and the new file, or deleted: keep what is open.
                if self.current.is_none() {
                    // Not there when the follower started, or gone since: when
                    // it appears, all of it is new.
                    self.start_at = StartAt::Beginning;
                }
                if self.missing_since.is_none() {
                    self.missing_since = Some(Instant::now());
                    outcome.notes.push(Note::Missing);
                }
                outcome.files_known = u64::from(self.current.is_some());
                return outcome;
            }
            Err(error) => {
                self.note_unreadable(error, &mut outcome);
                return outcome;
            }
        };
        let same_file = self
            .current
            .as_ref()
            .is_some_and(|c| (c.position.dev, c.position.ino) == identity(&live));
        if self.current.is_some() && !same_file {
            // Rotated or recreated: the writer has closed the old file, so one
            // more drain gets its last bytes; then any files rotated since.
            self.drain(sink, &mut outcome);
            outcome.notes.push(Note::Rotated);
            if self.writer_exited(&mut outcome) {
                outcome.files_known = self.files_known;
                return outcome;
            }
            if let Some(finished) = self.current.take() {
                let skip = [
                    (finished.position.dev, finished.position.ino),
                    identity(&live),
                ];
                self.read_rotated(Some(finished.mtime), &skip, sink, &mut outcome);
            }
            self.open_live(0, &mut outcome);
            self.drain(sink, &mut outcome);
        } else if self.current.is_none() {
            let since = match std::mem::replace(&mut self.catch_up, CatchUp::Nothing) {
                CatchUp::Nothing => None,
                CatchUp::All => Some(None),
                CatchUp::ModifiedAfter(mtime) => Some(Some(mtime)),
            };
            if let Some(since) = since {
                self.read_rotated(since, &[identity(&live)], sink, &mut outcome);
            }
            let first_read = match self.start_at {
                StartAt::Beginning => 0,
                StartAt::End => live.len(),
            };
            self.open_live(first_read, &mut outcome);
            self.drain(sink, &mut outcome);
        }
        if let Some(current) = &self.current {
            if identity(&live) == (current.position.dev, current.position.ino) {
                outcome.lag_bytes = live.len().saturating_sub(current.position.offset);
            }
        }
        // Listing the directory on every poll would dominate the agent's CPU
        // at high write rates; the count only changes with rotations.
        if self
            .files_known_at
            .is_none_or(|at| at.elapsed() >= FILES_KNOWN_REFRESH)
            || outcome
                .notes
                .iter()
                .any(|n| matches!(n, Note::Rotated | Note::Truncated | Note::Opened(_)))
        {
            self.files_known = 1 + self.siblings().len() as u64;
            self.files_known_at = Some(Instant::now());
        }
        outcome.files_known = self.files_known;
        outcome.readable = self.unreadable.is_none();
        outcome
    }

    fn note_unreadable(&mut self, error: io::Error, outcome: &mut PollOutcome) {
        let message = format!("{}: {error}", self.live_path.display());
        self.note_unreadable_as(message.clone(), Note::Unreadable(message), outcome);
    }

    /// The live file cannot be read, for `message`: `note` once, until the
    /// reason changes.
    fn note_unreadable_as(&mut self, message: String, note: Note, outcome: &mut PollOutcome) {
        if self.unreadable.as_deref() != Some(message.as_str()) {
            outcome.notes.push(note);
        }
        self.unreadable = Some(message);
        outcome.readable = false;
    }

    /// `path` opened, if it is the file `resume` was taken in.
    fn identified(&mut self, path: &Path, resume: &Position) -> Identified {
        let file = match self.open(path) {
            Some(Ok(file)) => file,
            Some(Err(error)) if descriptors::exhausted(&error) => {
                return Identified::OutOfDescriptors
            }
            _ => return Identified::No,
        };
        match file.metadata() {
            Ok(meta)
                if identity(&meta) == (resume.dev, resume.ino)
                    && resume.read_in(&file, meta.len()) =>
            {
                Identified::Yes(file, meta)
            }
            _ => Identified::No,
        }
    }

    /// Finds the checkpointed file (live, or rotated while the agent was
    /// down, or a JDK 8 ring's `.current` file a JVM run left when it
    /// exited), or the file this follower closed for want of a descriptor
    /// slot. Out of descriptors, it tries again at the next poll.
    fn open_checkpointed(&mut self, resume: Position, outcome: &mut PollOutcome) {
        let reopening = std::mem::take(&mut self.parked);
        let live = self.live_file.clone();
        let mut found = (live.clone(), self.identified(&live, &resume));
        // The live file first: a parked follower lists no directory while
        // its file is still the live one.
        if matches!(found.1, Identified::No) {
            let mut others: Vec<PathBuf> = self.siblings().into_iter().map(|(p, _)| p).collect();
            let ring = self.beside(ring_current_of).into_iter();
            others.extend(ring.map(|(path, _)| path).filter(|p| *p != live));
            for path in others {
                let identified = self.identified(&path, &resume);
                if !matches!(identified, Identified::No) {
                    found = (path, identified);
                    break;
                }
            }
        }
        match found {
            (_, Identified::OutOfDescriptors) => {
                self.resume = Some(resume);
                self.parked = reopening;
                outcome.notes.push(Note::OutOfDescriptors);
                return;
            }
            (path, Identified::Yes(file, meta)) => {
                if !reopening || path != live {
                    outcome.notes.push(Note::Opened(path));
                }
                self.current = Some(Current {
                    file,
                    position: resume,
                    mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                    slot: None,
                });
                return;
            }
            (_, Identified::No) => {}
        }
        // copytruncate while the agent was down: the checkpointed inode is
        // still the live file but truncated or rewritten, and its bytes are in
        // a copy with a new inode. Resume in the copy at the checkpointed
        // offset; `poll` then finishes the copy and reads the live file from 0.
        if let Some((path, file, meta)) = self.copy_of(&resume) {
            outcome.notes.push(Note::RecoveredFromCopy(path));
            let (dev, ino) = identity(&meta);
            self.current = Some(Current {
                file,
                position: Position { dev, ino, ..resume },
                mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                slot: None,
            });
            return;
        }
        outcome.notes.push(Note::CheckpointFileGone);
        // Everything in the live file is newer than the checkpoint, and so is
        // every rotated file modified after the checkpointed one was read.
        self.start_at = StartAt::Beginning;
        if let Some(mtime) = resume.mtime {
            self.catch_up = CatchUp::ModifiedAfter(mtime);
        }
    }

    /// A rotated copy of the checkpointed file, when the live file still has
    /// the checkpointed identity but no longer its bytes (copytruncate).
    fn copy_of(&mut self, resume: &Position) -> Option<(PathBuf, File, Metadata)> {
        let live = self.open(&self.live_file.clone())?.ok()?;
        let live_meta = live.metadata().ok()?;
        let rewritten = identity(&live_meta) == (resume.dev, resume.ino)
            && !resume.read_in(&live, live_meta.len());
        if !rewritten {
            return None;
        }
        self.siblings().into_iter().find_map(|(path, meta)| {
            if meta.len() < resume.offset {
                return None;
            }
            let file = self.confine.open(&path).ok()?;
            resume
                .read_in(&file, meta.len())
                .then_some((path, file, meta))
        })
    }

    fn open_live(&mut self, offset: u64, outcome: &mut PollOutcome) {
        let file = match self.open(&self.live_file.clone()) {
            Some(Ok(file)) => file,
            Some(Err(error)) => {
                self.current = None;
                if offset == 0 {
                    // Whenever it can be opened, all of it is still new.
                    self.start_at = StartAt::Beginning;
                }
                if descriptors::exhausted(&error) {
                    outcome.notes.push(Note::OutOfDescriptors);
                } else {
                    self.note_unreadable(error, outcome);
                }
                return;
            }
            None => {
                self.current = None;
                outcome.readable = false;
                self.unreadable = Some("outside the configured directories".to_string());
                return;
            }
        };
        self.unreadable = None;
        let Ok(meta) = file.metadata() else { return };
        let offset = if offset == 0 {
            0
        } else {
            line_start_before(&file, offset)
        };
        let (dev, ino) = identity(&meta);
        let head = HeadPrint::of(&file, meta.len()).unwrap_or(HeadPrint {
            len: 0,
            hash: fnv1a(&[]),
        });
        outcome.notes.push(Note::Opened(self.live_file.clone()));
        let tail = HeadPrint::before(&file, offset).ok();
        self.current = Some(Current {
            file,
            position: Position {
                dev,
                ino,
                head,
                offset,
                mtime: None,
                tail,
            },
            mtime: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
            slot: None,
        });
    }

    /// Reads the current file from its position to its end.
    fn drain(&mut self, sink: &mut dyn FnMut(&[u8]), outcome: &mut PollOutcome) {
        let Some(current) = &mut self.current else {
            return;
        };
        let from = current.position.offset;
        let read = read_from(
            &mut current.file,
            &mut current.position.offset,
            sink,
            &mut outcome.bytes_read,
        );
        if current.position.offset != from {
            current.position.tail = HeadPrint::before(&current.file, current.position.offset).ok();
        }
        if let Err(error) = read {
            let message = format!("{}: {error}", self.live_path.display());
            outcome.notes.push(Note::Unreadable(message));
            outcome.readable = false;
            return;
        }
        if let Ok(meta) = current.file.metadata() {
            current.mtime = meta.modified().unwrap_or(current.mtime);
            if current.position.head.len < HEAD_BYTES as u32
                && meta.len() > u64::from(current.position.head.len)
            {
                if let Ok(head) = HeadPrint::of(&current.file, meta.len()) {
                    current.position.head = head;
                }
            }
        }
    }

    /// Same inode as before: was it truncated (copytruncate) or rewritten?
    fn check_rewritten(&mut self, sink: &mut dyn FnMut(&[u8]), outcome: &mut PollOutcome) {
        let Some(current) = &self.current else { return };
        let Ok(meta) = current.file.metadata() else {
            return;
        };
        // Shorter than the position, another head, or other bytes just
        // before the position: a writer without O_APPEND refills the file
        // from its old offset after a truncation, behind a hole of NULs.
        if current.position.read_in(&current.file, meta.len()) {
            return;
        }
        outcome.notes.push(Note::Truncated);
        let old = current.position;
        if self.writer_exited(outcome) {
            return;
        }
        // logrotate's copy holds the bytes written before the truncation:
        // the one whose bytes up to the position are those read.
        for (path, meta) in self.siblings() {
            if meta.len() <= old.offset || identity(&meta) == (old.dev, old.ino) {
                continue;
            }
            let Some(Ok(mut copy)) = self.open(&path) else {
                continue;
            };
            if !old.read_in(&copy, meta.len()) {
                continue;
            }
            let mut offset = old.offset;
            if read_from(&mut copy, &mut offset, sink, &mut outcome.bytes_read).is_ok() {
                outcome.notes.push(Note::RecoveredFromCopy(path));
            }
            break;
        }
        self.open_live(0, outcome);
        self.drain(sink, outcome);
    }

    /// Reads the rotated files modified after `since` (all of them for
    /// `None`) but those in `skip`, oldest first: after several rotations
    /// between two polls, on a first start at the beginning, or after a
    /// restart that found the checkpointed file gone.
    fn read_rotated(
        &mut self,
        since: Option<SystemTime>,
        skip: &[(u64, u64)],
        sink: &mut dyn FnMut(&[u8]),
        outcome: &mut PollOutcome,
    ) {
        let mut newer: Vec<(PathBuf, Metadata)> = self
            .siblings()
            .into_iter()
            .filter(|(_, meta)| {
                !skip.contains(&identity(meta))
                    && since.is_none_or(|since| meta.modified().is_ok_and(|m| m > since))
            })
            .collect();
        newer.sort_by_key(|(_, meta)| meta.modified().ok());
        for path in (self.order)(newer.into_iter().map(|(path, _)| path).collect()) {
            let Some(Ok(mut file)) = self.open(&path) else {
                continue;
            };
            let mut offset = 0;
            if read_from(&mut file, &mut offset, sink, &mut outcome.bytes_read).is_ok() {
                outcome.notes.push(Note::Opened(path));
            }
        }
    }
}

/// The offset just after the last newline before `offset`, so that starting
/// "at the end" never begins in the middle of a line.
fn line_start_before(file: &File, offset: u64) -> u64 {
    let window = offset.min(64 * 1024);
    let mut buffer = vec![0u8; window as usize];
    if file.read_exact_at(&mut buffer, offset - window).is_err() {
        return offset;
    }
    match memchr::memrchr(b'\n', &buffer) {
        Some(index) => offset - window + index as u64 + 1,
        None if window == offset => 0,
        None => offset,
    }
}

fn read_from(
    file: &mut File,
    offset: &mut u64,
    sink: &mut dyn FnMut(&[u8]),
    total: &mut u64,
) -> io::Result<()> {
    thread_local! {
        /// One read buffer per thread, not one allocation per poll.
        static BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; READ_CHUNK]);
    }
    BUFFER.with(|buffer| {
        let mut buffer = buffer.borrow_mut();
        loop {
            let read = match file.read_at(&mut buffer, *offset) {
                Ok(0) => return Ok(()),
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            sink(&buffer[..read]);
            *offset += read as u64;
            *total += read as u64;
        }
    })
}

#[cfg(test)]
mod tests;
