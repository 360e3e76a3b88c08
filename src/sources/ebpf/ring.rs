//! A BPF ring buffer read on a thread of its own, into a bounded queue that
//! the agent's loop takes at each poll.
//!
//! Read only from the loop, the ring buffer (4 MiB, about 9,000 safepoint
//! records) dropped every JVM's records whenever the loop was late by a
//! few seconds: a slow `fdatasync`, or two users' floods at their budgets
//! on a loaded host. The thread empties it as records come, and a record
//! the queue has no room for counts as lost, as a full ring buffer's does.
//! The loop still empties the ring buffer itself before taking the queue,
//! so that it holds every record submitted before the poll, as when the
//! loop alone read it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, PoisonError};
use std::time::Duration;

use libbpf_rs::{MapHandle, RingBuffer};

/// Records queued at most between two polls: 16 s of the safepoint
/// program's whole output at its per-process budgets of two floods, about
/// 3 MiB when full. Memory is taken as the queue grows.
const QUEUED_AT_MOST: usize = 1 << 16;

/// How long the thread waits for records before reading again anyway. The
/// kernel wakes it whenever a record lands in an empty ring buffer, and
/// the loop reads it too: this is a net, which an idle agent pays once in
/// a while (every second, it was 20 of the idle agent's 1,066 system calls
/// in 10 s).
const WAIT_MS: i32 = 10_000;

/// How long the thread lets records gather after reading: it wakes at most
/// 10 times a second. The loop reads the ring buffer itself at each poll,
/// so the thread is only the net for a late loop: 100 ms of the safepoint
/// program's output at its budgets fills a tenth of the ring buffer.
/// (At 10 ms it cost 14 us of agent CPU per safepoint at 1,000 a second,
/// against 11 us with the loop alone.)
const GATHER: Duration = Duration::from_millis(100);

/// The ring buffer shared by its thread and the loop, and the queue
/// between them.
pub(crate) struct RingReader<T> {
    ring: Arc<Mutex<RingBuffer<'static>>>,
    records: mpsc::Receiver<T>,
    queued: Arc<AtomicUsize>,
    overflowed: Arc<AtomicU64>,
}

impl<T: Send + 'static> RingReader<T> {
    /// Starts reading the ring buffer `map` on a thread named `name`, each
    /// record read by `parse` (a record it cannot read is skipped).
    pub(crate) fn start(
        name: &str,
        map: MapHandle,
        parse: fn(&[u8]) -> Option<T>,
    ) -> Result<RingReader<T>, String> {
        let (sender, records) = mpsc::channel();
        let queued = Arc::new(AtomicUsize::new(0));
        let overflowed = Arc::new(AtomicU64::new(0));
        let (room, lost) = (queued.clone(), overflowed.clone());
        let mut builder = libbpf_rs::RingBufferBuilder::new();
        builder
            .add(&map, move |data: &[u8]| {
                let Some(record) = parse(data) else {
                    return 0;
                };
                if room.fetch_add(1, Ordering::Relaxed) < QUEUED_AT_MOST {
                    // The receiver lives as long as the ring buffer.
                    let _ = sender.send(record);
                } else {
                    room.fetch_sub(1, Ordering::Relaxed);
                    lost.fetch_add(1, Ordering::Relaxed);
                }
                0
            })
            .map_err(|e| format!("{e:#}"))?;
        let ring = Arc::new(Mutex::new(builder.build().map_err(|e| format!("{e:#}"))?));
        let read = ring.clone();
        std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || read_as_records_come(&read, map))
            .map_err(|e| format!("no thread to read the ring buffer with: {e}"))?;
        Ok(RingReader {
            ring,
            records,
            queued,
            overflowed,
        })
    }

    /// Every record submitted before this call that was not taken yet, in
    /// the order submitted.
    pub(crate) fn drain(&self) -> Vec<T> {
        // A negative count is an error of the ring buffer; its records are
        // read at the next call.
        let _ = lock(&self.ring).consume_raw();
        let records: Vec<T> = self.records.try_iter().collect();
        self.queued.fetch_sub(records.len(), Ordering::Relaxed);
        records
    }

    /// Records read from the ring buffer that the queue had no room for.
    pub(crate) fn overflowed(&self) -> u64 {
        self.overflowed.load(Ordering::Relaxed)
    }
}

fn lock<'a>(
    ring: &'a Mutex<RingBuffer<'static>>,
) -> std::sync::MutexGuard<'a, RingBuffer<'static>> {
    ring.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The thread: waits on the ring buffer's epoll without holding it, so
/// that the loop's reads never wait for the wait, and reads what came.
/// `_map` is kept open for the epoll, which waits on its descriptor.
fn read_as_records_come(ring: &Mutex<RingBuffer<'static>>, _map: MapHandle) {
    let epoll = lock(ring).epoll_fd();
    let mut ready = libc::epoll_event { events: 0, u64: 0 };
    let mut warned = false;
    loop {
        // SAFETY: `epoll` stays open while `ring` lives, which this thread
        // holds; `ready` is one event, as the count says.
        let woken = unsafe { libc::epoll_wait(epoll, &mut ready, 1, WAIT_MS) };
        let error = std::io::Error::last_os_error();
        if woken < 0 && error.kind() != std::io::ErrorKind::Interrupted {
            if !std::mem::replace(&mut warned, true) {
                tracing::warn!(%error, "the ring buffer cannot be waited on: read every second");
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        let _ = lock(ring).consume_raw();
        if woken > 0 {
            std::thread::sleep(GATHER);
        }
    }
}
