//! rlrec-hooks: an rlmesh 0.1 [`RuntimeHooks`](rlmesh_runtime::RuntimeHooks)
//! that records every runtime event with rlrec.
//!
//! [`Forwarder`] implements all 15 hook methods. The 13 events become
//! `rlrec.events.v1.Event` messages (every 0.1.0 field; see [`convert`]);
//! the two transform hooks return the payload unchanged (a recorder never
//! alters what the env and the model receive).
//!
//! # Contract
//!
//! - **Identity.** A forwarder mints a 16-byte random run nonce at start
//!   and sets it on every event (`Event.run_nonce`), with the wall time
//!   when the hook ran (`time_unix_nano`) and the event's number within its
//!   recording (`sequence`: per `(session_id, route.env_id)`, from 1).
//! - **Crash safety.** Before a hook returns, its event is written to a
//!   local spool file with one `write(2)` (see [`spool`] for the format):
//!   it survives `kill -9` of the process (not a power cut). A forwarder
//!   started later on the same spool directory resends what the server had
//!   not acknowledged, and `rlrec ingest` reads a spool file directly.
//! - **Never stalls the driver.** rlmesh awaits hooks inline and cannot
//!   cancel them. The events not yet acknowledged are bounded in bytes
//!   ([`Config::max_queue_bytes`]); a hook waits for room at most
//!   [`Config::send_timeout`], then drops its event and counts it; after a
//!   drop, hooks take room only if it is free at once until one gets it
//!   again. An event over [`Config::max_message_bytes`] is dropped too (the
//!   server could never take it). A recording's drops reach it as a WARN logs row (source
//!   [`DROP_LOG_SOURCE`], the count in its message) just before its
//!   `SessionEnded`/`SessionFailed`, and in [`Stats::dropped`]. The
//!   session's start and end events (and that logs row) are never dropped.
//! - **Exactly once.** A sending thread streams events to `rlrec serve`
//!   (rlrec.ingest.v1), keeps each until acknowledged, reconnects with
//!   backoff and resends what is unacknowledged; the server drops the
//!   sequence numbers it has. Refused events are logged (tracing) and
//!   counted, never resent.
//! - **End.** [`Forwarder::flush`] and [`Forwarder::close`] wait for the
//!   acknowledgements until a deadline; `close` removes the spool once all
//!   is acknowledged, and otherwise leaves it for the next forwarder.
//!
//! Hooks, `flush` and `close` run on the caller's tokio runtime (with its
//! time driver, as rlmesh's driver needs anyway); sending runs on a thread
//! of its own. The library never prints; it reports through `tracing`.

pub mod convert;
mod forwarder;
mod sender;
pub mod spool;
mod stats;

/// rlrec's protocols, compiled from the repository's `.proto` files. The
/// space types (`rlmesh.spaces.v1`) are rlmesh's own prost types, so events
/// carry the runtime's payloads without conversion.
pub mod proto {
    /// `rlrec.events.v1`: the event wire form.
    pub mod events {
        #![allow(clippy::all)]
        tonic::include_proto!("rlrec.events.v1");
    }
    /// `rlrec.ingest.v1`: the `rlrec serve` protocol (client side).
    pub mod ingest {
        #![allow(clippy::all)]
        tonic::include_proto!("rlrec.ingest.v1");
    }
}

pub use forwarder::{Config, DROP_LOG_SOURCE, FlushError, Forwarder};
pub use stats::Stats;
