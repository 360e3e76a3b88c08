//! A plain GC log read through a memory map by the offline commands: parsed
//! where the page cache holds it, without a copy into a buffer first. A
//! trace-level log parsed 10-26 % faster so (bench/README.md).
//!
//! A map's pages past a file's end raise SIGBUS, and another process may
//! cut the file short while it is read (a JVM restarted with the same log
//! name truncates it). The handler here gives such pages zeros instead and
//! marks the map, whose reader then reports the file as truncated: without
//! it, the truncation would kill the process. A SIGBUS anywhere else goes
//! to the handler that was there before, as if this one did not exist.

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Maps read at once; with every slot taken a log is read instead.
const SLOTS: usize = 8;

/// One registered map: the pages `[start, end)`, `start` 0 when free.
struct Slot {
    taken: AtomicBool,
    start: AtomicUsize,
    end: AtomicUsize,
    truncated: AtomicBool,
}

static MAPS: [Slot; SLOTS] = [const {
    Slot {
        taken: AtomicBool::new(false),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        truncated: AtomicBool::new(false),
    }
}; SLOTS];

/// The page size, read once: `sysconf` is not for a signal handler.
static PAGE: AtomicUsize = AtomicUsize::new(0);

/// The SIGBUS handler this one replaced (Rust's own, or the default).
static PREVIOUS: OnceLock<libc::sigaction> = OnceLock::new();

/// A plain file's bytes, mapped, and its slot in the handler's table.
pub struct MappedLog {
    // Declared first, so dropped first: the slot is freed before the pages go.
    slot: SlotGuard,
    map: memmap2::Mmap,
}

struct SlotGuard(&'static Slot);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        self.0.start.store(0, Ordering::Release);
        self.0.end.store(0, Ordering::Release);
        self.0.taken.store(false, Ordering::Release);
    }
}

impl MappedLog {
    /// Maps `file` if it is a regular, non-empty file, the handler is in
    /// place and a slot is free; `None` means: read it instead.
    pub fn open(file: &File) -> Option<MappedLog> {
        let metadata = file.metadata().ok()?;
        if !metadata.is_file() || metadata.len() == 0 || !handler_installed() {
            return None;
        }
        let slot = MAPS.iter().find(|slot| {
            slot.taken
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })?;
        let guard = SlotGuard(slot);
        // SAFETY: the map is only read. Pages another process truncates away
        // get zeros from the handler instead of killing the process, and the
        // reader learns of it through `truncated`; bytes rewritten in place
        // (no GC log writer does that) would read as whatever they became.
        let map = unsafe { memmap2::Mmap::map(file) }.ok()?;
        let page = PAGE.load(Ordering::Relaxed);
        let start = map.as_ptr() as usize;
        slot.truncated.store(false, Ordering::Release);
        slot.end
            .store(start + map.len().next_multiple_of(page), Ordering::Release);
        slot.start.store(start, Ordering::Release);
        Some(MappedLog { slot: guard, map })
    }

    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// Gives back the pages of `range`, parsed: a map's pages count in the
    /// process's resident set until then, which would grow with the file.
    /// Read again, they come from the file again.
    pub fn release(&self, range: std::ops::Range<usize>) {
        // SAFETY: the map is shared and read only: pages given back are read
        // from the file again if touched, with the bytes they had. Only a
        // failure to advise is possible, and it leaves the pages in place.
        let _ = unsafe {
            self.map.unchecked_advise_range(
                memmap2::UncheckedAdvice::DontNeed,
                range.start,
                range.len(),
            )
        };
    }

    /// Whether the file was cut short under the map: the bytes past its new
    /// end read as zeros.
    pub fn truncated(&self) -> bool {
        self.slot.0.truncated.load(Ordering::Acquire)
    }
}

/// Installs the handler once; whether it is in place.
fn handler_installed() -> bool {
    static INSTALLED: OnceLock<bool> = OnceLock::new();
    *INSTALLED.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let Ok(page) = usize::try_from(page) else {
            return false;
        };
        PAGE.store(page, Ordering::Relaxed);
        // SAFETY: zeroed is a valid sigaction (no flags, empty mask) before
        // the fields below are set; the handler has the SA_SIGINFO signature.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            let mut previous: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGBUS, &action, &mut previous) != 0 {
                return false;
            }
            let _ = PREVIOUS.set(previous);
        }
        true
    })
}

/// Gives a registered map's pages from the faulting one to its end zeros
/// and marks it; any other SIGBUS is handed back to the handler before.
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel hands an SA_SIGINFO handler a valid siginfo_t.
    let address = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for slot in &MAPS {
        let start = slot.start.load(Ordering::Acquire);
        let end = slot.end.load(Ordering::Acquire);
        if start == 0 || address < start || address >= end {
            continue;
        }
        let from = address & !(page - 1);
        // SAFETY: [from, end) lies in a map its guard keeps mapped while it
        // is registered; MAP_FIXED puts zero pages in its place, which the
        // map's own unmapping removes later as it would the file's.
        let zeros = unsafe {
            libc::mmap(
                from as *mut libc::c_void,
                end - from,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            slot.truncated.store(true, Ordering::Release);
            return;
        }
    }
    // Not ours: the handler before takes it when the access faults again.
    // SAFETY: sigaction with a handler read from the kernel, or the default.
    unsafe {
        match PREVIOUS.get() {
            Some(previous) => libc::sigaction(libc::SIGBUS, previous, std::ptr::null_mut()),
            None => {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(libc::SIGBUS, &default, std::ptr::null_mut())
            }
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_file_cut_short_under_its_map_reads_as_zeros_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gc.log");
        // The machine's page, as the handler reads it: it zeroes whole pages.
        assert!(handler_installed());
        let page = PAGE.load(Ordering::Relaxed);
        std::fs::File::create(&path)
            .unwrap()
            .write_all(&vec![b'x'; 3 * page])
            .unwrap();
        let file = File::open(&path).unwrap();
        let mapped = MappedLog::open(&file).expect("a regular file is mapped");
        assert!(!mapped.truncated());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(page as u64)
            .unwrap();
        let bytes = mapped.bytes();
        assert_eq!(bytes.len(), 3 * page);
        assert!(bytes[..page].iter().all(|&b| b == b'x'));
        assert!(
            bytes[page..].iter().all(|&b| b == 0),
            "past the new end: zeros"
        );
        assert!(mapped.truncated());
    }

    #[test]
    fn slots_are_freed_with_their_maps_and_other_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gc.log");
        std::fs::write(&path, "[0.010s][info][gc] Using G1\n").unwrap();
        let file = File::open(&path).unwrap();
        // More maps one after the other than there are slots.
        for _ in 0..3 * SLOTS {
            let mapped = MappedLog::open(&file).expect("a slot is free again");
            assert_eq!(mapped.bytes(), b"[0.010s][info][gc] Using G1\n");
            assert!(!mapped.truncated());
        }
        let empty = dir.path().join("empty.log");
        std::fs::write(&empty, "").unwrap();
        assert!(MappedLog::open(&File::open(&empty).unwrap()).is_none());
        assert!(MappedLog::open(&File::open(dir.path()).unwrap()).is_none());
    }
}
