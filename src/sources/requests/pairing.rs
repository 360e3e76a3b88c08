//! From the kernel's records to whole requests, per connection.
//!
//! The BPF program sends the first send of each response at once and the
//! last one only when the response took several and the next request's
//! bytes arrive or the connection closes: one record per request in the
//! common case. A request whose last send has not been confirmed so is
//! held; after [`HOLD_NS`] without a next request, its connection's state
//! in the kernel is read ([`Pairing::expired`]), which says where the
//! response ended. The caller reads those states before it drains the
//! ring buffer: a record sent before a state changed is then read before
//! the state is looked at again, so that no request is ended twice.

use std::collections::HashMap;

/// How long a request waits for its end after its first send before its
/// connection's state is read: keep-alive connections idle between
/// requests, and the minute it belongs to is attributed 15 s after it ends.
pub const HOLD_NS: u64 = 2_000_000_000;

/// What a record says (`RECORD_*` of `requests.h`); only the probes of an
/// eBPF build read records.
#[cfg_attr(not(all(feature = "ebpf", target_os = "linux")), allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    FirstSend,
    End,
    Multiplexed,
}

/// One record of the BPF program, times on CLOCK_MONOTONIC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    pub connection: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub tgid: u32,
    pub port: u16,
    pub kind: RecordKind,
}

/// A whole request of a JVM's server connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub tgid: u32,
    pub port: u16,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A request whose response has begun and may not have ended.
#[derive(Debug, Clone, Copy)]
struct Open {
    request: Request,
    /// When it was first sent, on the agent's monotonic clock.
    first_send_ns: u64,
    /// Its connection's state in the kernel was another request's (or
    /// gone) once: the records since then have been read.
    looked: bool,
}

/// Requests being paired, and what was left out.
#[derive(Debug, Default)]
pub struct Pairing {
    open: HashMap<u64, Open>,
    /// Multiplexed connections, by JVM and port: their requests are not measured.
    pub multiplexed: HashMap<(u32, u16), u64>,
}

impl Pairing {
    /// Takes `record`; a request it completes goes to `done`.
    pub fn take(&mut self, record: Record, done: &mut Vec<Request>) {
        let request = Request {
            tgid: record.tgid,
            port: record.port,
            start_ns: record.start_ns,
            end_ns: record.end_ns,
        };
        match record.kind {
            RecordKind::FirstSend => {
                let open = Open {
                    request,
                    first_send_ns: record.end_ns,
                    looked: false,
                };
                // The previous request of this connection had one send, or
                // its end record came first: either way it is whole.
                if let Some(previous) = self.open.insert(record.connection, open) {
                    if previous.request.start_ns != record.start_ns {
                        done.push(previous.request);
                    }
                }
            }
            RecordKind::End => {
                let held = self
                    .open
                    .get(&record.connection)
                    .map(|o| o.request.start_ns);
                match held {
                    Some(start_ns) if start_ns == record.start_ns => {
                        self.open.remove(&record.connection);
                        done.push(request);
                    }
                    // This request's first send was lost: the one held
                    // before it is whole.
                    Some(start_ns) if start_ns < record.start_ns => {
                        let previous = self.open.remove(&record.connection);
                        done.extend(previous.map(|open| open.request));
                        done.push(request);
                    }
                    // The end of a request already ended from its state
                    // (its response went on after a silence of HOLD_NS),
                    // or of one whose first send was lost: never twice.
                    _ => {}
                }
            }
            RecordKind::Multiplexed => {
                self.open.remove(&record.connection);
                *self
                    .multiplexed
                    .entry((record.tgid, record.port))
                    .or_default() += 1;
            }
        }
    }

    /// Connections whose request has waited [`HOLD_NS`] since its first
    /// send at `now_ns`: the caller reads their state in the kernel and
    /// hands each to [`Pairing::end`].
    pub fn expired(&self, now_ns: u64) -> Vec<u64> {
        self.open
            .iter()
            .filter(|(_, open)| now_ns.saturating_sub(open.first_send_ns) >= HOLD_NS)
            .map(|(connection, _)| *connection)
            .collect()
    }

    /// Ends the request held for `connection` from its connection's state
    /// in the kernel: at `last_send_ns` when the state is still that of the
    /// request begun at `start_ns`. Else (a next request began, the
    /// connection closed) the record that says so was sent before: the
    /// first time, the request waits for the ring buffer to be read; the
    /// second, it ends at its first send, as a one-send response does.
    pub fn end(&mut self, connection: u64, kernel: Option<(u64, u64)>, done: &mut Vec<Request>) {
        let Some(open) = self.open.get_mut(&connection) else {
            return;
        };
        match kernel {
            Some((start_ns, last_send_ns)) if start_ns == open.request.start_ns => {
                open.request.end_ns = open.request.end_ns.max(last_send_ns);
            }
            _ if !open.looked => {
                open.looked = true;
                return;
            }
            _ => {}
        }
        done.extend(self.open.remove(&connection).map(|open| open.request));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(kind: RecordKind, connection: u64, start_ns: u64, end_ns: u64) -> Record {
        Record {
            connection,
            start_ns,
            end_ns,
            tgid: 7,
            port: 8080,
            kind,
        }
    }

    fn request(start_ns: u64, end_ns: u64) -> Request {
        Request {
            tgid: 7,
            port: 8080,
            start_ns,
            end_ns,
        }
    }

    #[test]
    fn a_request_ends_at_its_last_send_and_a_one_send_response_at_the_next_request() {
        let mut pairing = Pairing::default();
        let mut done = Vec::new();
        // Two sends: the end record comes when the next request arrives.
        pairing.take(record(RecordKind::FirstSend, 1, 100, 150), &mut done);
        pairing.take(record(RecordKind::End, 1, 100, 180), &mut done);
        assert_eq!(done, [request(100, 180)]);
        // One send: the next request's first send completes it.
        pairing.take(record(RecordKind::FirstSend, 1, 300, 320), &mut done);
        pairing.take(record(RecordKind::FirstSend, 1, 400, 410), &mut done);
        assert_eq!(done, [request(100, 180), request(300, 320)]);
        assert_eq!(pairing.open.len(), 1);
    }

    #[test]
    fn an_idle_connection_is_ended_from_the_kernel_state_after_the_hold() {
        let mut pairing = Pairing::default();
        let mut done = Vec::new();
        pairing.take(record(RecordKind::FirstSend, 1, 100, 150), &mut done);
        pairing.take(record(RecordKind::FirstSend, 2, 120, 130), &mut done);
        assert!(pairing.expired(130 + HOLD_NS - 1).is_empty());
        assert_eq!(pairing.expired(130 + HOLD_NS), [2]);
        // Still that request's state: its last send is its end.
        pairing.end(2, Some((120, 190)), &mut done);
        assert_eq!(done, [request(120, 190)]);
        // A state of another request (or none): the records sent before it
        // are read first; then the first send stands.
        pairing.end(1, Some((999, 1_000)), &mut done);
        assert_eq!(done, [request(120, 190)]);
        pairing.end(1, None, &mut done);
        assert_eq!(done, [request(120, 190), request(100, 150)]);
        assert_eq!(pairing.open.len(), 0);
    }

    /// A request ended from its state, whose response then goes on: its
    /// end record is not a second request. An end record whose first send
    /// was lost ends the request held before it.
    #[test]
    fn no_request_is_ended_twice() {
        let mut pairing = Pairing::default();
        let mut done = Vec::new();
        pairing.take(record(RecordKind::FirstSend, 1, 100, 150), &mut done);
        pairing.end(1, Some((100, 160)), &mut done);
        pairing.take(record(RecordKind::End, 1, 100, 170), &mut done);
        assert_eq!(done, [request(100, 160)]);
        // The state of the next request was read before its records were:
        // the end record that came first settles it.
        pairing.take(record(RecordKind::FirstSend, 1, 300, 310), &mut done);
        pairing.end(1, Some((400, 0)), &mut done);
        pairing.take(record(RecordKind::End, 1, 300, 350), &mut done);
        pairing.take(record(RecordKind::FirstSend, 1, 400, 420), &mut done);
        assert_eq!(done, [request(100, 160), request(300, 350)]);
        // A lost first send: its end record closes the request before it.
        pairing.take(record(RecordKind::End, 1, 500, 560), &mut done);
        assert_eq!(done[2..], [request(400, 420), request(500, 560)]);
        assert!(pairing.open.is_empty());
    }

    #[test]
    fn a_multiplexed_connection_is_counted_and_its_held_request_dropped() {
        let mut pairing = Pairing::default();
        let mut done = Vec::new();
        pairing.take(record(RecordKind::FirstSend, 1, 100, 150), &mut done);
        pairing.take(record(RecordKind::Multiplexed, 1, 100, 160), &mut done);
        assert!(done.is_empty());
        assert_eq!(pairing.open.len(), 0);
        assert_eq!(pairing.multiplexed.get(&(7, 8080)), Some(&1));
    }
}
