//! A JVM's listening TCP sockets, from /proc: the ports its server
//! connections come in on. The kernel program counts a connection as the
//! JVM's request stream only when its local port is one of these in the
//! JVM's network namespace, so the JVM's own outgoing calls (ephemeral
//! local ports) never count.

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};

/// A listening socket by what the kernel program sees of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Listener {
    /// Its network namespace's inode number (`/proc/PID/ns/net`).
    pub netns: u32,
    pub port: u16,
}

/// The sockets `pid` listens on, with the inodes of the table's listening
/// sockets already known to be someone else's skipped cheaply: `None`
/// when its /proc entries cannot be read (it exited, or another user's
/// without the privilege to read its descriptors).
pub fn listening(proc_root: &Path, pid: u32) -> Option<BTreeSet<Listener>> {
    let process = Process::new_with_root(proc_root.join(pid.to_string())).ok()?;
    let netns = std::fs::metadata(proc_root.join(format!("{pid}/ns/net")))
        .ok()?
        .ino() as u32;
    let listening: Vec<(u64, u16)> = (process.tcp().ok()?.into_iter())
        .chain(process.tcp6().unwrap_or_default())
        .filter(|entry| entry.state == TcpState::Listen)
        .map(|entry| (entry.inode, entry.local_address.port()))
        .collect();
    if listening.is_empty() {
        return Some(BTreeSet::new());
    }
    let owned: BTreeSet<u64> = (process.fd().ok()?.flatten())
        .filter_map(|fd| match fd.target {
            FDTarget::Socket(inode) => Some(inode),
            _ => None,
        })
        .collect();
    Some(
        listening
            .into_iter()
            .filter(|(inode, _)| owned.contains(inode))
            .map(|(_, port)| Listener { netns, port })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_listens_on_its_own_sockets_and_not_on_those_it_connects_from() {
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = server.local_addr().unwrap().port();
        // A connection of this process to its own listener: the client's
        // ephemeral port is not a listening one.
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let found = listening(Path::new("/proc"), std::process::id()).unwrap();
        let ports: Vec<u16> = found.iter().map(|l| l.port).collect();
        assert!(ports.contains(&port), "{ports:?} lacks {port}");
        assert!(!ports.contains(&client.local_addr().unwrap().port()));
        drop(server);
        let found = listening(Path::new("/proc"), std::process::id()).unwrap();
        assert!(found.iter().all(|l| l.port != port));
    }
}
