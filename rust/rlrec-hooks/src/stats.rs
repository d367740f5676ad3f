//! Counters shared by the hooks and the sending task, and what a caller
//! reads of them.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::watch;

/// What the forwarder did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Events numbered, spooled and queued (including a dead run's spooled
    /// events this forwarder took over).
    pub accepted: u64,
    /// Events the server acknowledged as recorded (or already recorded).
    pub delivered: u64,
    /// Events the server refused (logged, never resent).
    pub refused: u64,
    /// Events dropped because the queue stayed full past the send timeout.
    pub dropped: u64,
    /// Events whose spool write failed (sent, but not crash-safe).
    pub spool_errors: u64,
}

pub(crate) struct Shared {
    pub accepted: AtomicU64,
    pub delivered: AtomicU64,
    pub refused: AtomicU64,
    pub dropped: AtomicU64,
    pub spool_errors: AtomicU64,
    /// Events finished: acknowledged or refused.
    pub done: watch::Sender<u64>,
    fatal: Mutex<Option<String>>,
}

impl Shared {
    pub fn new() -> Shared {
        Shared {
            accepted: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            spool_errors: AtomicU64::new(0),
            done: watch::Sender::new(0),
            fatal: Mutex::new(None),
        }
    }

    pub fn set_fatal(&self, msg: String) {
        tracing::error!("rlrec-hooks: {msg}");
        if let Ok(mut f) = self.fatal.lock() {
            f.get_or_insert(msg);
        }
        // Wake waiters so they see it.
        self.done.send_modify(|_| {});
    }

    pub fn fatal(&self) -> Option<String> {
        self.fatal.lock().ok().and_then(|f| f.clone())
    }

    pub fn stats(&self) -> Stats {
        Stats {
            accepted: self.accepted.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            spool_errors: self.spool_errors.load(Ordering::Relaxed),
        }
    }
}
