//! Finding, opening and reading a JVM's hsperfdata file as any local user
//! may have made it: the file lives in a directory its JVM's user owns, so
//! it may be a FIFO (an `open()` that waits for a writer forever), a symlink
//! to `/etc/shadow` or `/dev/zero`, a 10 GB sparse file, or random bytes.
//!
//! Like HotSpot's own attach code (`perfMemory_posix.cpp`), the final name
//! is opened without following a symlink; it is opened non-blocking and
//! refused unless `fstat` says it is a regular file; and no more than the
//! bytes the PerfData prologue says are in use are read, capped at
//! [`MAX_PERFDATA_BYTES`].
//!
//! And like HotSpot (`is_statbuf_secure`), a directory and a file are the
//! JVM's only when its user owns them and neither group nor others may
//! write them: any local user can make `/tmp/hsperfdata_VICTIM` before the
//! victim's first JVM starts (HotSpot then writes no file of its own) and
//! put there a file naming a GC log of theirs, which the root agent would
//! otherwise follow as the victim's. The file is opened inside the
//! directory that was checked (`openat`), so neither can be swapped between.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};

use pausewatch_parsers::hsperf::{self, PerfDataError, PROLOGUE_LEN};

/// The JVM whose file is looked for: its pid on the host and in its own
/// PID namespace (the file's name), and the user HotSpot writes it as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub pid: u32,
    pub nspid: u32,
    /// Its effective uid, when known.
    pub uid: Option<u32>,
}

/// The most bytes read of one hsperfdata file: HotSpot's default
/// `PerfDataMemorySize` is 64 KiB, and a file that says it uses more than
/// this is not believed.
pub const MAX_PERFDATA_BYTES: usize = 4 << 20;

/// `reason` of a file that is there but is not a regular file (a FIFO, a
/// device, a directory, a symlink).
pub const NOT_REGULAR: &str = "not_regular_file";
/// `reason` of a regular file whose bytes are not PerfData one can read.
pub const INVALID: &str = "invalid_hsperfdata";
/// `reason` when no file of the JVM's is found.
pub const MISSING: &str = "no_hsperfdata";
/// `reason` when the file, or the way to it, may not be read.
pub const DENIED: &str = "permission_denied";
/// `reason` of a file, or directory, that another user owns or may write:
/// not the JVM's own, whatever it says.
pub const UNTRUSTED: &str = "untrusted_hsperfdata";

/// Why a JVM's hsperfdata cannot be read: the `reason` label value, and what
/// was found, for the log line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub reason: &'static str,
    pub detail: String,
}

impl Unreadable {
    fn new(reason: &'static str, detail: String) -> Unreadable {
        Unreadable { reason, detail }
    }
}

/// Opens `path` for reading without blocking and without following a final
/// symlink, and keeps it only when it is a regular file.
pub fn open(path: &Path) -> Result<File, Unreadable> {
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY)
        .open(path);
    regular(path, opened.map_err(|error| refusal(path, error)))
}

/// The file opened, kept only when `fstat` says it is a regular file.
fn regular(path: &Path, opened: Result<File, Unreadable>) -> Result<File, Unreadable> {
    let file = opened?;
    let kind = file.metadata().map(|m| m.file_type());
    match kind {
        Ok(kind) if kind.is_file() => Ok(file),
        Ok(kind) => Err(Unreadable::new(
            NOT_REGULAR,
            format!("{} is a {}", path.display(), describe(kind)),
        )),
        Err(error) => Err(Unreadable::new(
            NOT_REGULAR,
            format!("{}: {error}", path.display()),
        )),
    }
}

/// Why `path` could not be opened, as a reason.
fn refusal(path: &Path, error: std::io::Error) -> Unreadable {
    // O_NOFOLLOW on a symlink.
    if error.raw_os_error() == Some(libc::ELOOP) {
        return Unreadable::new(NOT_REGULAR, format!("{} is a symlink", path.display()));
    }
    let reason = match error.kind() {
        ErrorKind::PermissionDenied => DENIED,
        ErrorKind::NotFound => MISSING,
        _ => NOT_REGULAR,
    };
    Unreadable::new(reason, format!("{}: {error}", path.display()))
}

/// Whether what `file` is open on is the JVM's user's alone, as HotSpot
/// checks its own directory and file: owned by `uid`, and writable by
/// neither group nor others.
fn owned_alone(file: &File, path: &Path, uid: u32) -> Result<(), Unreadable> {
    let metadata = file
        .metadata()
        .map_err(|error| Unreadable::new(UNTRUSTED, format!("{}: {error}", path.display())))?;
    let untrusted = |why: String| Unreadable::new(UNTRUSTED, format!("{} {why}", path.display()));
    if metadata.uid() != uid {
        return Err(untrusted(format!(
            "is owned by uid {}, not by the JVM's uid {uid}",
            metadata.uid()
        )));
    }
    if metadata.mode() & 0o022 != 0 {
        return Err(untrusted(format!(
            "may be written by other users (mode {:o})",
            metadata.mode() & 0o7777
        )));
    }
    Ok(())
}

/// The file `name` in the hsperfdata directory `dir`, opened inside the
/// directory (never a symlink, a FIFO or a device), when both are the
/// user `uid`'s alone. A directory without the file is [`MISSING`], whoever
/// owns it: every user's JVMs have one.
fn open_owned(dir: &Path, name: &str, uid: u32) -> Result<File, Unreadable> {
    let directory = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(dir)
        .map_err(|error| refusal(dir, error))?;
    let path = dir.join(name);
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::NOCTTY;
    let opened = rustix::fs::openat(&directory, name, flags | OFlags::CLOEXEC, Mode::empty())
        .map(File::from)
        .map_err(|errno| refusal(&path, errno.into()));
    let file = regular(&path, opened)?;
    owned_alone(&directory, dir, uid)?;
    owned_alone(&file, &path, uid)?;
    Ok(file)
}

fn describe(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_fifo() {
        "FIFO"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "device"
    } else if kind.is_dir() {
        "directory"
    } else {
        "file that is not a regular file"
    }
}

/// The JVM's hsperfdata file (`/proc/PID/root/tmp/hsperfdata_*/NSPID`),
/// opened; or why there is none, saying what was found.
pub fn find(proc_root: &Path, process: Owner) -> Result<(PathBuf, File), Unreadable> {
    let tmp = proc_root.join(process.pid.to_string()).join("root/tmp");
    let entries = std::fs::read_dir(&tmp).map_err(|error| {
        let reason = match error.kind() {
            ErrorKind::PermissionDenied => DENIED,
            _ => MISSING,
        };
        Unreadable::new(reason, format!("cannot list {}: {error}", tmp.display()))
    })?;
    let name = process.nspid.to_string();
    let uid = process.uid.ok_or_else(|| {
        Unreadable::new(
            UNTRUSTED,
            format!("the owner of process {} is not known", process.pid),
        )
    })?;
    let mut directories = 0;
    let mut refused: Option<Unreadable> = None;
    for entry in entries.flatten() {
        if !entry
            .file_name()
            .to_string_lossy()
            .starts_with("hsperfdata_")
        {
            continue;
        }
        directories += 1;
        let dir = entry.path();
        match open_owned(&dir, &name, uid) {
            Ok(file) => return Ok((dir.join(&name), file)),
            // A refusal says more than a directory without the file.
            Err(unreadable) if unreadable.reason != MISSING => refused = Some(unreadable),
            Err(_) => {}
        }
    }
    Err(refused.unwrap_or_else(|| {
        Unreadable::new(
            MISSING,
            format!(
                "no file {name} in the {directories} hsperfdata_* directories of {}",
                tmp.display()
            ),
        )
    }))
}

/// Reads the PerfData in `file` into `buffer`: the bytes its prologue says
/// are in use, never more than [`MAX_PERFDATA_BYTES`] nor than the file has.
/// `Err` is why the bytes are not PerfData; an I/O error is one too (a
/// regular file that cannot be read is of no use either).
pub fn read(file: &File, buffer: &mut Vec<u8>) -> Result<(), String> {
    let mut prologue = [0u8; PROLOGUE_LEN];
    let got = read_at_most(file, &mut prologue)?;
    let prologue = hsperf::parse_prologue(&prologue[..got]).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    if prologue.used < PROLOGUE_LEN {
        return Err(format!(
            "the prologue says {} bytes are used, fewer than itself",
            prologue.used
        ));
    }
    if prologue.used > MAX_PERFDATA_BYTES {
        return Err(format!(
            "the prologue says {} bytes are used, more than the {MAX_PERFDATA_BYTES} read",
            prologue.used
        ));
    }
    if prologue.used as u64 > size {
        return Err(format!(
            "the prologue says {} bytes are used, the file has {size}: truncated",
            prologue.used
        ));
    }
    buffer.resize(prologue.used, 0);
    let got = read_at_most(file, buffer)?;
    if got < buffer.len() {
        return Err(PerfDataError::TooShort(got).to_string());
    }
    Ok(())
}

/// Fills as much of `buffer` as the file has from its start.
fn read_at_most(file: &File, buffer: &mut [u8]) -> Result<usize, String> {
    let mut got = 0;
    while got < buffer.len() {
        match file.read_at(&mut buffer[got..], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) => return Err(error.to_string()),
        }
    }
    Ok(got)
}

/// The whole PerfData of the JVM's file, for one look at it (discovery's
/// `java.rt.vmArgs`).
pub fn read_once(proc_root: &Path, process: Owner) -> Option<Vec<u8>> {
    let (_, file) = find(proc_root, process).ok()?;
    let mut bytes = Vec::new();
    read(&file, &mut bytes).ok()?;
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("123");
        let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
        let refused = open(&fifo).unwrap_err();
        assert_eq!(refused.reason, NOT_REGULAR);
        assert!(refused.detail.ends_with("is a FIFO"), "{}", refused.detail);
    }

    #[test]
    fn a_symlink_and_a_device_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("7");
        std::os::unix::fs::symlink("/etc/passwd", &link).unwrap();
        assert_eq!(open(&link).unwrap_err().reason, NOT_REGULAR);
        let device = open(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(device.reason, NOT_REGULAR);
        assert!(device.detail.ends_with("is a device"), "{}", device.detail);
        assert_eq!(open(&dir.path().join("8")).unwrap_err().reason, MISSING);
    }

    /// Another user's directory, or one any user may write, is not the
    /// JVM's: the forged file in it is refused, said why; a directory
    /// without the file is only missing, whoever owns it.
    #[test]
    fn a_file_is_the_jvms_only_when_its_user_alone_owns_it_and_its_directory() {
        use std::os::unix::fs::PermissionsExt;
        let own = rustix::process::geteuid().as_raw();
        let dir = tempfile::tempdir().unwrap();
        let hsperf = dir.path().join("hsperfdata_victim");
        std::fs::create_dir(&hsperf).unwrap();
        std::fs::set_permissions(&hsperf, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(hsperf.join("42"), fixture()).unwrap();
        std::fs::set_permissions(hsperf.join("42"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        assert!(open_owned(&hsperf, "42", own).is_ok());
        let other = open_owned(&hsperf, "42", own + 1).unwrap_err();
        assert_eq!(other.reason, UNTRUSTED);
        assert!(
            other.detail.contains("hsperfdata_victim is owned by uid"),
            "{}",
            other.detail
        );
        assert_eq!(
            open_owned(&hsperf, "43", own + 1).unwrap_err().reason,
            MISSING
        );
        std::fs::set_permissions(&hsperf, std::fs::Permissions::from_mode(0o777)).unwrap();
        let open_to_all = open_owned(&hsperf, "42", own).unwrap_err();
        assert_eq!(open_to_all.reason, UNTRUSTED);
        assert!(
            open_to_all.detail.ends_with("(mode 777)"),
            "{}",
            open_to_all.detail
        );
        std::fs::set_permissions(&hsperf, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(hsperf.join("42"), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        assert_eq!(
            open_owned(&hsperf, "42", own).unwrap_err().reason,
            UNTRUSTED
        );
        // A symlinked directory is not followed.
        std::os::unix::fs::symlink(&hsperf, dir.path().join("hsperfdata_link")).unwrap();
        let link = open_owned(&dir.path().join("hsperfdata_link"), "42", own).unwrap_err();
        assert_eq!(link.reason, NOT_REGULAR);
    }

    fn fixture() -> Vec<u8> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::read(root.join("tests/fixtures/hsperf/jdk17-g1/hsperfdata")).unwrap()
    }

    /// The prologue's `used` (little-endian, the fixtures' order), set to `used`.
    fn with_used(mut bytes: Vec<u8>, used: u32) -> Vec<u8> {
        bytes[8..12].copy_from_slice(&used.to_le_bytes());
        bytes
    }

    #[test]
    fn only_the_bytes_in_use_are_read_of_a_10_gb_file() {
        let bytes = fixture();
        let used = hsperf::parse_prologue(&bytes).unwrap().used;
        assert!(used <= bytes.len(), "{used}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1");
        std::fs::write(&path, &bytes).unwrap();
        let writer = OpenOptions::new().write(true).open(&path).unwrap();
        writer.set_len(10 << 30).unwrap();
        let file = open(&path).unwrap();
        let mut buffer = Vec::new();
        read(&file, &mut buffer).unwrap();
        assert_eq!(buffer, bytes[..used]);
        assert!(hsperf::parse(&buffer).is_ok());
    }

    #[test]
    fn an_absurd_or_truncated_prologue_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1");
        let mut buffer = Vec::new();
        let mut refusal = |bytes: &[u8]| {
            std::fs::write(&path, bytes).unwrap();
            read(&open(&path).unwrap(), &mut buffer).unwrap_err()
        };
        let absurd = refusal(&with_used(fixture(), i32::MAX as u32));
        assert!(absurd.contains("more than the"), "{absurd}");
        let bytes = fixture();
        let used = hsperf::parse_prologue(&bytes).unwrap().used;
        let truncated = refusal(&bytes[..used / 2]);
        assert!(truncated.contains("truncated"), "{truncated}");
        let random = refusal(b"root:$6$abcdefgh:19000:0:99999:7:::\n");
        assert!(random.contains("not PerfData"), "{random}");
        assert!(refusal(&with_used(fixture(), 4)).contains("fewer than itself"));
        assert!(buffer.len() <= MAX_PERFDATA_BYTES);
    }
}
