//! Which directories a followed file may resolve into. The agent often runs
//! as root: a `gc.log -> /etc/shadow` link must not put a secret's size and
//! line count into `/metrics`, so by default a file is read only when its
//! real path lies in a directory the configuration names.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
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
    Io(io::Error),
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
            return File::open(path).map_err(OpenError::Io);
        }
        let real = path.canonicalize().map_err(OpenError::Io)?;
        if !self.contains(&real) {
            return Err(OpenError::Outside(real));
        }
        let file = File::open(&real).map_err(OpenError::Io)?;
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
}
