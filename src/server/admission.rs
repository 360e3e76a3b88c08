//! Which connections the HTTP server takes, so that `/healthz` answers
//! whatever other clients do.
//!
//! Once 256 silent connections held every slot, a liveness probe waited
//! behind them, and a client that re-opened them every header timeout kept it
//! failing. So:
//! * one client address holds at most `max_connections_per_client` of the
//!   `max_connections` slots, and the rest stay for others;
//! * past those, a few spare slots serve `/healthz` only (anything else gets
//!   503 at once), with a short header timeout and no keep-alive;
//! * when the spare slots are full too, the oldest spare connection that has
//!   not yet sent its request is closed to make room: a flood of silent
//!   connections cannot shut out the next probe, and a probe that has sent its
//!   request is never cut off.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

/// Connections beyond `max_connections` that serve `/healthz` only.
pub const SPARE_CONNECTIONS: usize = 8;
/// How long a spare connection may take to send its request: a probe sends
/// it at once.
pub const SPARE_HEADER_TIMEOUT: Duration = Duration::from_secs(1);
/// How long the accept loop waits for an evicted spare connection to go.
const EVICTION_WAIT: Duration = Duration::from_millis(200);

/// Full slots held, by client address.
type Clients = Arc<Mutex<HashMap<IpAddr, usize>>>;
/// Spare connections that have not sent a request yet, oldest first, each
/// with the sender that closes it.
type Silent = Arc<Mutex<VecDeque<(u64, oneshot::Sender<()>)>>>;

/// The slots of one server.
pub struct Admission {
    slots: Arc<Semaphore>,
    per_client: usize,
    clients: Clients,
    spare: Arc<Semaphore>,
    silent: Silent,
    next_id: std::sync::atomic::AtomicU64,
}

/// A connection let in, holding its slot until dropped.
pub enum Admitted {
    /// Served in full.
    Full(FullSlot),
    /// Served `/healthz` only; the receiver completes when the slot is taken
    /// back for a newer connection.
    Spare(SpareSlot, oneshot::Receiver<()>),
}

/// A full slot, and the client's share of them.
pub struct FullSlot {
    _slot: OwnedSemaphorePermit,
    client: Option<(IpAddr, Clients)>,
}

impl Drop for FullSlot {
    fn drop(&mut self) {
        if let Some((address, clients)) = &self.client {
            let mut clients = clients.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(count) = clients.get_mut(address) {
                *count -= 1;
                if *count == 0 {
                    clients.remove(address);
                }
            }
        }
    }
}

/// A spare slot, held by its connection's task; dropping it frees the slot.
pub struct SpareSlot {
    started: RequestStarted,
    _slot: OwnedSemaphorePermit,
}

impl SpareSlot {
    /// What the connection's requests use to say one has arrived.
    pub fn started(&self) -> RequestStarted {
        self.started.clone()
    }
}

impl Drop for SpareSlot {
    fn drop(&mut self) {
        self.started.mark();
    }
}

/// Takes a spare connection off the eviction list once it has sent a request.
#[derive(Clone)]
pub struct RequestStarted {
    id: u64,
    silent: Silent,
}

impl RequestStarted {
    pub fn mark(&self) {
        let mut silent = self.silent.lock().unwrap_or_else(PoisonError::into_inner);
        silent.retain(|(id, _)| *id != self.id);
    }
}

impl Admission {
    pub fn new(max_connections: usize, max_connections_per_client: usize) -> Admission {
        Admission {
            slots: Arc::new(Semaphore::new(max_connections)),
            per_client: max_connections_per_client.clamp(1, max_connections.max(1)),
            clients: Arc::default(),
            spare: Arc::new(Semaphore::new(SPARE_CONNECTIONS)),
            silent: Arc::default(),
            next_id: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// A slot for a connection from `client`, or `None` to close it at once.
    pub async fn admit(&self, client: Option<IpAddr>) -> Option<Admitted> {
        if let Some(full) = self.full_slot(client) {
            return Some(Admitted::Full(full));
        }
        let permit = match self.spare.clone().try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let oldest = self
                    .silent
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop_front();
                // Every spare connection is answering a request: they are
                // short, so this one goes rather than one of them.
                let (_, evict) = oldest?;
                let _ = evict.send(());
                tokio::time::timeout(EVICTION_WAIT, self.spare.clone().acquire_owned())
                    .await
                    .ok()?
                    .ok()?
            }
        };
        let id = self
            .next_id
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (evict, evicted) = oneshot::channel();
        self.silent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back((id, evict));
        let slot = SpareSlot {
            started: RequestStarted {
                id,
                silent: self.silent.clone(),
            },
            _slot: permit,
        };
        Some(Admitted::Spare(slot, evicted))
    }

    /// A full slot when one is free and `client` holds fewer than its share.
    fn full_slot(&self, client: Option<IpAddr>) -> Option<FullSlot> {
        let Some(address) = client else {
            let slot = self.slots.clone().try_acquire_owned().ok()?;
            return Some(FullSlot {
                _slot: slot,
                client: None,
            });
        };
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let count = clients.entry(address).or_insert(0);
        if *count >= self.per_client {
            return None;
        }
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        *count += 1;
        Some(FullSlot {
            _slot: slot,
            client: Some((address, self.clients.clone())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> Option<IpAddr> {
        Some(IpAddr::from([127, 0, 0, last]))
    }

    #[tokio::test]
    async fn a_client_gets_its_share_then_spares_and_others_still_get_full_slots() {
        let admission = Admission::new(4, 2);
        let mut held = Vec::new();
        for _ in 0..2 {
            let admitted = admission.admit(address(1)).await.unwrap();
            assert!(matches!(admitted, Admitted::Full(_)));
            held.push(admitted);
        }
        let third = admission.admit(address(1)).await.unwrap();
        assert!(matches!(third, Admitted::Spare(..)));
        let other = admission.admit(address(2)).await.unwrap();
        assert!(matches!(other, Admitted::Full(_)));
        // A full slot given back is the client's again.
        held.pop();
        assert!(matches!(
            admission.admit(address(1)).await.unwrap(),
            Admitted::Full(_)
        ));
    }

    #[tokio::test]
    async fn a_full_spare_list_evicts_its_oldest_silent_connection_not_a_busy_one() {
        let admission = Admission::new(1, 1);
        let _full = admission.admit(address(1)).await.unwrap();
        let mut spares = Vec::new();
        for _ in 0..SPARE_CONNECTIONS {
            match admission.admit(address(1)).await.unwrap() {
                Admitted::Spare(slot, evicted) => spares.push((slot, evicted)),
                Admitted::Full(_) => panic!("no full slot is left"),
            }
        }
        // The oldest has sent its request: the second oldest goes instead.
        spares[0].0.started().mark();
        let (first, mut first_evicted) = spares.remove(0);
        let (second, second_evicted) = spares.remove(0);
        // The evicted connection's task ends and drops its slot.
        let gone = tokio::spawn(async move {
            second_evicted.await.unwrap();
            drop(second);
        });
        let newest = admission.admit(address(1)).await.unwrap();
        assert!(matches!(newest, Admitted::Spare(..)));
        gone.await.unwrap();
        assert!(first_evicted.try_recv().is_err(), "a busy one stays");
        drop(first);
    }

    #[tokio::test]
    async fn with_every_spare_connection_busy_a_new_one_is_closed() {
        let admission = Admission::new(1, 1);
        let _full = admission.admit(address(1)).await.unwrap();
        let mut spares = Vec::new();
        for _ in 0..SPARE_CONNECTIONS {
            if let Admitted::Spare(slot, evicted) = admission.admit(address(1)).await.unwrap() {
                slot.started().mark();
                spares.push((slot, evicted));
            }
        }
        assert!(admission.admit(address(1)).await.is_none());
    }
}
