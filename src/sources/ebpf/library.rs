//! A libjvm.so as the agent opens it before libbpf sees it: the very file
//! a process maps, opened without blocking and checked (a regular ELF file
//! of a sane size, the inode the maps name, a believable number of probe
//! sites, owned by root or the process's own user and writable by no other),
//! and whether the process mapping it shows a JVM's signs.
//!
//! Any local user can name a process `java` and make its libjvm.so
//! whatever they like: a FIFO (libbpf's `open()` then waits for a writer
//! forever), a file unlinked and replaced, a JDK upgraded in place under a
//! running JVM (`mv new libjvm.so`, as dpkg and rpm do), a copy of their
//! own with 200,000 probe sites. libbpf is handed `/proc/self/fd/N` of the
//! descriptor opened here, never a path another user can change.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::store::EbpfReason;

/// The largest libjvm.so believed: HotSpot's are 15-25 MB (with debug
/// symbols, under 300 MB); a larger file is not parsed.
const MAX_LIBJVM_BYTES: u64 = 512 << 20;

/// The largest `.note.stapsdt` section believed: HotSpot's has 530-570
/// probe sites in 50 KB (JDK 17 and 25); libbpf parses every site of a
/// file it attaches to (200,000 took the agent to 113 MB and a 6 s loop).
const MAX_NOTE_BYTES: u64 = 1 << 20;
/// The most probe sites believed in one library.
const MAX_PROBE_SITES: usize = 10_000;

/// A file's identity: device and inode, which uprobes are attached to.
pub type FileId = (u64, u64);

/// A libjvm.so opened by the agent itself, checked, ready to be attached
/// through its descriptor.
pub struct Library {
    pub file: File,
    pub id: FileId,
    /// What the logs call it: the path the process maps it at.
    pub shown: PathBuf,
    owner: u32,
    mode: u32,
}

impl Library {
    /// Why it must not be attached for a process of `uid`, if it must not:
    /// a file another non-root user owns or may write is theirs to change.
    pub fn untrusted_for(&self, uid: u32) -> Option<String> {
        let shown = self.shown.display();
        if self.owner != 0 && self.owner != uid {
            return Some(format!(
                "{shown} is owned by uid {}, neither root nor the process's uid {uid}",
                self.owner
            ));
        }
        (self.mode & 0o022 != 0).then(|| {
            format!(
                "{shown} may be written by other users (mode {:o})",
                self.mode & 0o7777
            )
        })
    }

    /// The probe sites its `.note.stapsdt` section holds, refused when
    /// there are more than any JDK has: what libbpf would parse.
    pub fn probe_sites(&self) -> Result<usize, String> {
        let shown = self.shown.display();
        let notes = stapsdt_section(&self.file).map_err(|e| format!("{shown}: {e}"))?;
        let Some((offset, size)) = notes else {
            return Ok(0);
        };
        if size > MAX_NOTE_BYTES {
            return Err(format!(
                "{shown} has {size} bytes of probe notes, more than any JDK's"
            ));
        }
        let mut bytes = vec![0; size as usize];
        self.file
            .read_exact_at(&mut bytes, offset)
            .map_err(|e| format!("{shown}: {e}"))?;
        let sites = count_stapsdt_notes(&bytes);
        if sites > MAX_PROBE_SITES {
            return Err(format!(
                "{shown} has {sites} probe sites, more than any JDK's"
            ));
        }
        Ok(sites)
    }
}

/// Reads `N` bytes of `file` at `offset`.
fn bytes_at<const N: usize>(file: &File, offset: u64) -> std::io::Result<[u8; N]> {
    let mut bytes = [0; N];
    file.read_exact_at(&mut bytes, offset)?;
    Ok(bytes)
}

/// The offset and size of an ELF64 file's `.note.stapsdt` section, if it
/// has one. Only 64-bit little-endian files: what the JDKs on the
/// architectures HotSpot's probes are attached on are.
fn stapsdt_section(file: &File) -> Result<Option<(u64, u64)>, String> {
    let io = |e: std::io::Error| e.to_string();
    let ident: [u8; 6] = bytes_at(file, 0).map_err(io)?;
    if ident[4] != 2 || ident[5] != 1 {
        return Err("not a 64-bit little-endian ELF file".to_string());
    }
    let header: [u8; 64] = bytes_at(file, 0).map_err(io)?;
    let u16_at = |b: &[u8], at: usize| u16::from_le_bytes([b[at], b[at + 1]]);
    let u32_at = |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4"));
    let u64_at = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8"));
    let table = u64_at(&header, 0x28);
    let (entry, count, names) = (
        u16_at(&header, 0x3A) as u64,
        u16_at(&header, 0x3C) as u64,
        u16_at(&header, 0x3E) as u64,
    );
    if entry != 64 || names >= count {
        return Ok(None);
    }
    let section = |index: u64| -> Result<[u8; 64], String> {
        bytes_at::<64>(file, table + index * entry).map_err(io)
    };
    let strings = section(names)?;
    let (strings_at, strings_len) = (u64_at(&strings, 0x18), u64_at(&strings, 0x20));
    let mut strings = vec![0; strings_len.min(MAX_NOTE_BYTES) as usize];
    file.read_exact_at(&mut strings, strings_at).map_err(io)?;
    for index in 0..count {
        let header = section(index)?;
        let name_at = u32_at(&header, 0) as usize;
        let name = strings.get(name_at..).unwrap_or_default();
        let name = &name[..memchr::memchr(0, name).unwrap_or(name.len())];
        if name == b".note.stapsdt" {
            return Ok(Some((u64_at(&header, 0x18), u64_at(&header, 0x20))));
        }
    }
    Ok(None)
}

/// The `stapsdt` notes (type 3) in the bytes of a note section.
fn count_stapsdt_notes(bytes: &[u8]) -> usize {
    let align = |n: usize| n.div_ceil(4) * 4;
    let mut count = 0;
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + 12) {
        let word = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4")) as usize;
        let (name, desc, kind) = (word(0), word(4), word(8));
        let name_bytes = bytes.get(at + 12..at + 12 + name).unwrap_or_default();
        if kind == 3 && name_bytes.starts_with(b"stapsdt") {
            count += 1;
        }
        at += 12 + align(name) + align(desc);
    }
    count
}

/// Whether process `pid` shows a JVM's signs: a thread named `VM Thread`,
/// which HotSpot starts within its first milliseconds.
pub fn has_jvm_signs(proc_root: &Path, pid: u32) -> bool {
    let tasks = proc_root.join(pid.to_string()).join("task");
    let Ok(tasks) = std::fs::read_dir(tasks) else {
        return false;
    };
    tasks.flatten().any(|task| {
        std::fs::read(task.path().join("comm"))
            .is_ok_and(|comm| comm.trim_ascii_end() == b"VM Thread")
    })
}

/// The libjvm.so that process `pid` maps, opened by its mapping
/// (`/proc/PID/map_files/RANGE`: the very file mapped, unlinked or replaced
/// since or not); where that is refused (it needs CAP_SYS_ADMIN), by the
/// path it was mapped from, through `/proc/PID/root`, kept only when it is
/// still the inode the maps name.
pub fn mapped_libjvm(proc_root: &Path, pid: u32) -> Result<Library, (EbpfReason, String)> {
    let process = proc_root.join(pid.to_string());
    let no_libjvm = || {
        (
            EbpfReason::NoLibjvm,
            format!("no libjvm.so in {}/maps", process.display()),
        )
    };
    let maps = std::fs::read_to_string(process.join("maps")).map_err(|_| no_libjvm())?;
    // `START-END PERMS OFFSET DEV INODE PATH[ (deleted)]`
    let (range, inode, path) = maps
        .lines()
        .find_map(|line| {
            let mut fields = line.splitn(6, char::is_whitespace);
            let range = fields.next()?;
            let inode = fields.nth(3)?;
            let path = fields.next()?.trim_start();
            let path = path.strip_suffix(" (deleted)").unwrap_or(path);
            path.ends_with("/libjvm.so").then(|| {
                (
                    range.to_string(),
                    inode.parse::<u64>().ok(),
                    path.to_string(),
                )
            })
        })
        .ok_or_else(no_libjvm)?;
    let shown = PathBuf::from(&path);
    let mapped = process.join("map_files").join(&range);
    let through_root = process.join("root").join(path.trim_start_matches('/'));
    let (opened, at) = match open_nonblocking(&mapped) {
        Err(error) if matches!(error.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
            (open_nonblocking(&through_root), through_root)
        }
        opened => (opened, mapped),
    };
    let replaced_hint = |(reason, error): (EbpfReason, String)| {
        match reason {
        EbpfReason::LibjvmReplaced => (reason, format!("{error}; the file the JVM maps can be opened only through /proc/{pid}/map_files, which needs CAP_SYS_ADMIN")),
        _ => (reason, error),
    }
    };
    checked_library(opened, &at, inode)
        .map(|library| Library { shown, ..library })
        .map_err(replaced_hint)
}

/// `path` opened for reading without blocking (a FIFO opens at once).
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(path)
}

/// Opens `path` without blocking and keeps it when it is a library (see
/// [`checked_library`]).
pub fn open_library(path: &Path, inode: Option<u64>) -> Result<Library, (EbpfReason, String)> {
    checked_library(open_nonblocking(path), path, inode)
}

/// The file opened at `path`, kept when it is a regular ELF file of a
/// believable size, and the inode `inode` when one is expected.
fn checked_library(
    opened: std::io::Result<File>,
    path: &Path,
    inode: Option<u64>,
) -> Result<Library, (EbpfReason, String)> {
    let shown = path.display();
    let file = opened.map_err(|error| (EbpfReason::NotALibrary, format!("{shown}: {error}")))?;
    let metadata = file
        .metadata()
        .map_err(|error| (EbpfReason::NotALibrary, format!("{shown}: {error}")))?;
    if !metadata.is_file() {
        return Err((
            EbpfReason::NotALibrary,
            format!("{shown} is not a regular file"),
        ));
    }
    if metadata.len() > MAX_LIBJVM_BYTES {
        let size = metadata.len();
        return Err((
            EbpfReason::NotALibrary,
            format!("{shown} has {size} bytes, more than a libjvm.so"),
        ));
    }
    if inode.is_some_and(|inode| inode != metadata.ino()) {
        return Err((
            EbpfReason::LibjvmReplaced,
            format!("{shown} was replaced since the JVM mapped it"),
        ));
    }
    let mut magic = [0u8; 4];
    if file.read_exact_at(&mut magic, 0).is_err() || &magic != b"\x7fELF" {
        return Err((
            EbpfReason::NotALibrary,
            format!("{shown} is not an ELF file"),
        ));
    }
    Ok(Library {
        id: (metadata.dev(), metadata.ino()),
        owner: metadata.uid(),
        mode: metadata.mode(),
        file,
        shown: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake /proc with a process mapping `libjvm.so` from `mapped`, whose
    /// mapping's file is `map_file` (made by `make`).
    fn fake(make: impl FnOnce(&Path)) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let process = root.path().join("42");
        std::fs::create_dir_all(process.join("map_files")).unwrap();
        let file = process.join("map_files/7f00-7f10");
        make(&file);
        let inode = std::fs::metadata(&file).map(|m| m.ino()).unwrap_or(0);
        std::fs::write(
            process.join("maps"),
            format!("7f00-7f10 r-xp 00000000 fd:01 {inode}                    /opt/jdk/lib/server/libjvm.so (deleted)\n"),
        )
        .unwrap();
        root
    }

    /// An ELF64 file whose `.note.stapsdt` section holds `sites` notes.
    fn elf_with_probe_sites(sites: usize) -> Vec<u8> {
        let mut notes = Vec::new();
        for _ in 0..sites {
            notes.extend(8u32.to_le_bytes());
            notes.extend(24u32.to_le_bytes());
            notes.extend(3u32.to_le_bytes());
            notes.extend(b"stapsdt\0");
            notes.extend([0u8; 24]);
        }
        let names = b"\0.shstrtab\0.note.stapsdt\0".to_vec();
        let mut elf = vec![0u8; 64];
        elf[..6].copy_from_slice(b"\x7fELF\x02\x01");
        let notes_at = elf.len();
        elf.extend(&notes);
        let names_at = elf.len();
        elf.extend(&names);
        let table = elf.len();
        elf[0x28..0x30].copy_from_slice(&(table as u64).to_le_bytes());
        elf[0x3A..0x3C].copy_from_slice(&64u16.to_le_bytes());
        elf[0x3C..0x3E].copy_from_slice(&3u16.to_le_bytes());
        elf[0x3E..0x40].copy_from_slice(&1u16.to_le_bytes());
        let section = |name: u32, at: usize, size: usize| {
            let mut header = [0u8; 64];
            header[..4].copy_from_slice(&name.to_le_bytes());
            header[0x18..0x20].copy_from_slice(&(at as u64).to_le_bytes());
            header[0x20..0x28].copy_from_slice(&(size as u64).to_le_bytes());
            header
        };
        elf.extend([0u8; 64]);
        elf.extend(section(1, names_at, names.len()));
        elf.extend(section(11, notes_at, notes.len()));
        elf
    }

    #[test]
    fn probe_sites_are_counted_and_an_absurd_number_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libjvm.so");
        std::fs::write(&path, elf_with_probe_sites(7)).unwrap();
        assert_eq!(open_library(&path, None).ok().unwrap().probe_sites(), Ok(7));
        std::fs::write(&path, elf_with_probe_sites(MAX_PROBE_SITES + 1)).unwrap();
        let refused = open_library(&path, None)
            .ok()
            .unwrap()
            .probe_sites()
            .unwrap_err();
        assert!(
            refused.contains("probe sites, more than any JDK's"),
            "{refused}"
        );
        std::fs::write(&path, elf_with_probe_sites(30_000)).unwrap();
        let refused = open_library(&path, None)
            .ok()
            .unwrap()
            .probe_sites()
            .unwrap_err();
        assert!(refused.contains("bytes of probe notes"), "{refused}");
        let real = Path::new("/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so");
        if let Ok(library) = open_library(real, None) {
            assert!((400..2000).contains(&library.probe_sites().unwrap()));
        }
    }

    #[test]
    fn a_library_of_another_user_or_writable_by_one_is_not_trusted() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("libjvm.so");
        std::fs::write(&path, elf_with_probe_sites(1)).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let own = rustix::process::geteuid().as_raw();
        let library = open_library(&path, None).ok().unwrap();
        assert_eq!(library.untrusted_for(own), None);
        if own != 0 {
            assert!(library.untrusted_for(own + 1).is_some());
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o664)).unwrap();
        let library = open_library(&path, None).ok().unwrap();
        assert!(library.untrusted_for(own).unwrap().contains("mode 664"));
    }

    #[test]
    fn this_test_process_shows_no_jvm_signs() {
        assert!(!has_jvm_signs(Path::new("/proc"), std::process::id()));
    }

    #[test]
    fn a_fifo_mapped_as_libjvm_is_refused_without_blocking() {
        let root = fake(|file| {
            let path = std::ffi::CString::new(file.to_str().unwrap()).unwrap();
            // SAFETY: a valid NUL-terminated path.
            assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
        });
        let (reason, error) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, EbpfReason::NotALibrary);
        assert!(error.ends_with("is not a regular file"), "{error}");
    }

    #[test]
    fn only_an_elf_file_of_the_mapped_inode_is_a_library() {
        let root = fake(|file| std::fs::write(file, b"#!/bin/sh\n").unwrap());
        let (reason, _) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, EbpfReason::NotALibrary);
        let root = fake(|file| std::fs::write(file, b"\x7fELF\x02\x01\x01").unwrap());
        let library = mapped_libjvm(root.path(), 42).ok().unwrap();
        assert_eq!(library.shown, Path::new("/opt/jdk/lib/server/libjvm.so"));
        // The file at the mapping is another inode than the maps name.
        let replaced = root.path().join("42/map_files/7f00-7f10");
        let new = root.path().join("new");
        std::fs::write(&new, b"\x7fELF\x02\x01\x01").unwrap();
        std::fs::rename(&new, &replaced).unwrap();
        let (reason, _) = mapped_libjvm(root.path(), 42).err().unwrap();
        assert_eq!(reason, EbpfReason::LibjvmReplaced);
        assert_eq!(
            mapped_libjvm(root.path(), 43).err().unwrap().0,
            EbpfReason::NoLibjvm
        );
    }
}
