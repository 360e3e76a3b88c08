//! Which directories a followed file may resolve into. The agent often runs
//! as root: a `gc.log -> /etc/shadow` link must not put a secret's size and
//! line count into `/metrics`, so by default a file is read only when its
//! real path lies in a directory the configuration names.

use std::collections::BTreeSet;
use std::fs::{File, FileType, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Confine {
    /// Symlinks are followed wherever they lead.
    #[default]
    Anywhere,
    /// Real paths must lie below one of these directories. Shared: every
    /// source of a config gets the same list, and 10,000 sources each with
    /// its own copy of 10,000 directories took gigabytes.
    Within(Arc<[PathBuf]>),
}

/// Why a file was not opened.
#[derive(Debug)]
pub enum OpenError {
    /// It resolves to this real path, outside the allowed directories.
    Outside(PathBuf),
    /// It is (or leads to) this kind of file, not a regular one: a FIFO
    /// would block the open, `/dev/zero` would never end.
    NotRegular(&'static str),
    Io(io::Error),
}

/// What a file that is not a regular file is, in words for a log line.
pub fn kind_of(file_type: FileType) -> &'static str {
    if file_type.is_fifo() {
        "fifo"
    } else if file_type.is_socket() {
        "socket"
    } else if file_type.is_char_device() {
        "character device"
    } else if file_type.is_block_device() {
        "block device"
    } else if file_type.is_dir() {
        "directory"
    } else {
        "not a regular file"
    }
}

/// Opens `path` for reading only if it is a regular file, without ever
/// blocking: the target is checked with `stat` first, opened with
/// `O_NONBLOCK` (a FIFO swapped in after the check opens at once instead
/// of waiting for a writer) and `O_NOCTTY`, then checked again on the
/// descriptor itself. `O_NONBLOCK` changes nothing for a regular file.
pub fn open_regular(path: &Path) -> Result<File, OpenError> {
    let meta = std::fs::metadata(path).map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular(kind_of(meta.file_type())));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(OpenError::Io)?;
    let opened = file.metadata().map_err(OpenError::Io)?;
    if !opened.is_file() {
        return Err(OpenError::NotRegular(kind_of(opened.file_type())));
    }
    Ok(file)
}

impl OpenError {
    /// The error as an `io::Error`, for callers that only need to know it failed.
    pub fn into_io(self) -> io::Error {
        match self {
            OpenError::Io(error) => error,
            OpenError::Outside(real) => io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "leads out of the configured directories to {}",
                    real.display()
                ),
            ),
            OpenError::NotRegular(kind) => io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a regular file ({kind})"),
            ),
        }
    }
}

impl Confine {
    /// The directories `roots`, each once: every check resolves each root.
    /// (One below another is kept: it may be a link that leads elsewhere.)
    pub fn within(roots: impl IntoIterator<Item = PathBuf>) -> Confine {
        let roots: BTreeSet<PathBuf> = roots.into_iter().collect();
        Confine::Within(roots.into_iter().collect())
    }

    /// Whether the real path `real` lies in an allowed directory. Roots are
    /// resolved at each check: they may be links themselves, or appear later.
    fn contains(&self, real: &Path) -> bool {
        match self {
            Confine::Anywhere => true,
            Confine::Within(roots) => roots.iter().any(|root| {
                let root = root.canonicalize().unwrap_or_else(|_| root.clone());
                real.starts_with(root)
            }),
        }
    }

    /// Whether `path` may be read; a path that does not resolve is allowed,
    /// as there is nothing behind it to read.
    pub fn allows(&self, path: &Path) -> bool {
        *self == Confine::Anywhere
            || path
                .canonicalize()
                .map_or(true, |real| self.contains(&real))
    }

    /// Opens `path` for reading if it resolves inside the allowed directories.
    pub fn open(&self, path: &Path) -> Result<File, OpenError> {
        if *self == Confine::Anywhere {
            return open_regular(path);
        }
        let real = path.canonicalize().map_err(OpenError::Io)?;
        if !self.contains(&real) {
            return Err(OpenError::Outside(real));
        }
        let file = open_regular(&real)?;
        // A link re-pointed between the check and the open: ask the kernel
        // what was opened.
        if let Ok(opened) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            if !self.contains(&opened) {
                return Err(OpenError::Outside(opened));
            }
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_link_out_of_the_roots_is_refused_and_one_inside_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let (logs, secret) = (dir.path().join("logs"), dir.path().join("secret"));
        std::fs::create_dir_all(logs.join("r1")).unwrap();
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("shadow"), "root:x\n").unwrap();
        std::fs::write(logs.join("r1/gc.log"), "gc\n").unwrap();
        symlink("../secret/shadow", logs.join("gc.log")).unwrap();
        symlink("r1/gc.log", logs.join("current.log")).unwrap();
        let confine = Confine::within([logs.clone()]);
        assert!(!confine.allows(&logs.join("gc.log")));
        assert!(matches!(
            confine.open(&logs.join("gc.log")),
            Err(OpenError::Outside(real)) if real.ends_with("secret/shadow")
        ));
        assert!(confine.allows(&logs.join("current.log")));
        assert!(confine.open(&logs.join("current.log")).is_ok());
        assert!(confine.allows(&logs.join("not-yet.log")));
        assert!(Confine::Anywhere.open(&logs.join("gc.log")).is_ok());
    }

    #[test]
    fn a_fifo_or_a_device_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("gc.log");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success(), "mkfifo");
        symlink("/dev/zero", dir.path().join("zero.log")).unwrap();
        let confine = Confine::within([dir.path().to_path_buf()]);
        for (path, kind) in [
            (fifo, "fifo"),
            (dir.path().join("zero.log"), "character device"),
        ] {
            // A blocking open of the FIFO would hang this test: no writer comes.
            assert!(
                matches!(Confine::Anywhere.open(&path), Err(OpenError::NotRegular(k)) if k == kind),
                "{}",
                path.display()
            );
        }
        assert!(matches!(
            confine.open(&dir.path().join("zero.log")),
            Err(OpenError::Outside(_))
        ));
    }
}
