//! The `RuntimeHooks` implementation: each hook numbers its event, writes
//! it to the spool and hands it to the sending task, within a bounded wait.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use prost::Message;
use prost::bytes::Bytes;
use rlmesh_runtime::{
    ActionReceivedEvent, EnvConnectedEvent, EpisodeCompletedEvent, EpisodeStartedEvent, HookError,
    LogEvent, ModelConnectedEvent, ObservationEmittedEvent, RelayAdvisoryEvent, RuntimeHooks,
    SessionEndedEvent, SessionFailedEvent, SessionStartedEvent, StepCompletedEvent,
    TelemetrySnapshotEvent,
};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use crate::convert;
use crate::proto::events as ev;
use crate::sender::{self, AckTarget, Item, Msg, SenderConfig};
use crate::spool::{self, SpoolFile};
use crate::stats::{Shared, Stats};

/// The source of the logs row that reports dropped events.
pub const DROP_LOG_SOURCE: &str = "rlrec_hooks";

/// How a [`Forwarder`] records.
#[derive(Debug, Clone)]
pub struct Config {
    /// `rlrec serve`'s address, `http://HOST:PORT`; `None` records into
    /// the spool only, in one segment (then `rlrec ingest --out ROOT
    /// SPOOL/RUN-000001.events`).
    pub server: Option<String>,
    /// The bearer token `rlrec serve --token-file` expects.
    pub token: Option<String>,
    /// Where the spool files go (created if missing). Dead runs' spools
    /// found here are resent first.
    pub spool_dir: PathBuf,
    /// Bytes of events not yet acknowledged the forwarder holds at most.
    pub max_queue_bytes: usize,
    /// The longest a hook waits for room in a full queue before it drops
    /// its event. After one such drop the forwarder sheds: hooks take room
    /// only if it is free at once, until an event gets room again.
    pub send_timeout: Duration,
    /// Target size of one batch sent to the server.
    pub batch_bytes: usize,
    /// With a server, the spool is cut into segments of about this many
    /// bytes; a segment is removed once all its events are acknowledged,
    /// so a long run's spool holds about what is unacknowledged, not the
    /// whole run.
    pub segment_bytes: u64,
    /// The largest gRPC message sent or received: `rlrec serve
    /// --max-message` (64 MiB by default). An event that alone would not
    /// fit in a batch of this size is dropped and counted, since the
    /// server could never take it.
    pub max_message_bytes: usize,
}

impl Config {
    /// Records into `rlrec serve` at `server` (`http://127.0.0.1:7465`),
    /// spooling under `spool_dir`, with the default limits.
    pub fn new(server: impl Into<String>, spool_dir: impl Into<PathBuf>) -> Config {
        Config {
            server: Some(server.into()),
            token: None,
            spool_dir: spool_dir.into(),
            max_queue_bytes: 256 << 20,
            send_timeout: Duration::from_millis(50),
            batch_bytes: 1 << 20,
            segment_bytes: 64 << 20,
            max_message_bytes: 64 << 20,
        }
    }

    /// Records into the spool only.
    pub fn spool_only(spool_dir: impl Into<PathBuf>) -> Config {
        Config {
            server: None,
            ..Config::new("", spool_dir)
        }
    }
}

/// Why `flush` or `close` did not finish.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlushError {
    /// The deadline passed with events still unacknowledged; they stay in
    /// the spool, and the next forwarder started on it resends them.
    Deadline { unacknowledged: u64 },
    /// The sending task stopped for good (a refused token, a bad address).
    Stopped(String),
}

impl std::fmt::Display for FlushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FlushError::Deadline { unacknowledged } => write!(
                f,
                "rlrec-hooks: {unacknowledged} events not acknowledged by rlrec serve before the deadline; they stay in the spool and a forwarder started on it resends them"
            ),
            FlushError::Stopped(m) => write!(f, "rlrec-hooks: sending stopped: {m}"),
        }
    }
}

impl std::error::Error for FlushError {}

type Recording = (String, String);

struct Inner {
    /// The current spool segment, its sender target and number.
    spool: Option<SpoolFile>,
    spool_target: usize,
    segment: u32,
    next_target: usize,
    sequences: HashMap<Recording, u64>,
    dropped: HashMap<Recording, u64>,
    closed: bool,
}

/// A `RuntimeHooks` that records every event with rlrec; see the crate docs.
pub struct Forwarder {
    cfg: Config,
    nonce: Bytes,
    inner: Mutex<Inner>,
    tx: Option<mpsc::UnboundedSender<Msg>>,
    budget: Arc<Semaphore>,
    shedding: AtomicBool,
    shared: Arc<Shared>,
    abort: watch::Sender<bool>,
    exited: Mutex<Option<oneshot::Receiver<()>>>,
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Forwarder {
    /// Starts a forwarder: mints the run's nonce, creates its spool, takes
    /// over the spools of dead runs in `cfg.spool_dir` and (with a server)
    /// starts the sending thread, which resends those first.
    pub fn start(cfg: Config) -> std::io::Result<Forwarder> {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce)
            .map_err(|e| std::io::Error::other(format!("rlrec-hooks: no random nonce: {e}")))?;
        let recovered = match cfg.server {
            Some(_) => spool::recover(&cfg.spool_dir)?,
            None => Vec::new(),
        };
        let own = SpoolFile::create(&cfg.spool_dir, &spool::segment_name(&hex(&nonce), 1))?;
        let shared = Arc::new(Shared::new());
        let (abort, abort_rx) = watch::channel(false);
        let mut fwd = Forwarder {
            budget: Arc::new(Semaphore::new(
                cfg.max_queue_bytes.clamp(1, Semaphore::MAX_PERMITS),
            )),
            nonce: Bytes::copy_from_slice(&nonce),
            inner: Mutex::new(Inner {
                spool: None,
                spool_target: 0,
                segment: 1,
                next_target: 1,
                sequences: HashMap::new(),
                dropped: HashMap::new(),
                closed: false,
            }),
            tx: None,
            shedding: AtomicBool::new(false),
            shared: shared.clone(),
            abort,
            exited: Mutex::new(None),
            cfg,
        };
        if let Some(server) = fwd.cfg.server.clone() {
            let mut targets = vec![AckTarget::Own(own.ack_handle()?)];
            let mut items = Vec::new();
            for r in recovered {
                if r.torn > 0 {
                    tracing::info!(
                        "rlrec-hooks: cut {} bytes of a torn last event from {}",
                        r.torn,
                        r.file.events_path.display()
                    );
                }
                let t = targets.len();
                for (bytes, end) in r.events {
                    items.push(Item {
                        bytes,
                        spool: Some((t, end)),
                        _permit: None,
                    });
                }
                targets.push(AckTarget::Recovered(Some(r.file)));
            }
            shared
                .accepted
                .fetch_add(items.len() as u64, Ordering::Relaxed);
            let n_targets = targets.len();
            let (tx, rx) = mpsc::unbounded_channel();
            let (done_tx, done_rx) = oneshot::channel();
            let scfg = SenderConfig {
                server,
                token: fwd.cfg.token.clone(),
                batch_bytes: fwd.cfg.batch_bytes,
                max_message_bytes: fwd.cfg.max_message_bytes,
            };
            std::thread::Builder::new()
                .name("rlrec-hooks-sender".into())
                .spawn(move || {
                    sender::run(scfg, rx, items, targets, shared, abort_rx);
                    let _ = done_tx.send(());
                })?;
            fwd.tx = Some(tx);
            fwd.exited = Mutex::new(Some(done_rx));
            if let Ok(mut inner) = fwd.inner.lock() {
                inner.next_target = n_targets;
            }
        }
        if let Ok(mut inner) = fwd.inner.lock() {
            inner.spool = Some(own);
        }
        Ok(fwd)
    }

    /// The run's nonce, set on every event.
    pub fn run_nonce(&self) -> &[u8] {
        &self.nonce
    }

    /// The path of the spool segment this run writes now.
    pub fn spool_path(&self) -> Option<PathBuf> {
        self.inner
            .lock()
            .ok()
            .and_then(|i| i.spool.as_ref().map(|s| s.events_path.clone()))
    }

    /// The counters so far.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Waits until every event accepted before the call is acknowledged (or
    /// refused) by the server, at most until `deadline`. Without a server
    /// the spool holds everything and this returns at once.
    pub async fn flush(&self, deadline: Instant) -> Result<(), FlushError> {
        if self.tx.is_none() {
            return Ok(());
        }
        let target = self.shared.accepted.load(Ordering::SeqCst);
        let mut done = self.shared.done.subscribe();
        let wait = done.wait_for(|d| *d >= target || self.shared.fatal().is_some());
        let res = tokio::time::timeout_at(deadline.into(), wait).await;
        if let Some(m) = self.shared.fatal() {
            return Err(FlushError::Stopped(m));
        }
        match res {
            Ok(_) => Ok(()),
            Err(_) => Err(FlushError::Deadline {
                unacknowledged: target.saturating_sub(*self.shared.done.borrow()),
            }),
        }
    }

    /// Flushes, stops the sending task and, when everything was
    /// acknowledged, removes this run's spool. Later hooks drop their
    /// events (counted). Returns the final counters.
    pub async fn close(&self, deadline: Instant) -> Result<Stats, FlushError> {
        let flushed = self.flush(deadline).await;
        let spool = match self.inner.lock() {
            Ok(mut inner) => {
                inner.closed = true;
                inner.spool.take()
            }
            Err(_) => None,
        };
        if let Some(tx) = &self.tx {
            let _ = tx.send(Msg::Close);
        }
        let exited = self.exited.lock().ok().and_then(|mut e| e.take());
        if let Some(rx) = exited
            && tokio::time::timeout_at(deadline.into(), rx).await.is_err()
        {
            let _ = self.abort.send(true);
        }
        flushed?;
        if self.tx.is_some()
            && let Some(s) = spool
            && let Err(e) = s.remove()
        {
            tracing::warn!("rlrec-hooks: {e}");
        }
        Ok(self.stats())
    }

    fn count_drop(&self, key: Recording) {
        self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut inner) = self.inner.lock() {
            *inner.dropped.entry(key).or_default() += 1;
        }
    }

    /// Records one event: budget (bounded wait), then number, spool and
    /// queue under one lock so that the spool and the queue keep the
    /// numbering's order. `control` events (session start and end, drop
    /// reports) take no budget: they are small, and a recording without
    /// them is broken.
    async fn record(&self, mut event: ev::Event, control: bool) -> Result<(), HookError> {
        event.time_unix_nano = now_nanos();
        event.run_nonce = self.nonce.clone();
        let key: Recording = (
            event.session_id.clone(),
            event
                .route
                .as_ref()
                .map(|r| r.env_id.clone())
                .unwrap_or_default(),
        );
        let len = event.encoded_len();
        if self.tx.is_some() && len + 64 > self.cfg.max_message_bytes {
            tracing::warn!(
                "rlrec-hooks: dropped a {len}-byte event of ({}, {}): over the {}-byte message limit of rlrec serve (raise --max-message and Config::max_message_bytes together)",
                key.0,
                key.1,
                self.cfg.max_message_bytes
            );
            self.count_drop(key);
            return Ok(());
        }
        let cost = u32::try_from(len + 16).unwrap_or(u32::MAX);
        let permit = if self.tx.is_none() || control {
            None
        } else if self.shedding.load(Ordering::Relaxed) {
            match self.budget.clone().try_acquire_many_owned(cost) {
                Ok(p) => {
                    self.shedding.store(false, Ordering::Relaxed);
                    Some(p)
                }
                Err(_) => {
                    self.count_drop(key);
                    return Ok(());
                }
            }
        } else {
            match tokio::time::timeout(
                self.cfg.send_timeout,
                self.budget.clone().acquire_many_owned(cost),
            )
            .await
            {
                Ok(Ok(p)) => Some(p),
                _ => {
                    self.shedding.store(true, Ordering::Relaxed);
                    self.count_drop(key);
                    return Ok(());
                }
            }
        };
        let Ok(mut inner) = self.inner.lock() else {
            return Err(HookError::Message("rlrec-hooks: state poisoned".into()));
        };
        if inner.closed {
            drop(inner);
            self.count_drop(key);
            return Ok(());
        }
        let seq = inner.sequences.entry(key).or_default();
        *seq += 1;
        event.sequence = *seq;
        let len = event.encoded_len();
        let mut buf = Vec::with_capacity(len + 10);
        // Writing into a Vec with enough capacity cannot fail.
        let _ = event.encode_length_delimited(&mut buf);
        let prefix = buf.len() - len;
        let written = match inner.spool.as_mut() {
            Some(s) => s.append(&buf).map(|end| Some((0usize, end))),
            None => Ok(None),
        };
        let (spool_at, err) = match written {
            Ok(at) => (at, None),
            Err(e) => {
                self.shared.spool_errors.fetch_add(1, Ordering::Relaxed);
                (None, Some(e))
            }
        };
        self.shared.accepted.fetch_add(1, Ordering::SeqCst);
        if let Some(tx) = &self.tx {
            let bytes = Bytes::from(buf).slice(prefix..);
            let target = inner.spool_target;
            let _ = tx.send(Msg::Item(Item {
                bytes,
                spool: spool_at.map(|(_, end)| (target, end)),
                _permit: permit,
            }));
            if spool_at.is_some_and(|(_, end)| end >= self.cfg.segment_bytes) {
                self.rotate(&mut inner, tx);
            }
        }
        drop(inner);
        match err {
            Some(e) => Err(HookError::Message(format!(
                "{e} (the event was sent, but would not survive a crash)"
            ))),
            None => Ok(()),
        }
    }

    /// Starts the next spool segment and hands the full one to the sender,
    /// which removes it once all its events are acknowledged. On failure
    /// the current segment goes on growing.
    fn rotate(&self, inner: &mut Inner, tx: &mpsc::UnboundedSender<Msg>) {
        let run = hex(&self.nonce);
        let next = inner.segment + 1;
        let opened = SpoolFile::create(&self.cfg.spool_dir, &spool::segment_name(&run, next))
            .and_then(|f| f.ack_handle().map(|ack| (f, ack)));
        let (file, ack) = match opened {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("rlrec-hooks: next spool segment not started: {e}");
                return;
            }
        };
        let Some(sealed) = inner.spool.replace(file) else {
            return;
        };
        let sealed_target = inner.spool_target;
        inner.spool_target = inner.next_target;
        inner.next_target += 1;
        inner.segment = next;
        let _ = tx.send(Msg::Segment {
            sealed_target,
            sealed,
            ack,
        });
    }

    /// Before a recording's closing event: its drops as a WARN logs row.
    async fn report_drops(&self, session_id: &str, route: &rlmesh_runtime::RuntimeEnvContext) {
        let key = (session_id.to_string(), route.env_id.clone());
        let n = match self.inner.lock() {
            Ok(mut inner) => inner.dropped.remove(&key).unwrap_or(0),
            Err(_) => 0,
        };
        if n == 0 {
            return;
        }
        let message = format!(
            "rlrec-hooks dropped {n} events of this recording: its queue ({} bytes) stayed full for {} ms (rlrec serve did not acknowledge in time), or an event was over the {}-byte message limit",
            self.cfg.max_queue_bytes,
            self.cfg.send_timeout.as_millis(),
            self.cfg.max_message_bytes
        );
        let event = convert::log(LogEvent {
            session_id: session_id.to_string(),
            route: rlmesh_runtime::RuntimeEnvContext {
                lane: None,
                ..route.clone()
            },
            level: rlmesh_runtime::LogLevel::Warn,
            message,
            source: Some(DROP_LOG_SOURCE.to_string()),
        });
        let _ = self.record(event, true).await;
    }
}

impl Drop for Forwarder {
    /// Stops the sending thread (its unacknowledged events stay in the
    /// spool, for the next forwarder).
    fn drop(&mut self) {
        let _ = self.abort.send(true);
    }
}

#[async_trait]
impl RuntimeHooks for Forwarder {
    async fn env_connected(&self, e: EnvConnectedEvent) -> Result<(), HookError> {
        self.record(convert::env_connected(e), false).await
    }
    async fn model_connected(&self, e: ModelConnectedEvent) -> Result<(), HookError> {
        self.record(convert::model_connected(e), false).await
    }
    async fn session_started(&self, e: SessionStartedEvent) -> Result<(), HookError> {
        self.record(convert::session_started(e), true).await
    }
    async fn episode_started(&self, e: EpisodeStartedEvent) -> Result<(), HookError> {
        self.record(convert::episode_started(e), false).await
    }
    async fn episode_completed(&self, e: EpisodeCompletedEvent) -> Result<(), HookError> {
        self.record(convert::episode_completed(e), false).await
    }
    async fn action_received(&self, e: ActionReceivedEvent) -> Result<(), HookError> {
        self.record(convert::action_received(e), false).await
    }
    /// A recorder never alters what the env receives.
    async fn transform_action(
        &self,
        e: ActionReceivedEvent,
    ) -> Result<Option<Vec<Bytes>>, HookError> {
        Ok(e.action)
    }
    async fn step_completed(&self, e: StepCompletedEvent) -> Result<(), HookError> {
        self.record(convert::step_completed(e), false).await
    }
    async fn observation_emitted(&self, e: ObservationEmittedEvent) -> Result<(), HookError> {
        self.record(convert::observation_emitted(e), false).await
    }
    /// A recorder never alters what the model receives.
    async fn transform_observation(
        &self,
        e: ObservationEmittedEvent,
    ) -> Result<Option<Vec<Bytes>>, HookError> {
        Ok(e.observation)
    }
    async fn session_ended(&self, e: SessionEndedEvent) -> Result<(), HookError> {
        self.report_drops(&e.session_id, &e.route).await;
        self.record(convert::session_ended(e), true).await
    }
    async fn on_telemetry(&self, e: TelemetrySnapshotEvent) -> Result<(), HookError> {
        self.record(convert::telemetry(e), false).await
    }
    async fn session_failed(&self, e: SessionFailedEvent) -> Result<(), HookError> {
        self.report_drops(&e.session_id, &e.route).await;
        self.record(convert::session_failed(e), true).await
    }
    async fn log(&self, e: LogEvent) -> Result<(), HookError> {
        self.record(convert::log(e), false).await
    }
    async fn relay_advisory(&self, e: RelayAdvisoryEvent) -> Result<(), HookError> {
        self.record(convert::relay_advisory(e), false).await
    }
}
