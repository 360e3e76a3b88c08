//! File descriptors: the process's limit, and how many of them followers
//! may keep open between polls. With `prlimit --nofile=64` and 100 logs,
//! followers that each held their file open took every descriptor: the
//! HTTP server could accept nothing and no checkpoint could be written. A
//! follower without a slot closes its file after each poll and finds it
//! again by identity (device, inode, fingerprints) at the next.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Files followers may hold open between polls, across the process.
static BUDGET: AtomicUsize = AtomicUsize::new(usize::MAX);
static HELD: AtomicUsize = AtomicUsize::new(0);
/// Descriptors the eBPF probes hold (maps, programs, links: 19, and 7 more
/// per libjvm.so attached, on Linux 6.x), out of the same share as held
/// files: with `prlimit --nofile=64` they took the descriptors the HTTP
/// server and the checkpoint were planned to have.
static PROBES: AtomicUsize = AtomicUsize::new(0);

/// Sets how many files followers may keep open between polls.
pub fn set_budget(files: usize) {
    BUDGET.store(files, Ordering::Relaxed);
}

/// The right to keep one file open between polls; given back when dropped.
#[derive(Debug)]
pub struct Slot(());

impl Slot {
    /// A slot, if the budget has one left.
    pub fn take() -> Option<Slot> {
        let budget = BUDGET
            .load(Ordering::Relaxed)
            .saturating_sub(PROBES.load(Ordering::Acquire));
        HELD.fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
            (held < budget).then_some(held + 1)
        })
        .ok()
        .map(|_| Slot(()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        HELD.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Whether the share of held files has `more` descriptors free for the
/// probes beside the `probes` they hold now.
pub fn room_for_probes(probes: usize, more: usize) -> bool {
    let used = HELD.load(Ordering::Acquire).saturating_add(probes);
    used.saturating_add(more) <= BUDGET.load(Ordering::Relaxed)
}

/// Sets how many descriptors the probes hold: what followers may hold
/// open between polls is that many fewer.
pub fn set_held_by_probes(descriptors: usize) {
    PROBES.store(descriptors, Ordering::Release);
}

/// Whether `error` says the process or the system is out of descriptors:
/// the file is there, it just cannot be opened now.
pub fn exhausted(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Raises the soft limit on open files to the hard one; the limits before
/// and after.
pub fn raise_open_files_limit() -> io::Result<(u64, u64)> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given, nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let before = limit.rlim_cur;
    if limit.rlim_cur < limit.rlim_max {
        limit.rlim_cur = limit.rlim_max;
        // SAFETY: setrlimit only reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok((before, limit.rlim_cur))
}

/// How the process's descriptors are shared out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// HTTP connections served at once.
    pub connections: usize,
    /// Files followers may hold open between polls.
    pub files: usize,
}

/// Descriptors kept for everything but connections and held files: stdio,
/// the listener, the HTTP server's 8 spare connections for `/healthz`, the
/// runtime's epoll and event fds, inotify, the checkpoint (lock, journal,
/// manifest, directory), one file a follower opens for a poll, /proc and
/// hsperfdata reads, alert sinks and OTLP.
pub const RESERVED: usize = 40;

/// Shares `limit` descriptors out: [`RESERVED`] first, then at most a
/// quarter of the rest (at least 4) to connections, up to
/// `max_connections`, and the remainder to held files.
pub fn plan(limit: u64, max_connections: usize) -> Plan {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let rest = limit.saturating_sub(RESERVED);
    let connections = max_connections.min((rest / 4).max(4));
    Plan {
        connections,
        files: rest.saturating_sub(connections),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_limit_keeps_room_for_connections_and_the_checkpoint() {
        assert_eq!(
            plan(64, 256),
            Plan {
                connections: 6,
                files: 18
            }
        );
        assert_eq!(
            plan(1024, 256),
            Plan {
                connections: 246,
                files: 738
            }
        );
        assert_eq!(plan(524_288, 256).connections, 256);
        assert_eq!(
            plan(16, 256),
            Plan {
                connections: 4,
                files: 0
            }
        );
    }
}
