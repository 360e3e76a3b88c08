//! The request-latency BPF program: loaded and attached once (three BTF
//! tracepoints, which cover every process), its ring buffer read on a
//! thread of its own and taken without blocking, its maps of listeners and
//! connections kept by the agent.

use std::mem::MaybeUninit;

use libbpf_rs::skel::{OpenSkel, SkelBuilder};
use libbpf_rs::{ErrorKind, Link, MapCore, MapFlags, MapHandle, OpenObject};

use super::listeners::Listener;
use super::pairing::{Record, RecordKind};
use super::skel::{types, RequestsSkel, RequestsSkelBuilder};
use crate::config::RequestArrival;
use crate::sources::ebpf::{probe_descriptors, read_record, RingReader};
use crate::store::LatencyReason;

pub struct RequestProbes {
    ring: RingReader<Record>,
    listeners: MapHandle,
    connections: MapHandle,
    lost: MapHandle,
    /// Kept for as long as the probes run: dropping a link detaches it.
    _links: Vec<Link>,
}

fn refused(error: &libbpf_rs::Error) -> (LatencyReason, String) {
    let reason = match error.kind() {
        ErrorKind::PermissionDenied => LatencyReason::PermissionDenied,
        _ => LatencyReason::LoadFailed,
    };
    (reason, format!("{error:#}"))
}

impl Record {
    fn parse(bytes: &[u8]) -> Option<Record> {
        let raw: types::request_record = read_record(bytes)?;
        let kind = match raw.kind {
            types::record_kind::RECORD_FIRST_SEND => RecordKind::FirstSend,
            types::record_kind::RECORD_END => RecordKind::End,
            types::record_kind::RECORD_MULTIPLEXED => RecordKind::Multiplexed,
            _ => return None,
        };
        Some(Record {
            connection: raw.connection,
            start_ns: raw.start_ns,
            end_ns: raw.end_ns,
            tgid: raw.tgid,
            port: raw.port,
            kind,
        })
    }
}

impl RequestProbes {
    /// Loads and attaches the program: `Err` is a reason and what the
    /// kernel said (no CAP_BPF and CAP_PERFMON, no BTF, a tracepoint this
    /// kernel lacks).
    pub fn load(arrival: RequestArrival) -> Result<RequestProbes, (LatencyReason, String)> {
        let (arrival, (skel, links)) = match arrival {
            RequestArrival::Auto => match Self::attached(RequestArrival::SkDataReady) {
                // No sock:sk_data_ready (before Linux 6.6): the fallback.
                Err((LatencyReason::NoTracepoints, error)) => {
                    tracing::info!(
                        error,
                        "no sock:sk_data_ready here: arrivals from tcp:tcp_probe"
                    );
                    (
                        RequestArrival::TcpProbe,
                        Self::attached(RequestArrival::TcpProbe)?,
                    )
                }
                attached => (RequestArrival::SkDataReady, attached?),
            },
            named => (named, Self::attached(named)?),
        };
        tracing::info!(arrival = ?arrival, "kernel request-latency probes attached");
        let maps = &skel.maps;
        let handle =
            |map: &libbpf_rs::MapMut<'_>| MapHandle::try_from(map).map_err(|e| refused(&e));
        let ring = RingReader::start("ebpf-requests", handle(&maps.requests)?, Record::parse)
            .map_err(|error| (LatencyReason::LoadFailed, error))?;
        // Every BPF descriptor of the agent, the safepoint probes' too, and
        // this ring buffer's epoll: out of the share planned for held files.
        let held = probe_descriptors() + 1;
        if !crate::follow::room_for_probes(0, held) {
            return Err((
                LatencyReason::TooFewDescriptors,
                format!("the probes need {held} file descriptors with the safepoint probes', beyond those the open-files limit leaves (raise it: LimitNOFILE)"),
            ));
        }
        crate::follow::set_held_by_probes(held);
        Ok(RequestProbes {
            ring,
            listeners: handle(&maps.listeners)?,
            connections: handle(&maps.connections)?,
            lost: handle(&maps.lost)?,
            _links: links,
        })
    }

    /// The program loaded with `arrival`'s program and attached.
    fn attached(
        arrival: RequestArrival,
    ) -> Result<(RequestsSkel<'static>, Vec<Link>), (LatencyReason, String)> {
        // The skeleton borrows its object's storage for as long as it
        // lives, the agent's lifetime: the storage is leaked, once per try.
        let storage: &'static mut MaybeUninit<OpenObject> =
            Box::leak(Box::new(MaybeUninit::uninit()));
        let by_probe = arrival == RequestArrival::TcpProbe;
        let skel = RequestsSkelBuilder::default()
            .open(storage)
            .and_then(|mut open| {
                open.progs.on_data_ready.set_autoload(!by_probe);
                open.progs.on_tcp_probe.set_autoload(by_probe);
                open.load()
            })
            .map_err(|e| missing_tracepoint(refused(&e)))?;
        let progs = &skel.progs;
        let arrives = if by_probe {
            &progs.on_tcp_probe
        } else {
            &progs.on_data_ready
        };
        let links = [arrives, &progs.on_send, &progs.on_state]
            .into_iter()
            .map(|program| program.attach())
            .collect::<Result<Vec<Link>, _>>()
            .map_err(|e| missing_tracepoint(refused(&e)))?;
        Ok((skel, links))
    }

    /// The records sent since the last call.
    pub fn drain(&mut self) -> Vec<Record> {
        self.ring.drain()
    }

    fn key(listener: Listener) -> Vec<u8> {
        let key = types::listener_key {
            netns: listener.netns,
            port: u32::from(listener.port),
        };
        // SAFETY: a plain C struct of two u32, no padding.
        unsafe {
            std::slice::from_raw_parts(
                (&key as *const types::listener_key).cast::<u8>(),
                std::mem::size_of::<types::listener_key>(),
            )
        }
        .to_vec()
    }

    /// Counts `listener`'s connections as `tgid`'s requests.
    pub fn listen(&self, listener: Listener, tgid: u32) -> Result<(), String> {
        (self.listeners)
            .update(&Self::key(listener), &tgid.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| format!("{e:#}"))
    }

    /// Stops counting `listener`'s new connections.
    pub fn forget(&self, listener: Listener) {
        let _ = self.listeners.delete(&Self::key(listener));
    }

    /// The request in flight on `connection` in the kernel: its start and
    /// its last send, when the connection is still known.
    pub fn connection(&self, connection: u64) -> Option<(u64, u64)> {
        let value = (self.connections)
            .lookup(&connection.to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let state: types::connection_state = read_record(&value)?;
        Some((state.start_ns, state.last_send_ns))
    }

    /// Records lost since the program loaded: to a full ring buffer (or
    /// the queue after it), and to a JVM's budget.
    pub fn lost(&self) -> (u64, u64) {
        let count = |index: u32| match self.lost.lookup(&index.to_ne_bytes(), MapFlags::ANY) {
            Ok(Some(value)) => read_record::<u64>(&value).unwrap_or(0),
            _ => 0,
        };
        (count(0) + self.ring.overflowed(), count(1))
    }
}

/// A program that loads but whose tracepoint this kernel lacks (before
/// Linux 6.3 for `sock_send_length`, 6.6 for `sk_data_ready`) fails at
/// load or attach with ENOENT or ESRCH: said as such.
fn missing_tracepoint((reason, error): (LatencyReason, String)) -> (LatencyReason, String) {
    let missing = error.contains("No such file") || error.contains("No such process");
    match reason {
        LatencyReason::LoadFailed if missing => (LatencyReason::NoTracepoints, error),
        reason => (reason, error),
    }
}
