//! The sending task: streams the queued events to `rlrec serve` over
//! rlrec.ingest.v1 and keeps each one until the server acknowledges it.
//!
//! It runs on its own thread with its own single-threaded tokio runtime,
//! so it makes progress whatever the driver's runtime is doing, and the
//! hooks only hand events over (an unbounded channel whose contents are
//! paid for in the forwarder's byte budget).
//!
//! Protocol (see ingest/ingestv1/ingest.proto and the Go serve package):
//! one `Record` stream at a time; batches numbered from 1 per stream; an
//! acknowledgement `durable_batch = k` finishes every batch up to k (each
//! event durable, already recorded, or named in `refused`). When the stream
//! breaks, the task reconnects with backoff (50 ms doubling to 5 s, with
//! jitter, reset by an acknowledgement) and resends every unacknowledged
//! event on a new stream; the server drops those it has by their sequence
//! numbers. Refused events are done and never resent. `UNAUTHENTICATED`
//! or `PERMISSION_DENIED` ends the task: the token is wrong.

use std::collections::VecDeque;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use prost::bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, mpsc, watch};
use tonic::transport::Endpoint;

use crate::proto::ingest::{RecordRequest, RecordResponse, ingest_client::IngestClient};
use crate::spool::SpoolFile;
use crate::stats::Shared;

/// One event on its way: its encoded bytes, where it lies in a spool and
/// the budget it holds until acknowledged.
pub(crate) struct Item {
    pub bytes: Bytes,
    /// Index into the sender's spool targets, and the offset after the event.
    pub spool: Option<(usize, u64)>,
    pub _permit: Option<OwnedSemaphorePermit>,
}

pub(crate) enum Msg {
    Item(Item),
    /// Finish once everything is acknowledged.
    Close,
    /// The forwarder started a new spool segment: `sealed` (the sender
    /// target `sealed_target`) is full and is removed once acknowledged;
    /// the new one is the next target, `ack` its acknowledgement file.
    Segment {
        sealed_target: usize,
        sealed: SpoolFile,
        ack: File,
    },
}

/// A spool whose acknowledgements the sender writes.
pub(crate) enum AckTarget {
    /// The running forwarder's own spool: its acknowledgement file.
    Own(File),
    /// A dead run's spool or a full segment of this run's, removed once its
    /// last event is acknowledged.
    Recovered(Option<SpoolFile>),
}

pub(crate) struct SenderConfig {
    pub server: String,
    pub token: Option<String>,
    pub batch_bytes: usize,
    pub max_message_bytes: usize,
}

const BACKOFF_MIN: Duration = Duration::from_millis(50);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

struct State {
    unacked: VecDeque<Item>,
    targets: Vec<AckTarget>,
    acked_at: Vec<u64>,
    shared: Arc<Shared>,
    closing: bool,
    rx_open: bool,
}

impl State {
    fn finished(&self) -> bool {
        (self.closing || !self.rx_open) && self.unacked.is_empty()
    }

    fn take(&mut self, msg: Option<Msg>) {
        match msg {
            Some(Msg::Item(item)) => self.unacked.push_back(item),
            Some(Msg::Close) => self.closing = true,
            Some(Msg::Segment {
                sealed_target,
                sealed,
                ack,
            }) => {
                if self.acked_at[sealed_target] >= sealed.size() {
                    if let Err(e) = sealed.remove() {
                        tracing::warn!("rlrec-hooks: {e}");
                    }
                    self.targets[sealed_target] = AckTarget::Recovered(None);
                } else {
                    self.targets[sealed_target] = AckTarget::Recovered(Some(sealed));
                }
                self.targets.push(AckTarget::Own(ack));
                self.acked_at.push(0);
            }
            None => self.rx_open = false,
        }
    }

    /// Finishes the first `n` unacknowledged events.
    fn finish(&mut self, n: usize) {
        let mut touched = Vec::new();
        for item in self.unacked.drain(..n.min(self.unacked.len())) {
            if let Some((t, end)) = item.spool
                && end > self.acked_at[t]
            {
                self.acked_at[t] = end;
                touched.push(t);
            }
        }
        touched.dedup();
        for t in touched {
            let at = self.acked_at[t];
            match &mut self.targets[t] {
                AckTarget::Own(f) => {
                    if let Err(e) = f.write_all_at(&at.to_le_bytes(), 0) {
                        tracing::warn!("rlrec-hooks: spool acknowledgement not written: {e}");
                    }
                }
                AckTarget::Recovered(slot) => {
                    let done = slot.as_ref().is_some_and(|f| at >= f.size());
                    if done {
                        if let Some(f) = slot.take()
                            && let Err(e) = f.remove()
                        {
                            tracing::warn!("rlrec-hooks: {e}");
                        }
                    } else if let Some(f) = slot.as_ref()
                        && let Err(e) = f.set_acked(at)
                    {
                        tracing::warn!("rlrec-hooks: {e}");
                    }
                }
            }
        }
        self.shared.done.send_modify(|d| *d += n as u64);
    }
}

/// Runs the sending loop until closed and drained, or aborted.
pub(crate) fn run(
    cfg: SenderConfig,
    rx: mpsc::UnboundedReceiver<Msg>,
    recovered: Vec<Item>,
    targets: Vec<AckTarget>,
    shared: Arc<Shared>,
    abort: watch::Receiver<bool>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            shared.set_fatal(format!("cannot start the sending runtime: {e}"));
            return;
        }
    };
    let n = targets.len();
    let mut st = State {
        unacked: recovered.into(),
        targets,
        acked_at: vec![0; n],
        shared,
        closing: false,
        rx_open: true,
    };
    rt.block_on(run_loop(&cfg, rx, &mut st, abort));
}

fn jitter(d: Duration) -> Duration {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    let frac = u16::from_le_bytes(b) as f64 / u16::MAX as f64;
    d.mul_f64(0.75 + 0.5 * frac)
}

async fn run_loop(
    cfg: &SenderConfig,
    mut rx: mpsc::UnboundedReceiver<Msg>,
    st: &mut State,
    mut abort: watch::Receiver<bool>,
) {
    let mut backoff = BACKOFF_MIN;
    let mut first = true;
    loop {
        if st.finished() || *abort.borrow() {
            return;
        }
        if !first {
            // Wait out the backoff, still taking events in.
            let sleep = tokio::time::sleep(jitter(backoff));
            tokio::pin!(sleep);
            loop {
                tokio::select! {
                    _ = &mut sleep => break,
                    m = rx.recv(), if st.rx_open => st.take(m),
                    _ = abort.changed() => return,
                }
            }
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
        first = false;
        match stream_once(cfg, &mut rx, st, &mut abort).await {
            StreamEnd::Finished => return,
            StreamEnd::Fatal(msg) => {
                st.shared.set_fatal(msg);
                return;
            }
            StreamEnd::Broken { acked } => {
                if acked {
                    backoff = BACKOFF_MIN;
                }
            }
        }
    }
}

enum StreamEnd {
    Finished,
    Fatal(String),
    Broken { acked: bool },
}

fn broken(status: &tonic::Status, acked: bool) -> StreamEnd {
    match status.code() {
        tonic::Code::Unauthenticated | tonic::Code::PermissionDenied => StreamEnd::Fatal(format!(
            "rlrec serve refused the token ({}): check the token file given to rlrec serve",
            status.message()
        )),
        _ => {
            tracing::debug!("rlrec-hooks: stream to rlrec serve broke: {status}");
            StreamEnd::Broken { acked }
        }
    }
}

async fn stream_once(
    cfg: &SenderConfig,
    rx: &mut mpsc::UnboundedReceiver<Msg>,
    st: &mut State,
    abort: &mut watch::Receiver<bool>,
) -> StreamEnd {
    let endpoint = match Endpoint::from_shared(cfg.server.clone()) {
        Ok(e) => e.connect_timeout(Duration::from_secs(5)),
        Err(e) => {
            return StreamEnd::Fatal(format!(
                "server address {:?} is no URI ({e}): give it as http://HOST:PORT",
                cfg.server
            ));
        }
    };
    let channel = match endpoint.connect().await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(
                "rlrec-hooks: cannot reach rlrec serve at {}: {e}",
                cfg.server
            );
            return StreamEnd::Broken { acked: false };
        }
    };
    let mut client = IngestClient::new(channel)
        .max_encoding_message_size(cfg.max_message_bytes)
        .max_decoding_message_size(cfg.max_message_bytes);
    let (req_tx, req_rx) = mpsc::channel::<RecordRequest>(4);
    let mut request = tonic::Request::new(tokio_stream::wrappers::ReceiverStream::new(req_rx));
    if let Some(token) = &cfg.token {
        match format!("Bearer {token}").parse() {
            Ok(v) => {
                request.metadata_mut().insert("authorization", v);
            }
            Err(_) => {
                return StreamEnd::Fatal(
                    "the token holds characters a gRPC header cannot carry".to_string(),
                );
            }
        }
    }
    let call = client.record(request);
    tokio::pin!(call);
    let mut responses: Option<tonic::Streaming<RecordResponse>> = None;
    let mut sent = 0usize; // unacked events sent on this stream
    let mut batches: VecDeque<(u64, usize)> = VecDeque::new();
    let mut next_batch = 1u64;
    let mut acked = false;
    loop {
        if st.finished() {
            return StreamEnd::Finished;
        }
        tokio::select! {
            biased;
            _ = abort.changed() => return StreamEnd::Finished,
            r = &mut call, if responses.is_none() => match r {
                Ok(s) => responses = Some(s.into_inner()),
                Err(status) => return broken(&status, acked),
            },
            m = async { match responses.as_mut() { Some(s) => s.message().await, None => std::future::pending().await } }, if responses.is_some() => match m {
                Ok(Some(resp)) => {
                    let mut n = 0usize;
                    while let Some(&(b, count)) = batches.front() {
                        if b > resp.durable_batch {
                            break;
                        }
                        batches.pop_front();
                        n += count;
                    }
                    for r in &resp.refused {
                        tracing::warn!(
                            "rlrec-hooks: rlrec serve refused event {} of recording ({}, {}): {}",
                            r.sequence, r.session_id, r.env_id, r.message
                        );
                    }
                    st.shared.refused.fetch_add(resp.refused.len() as u64, Ordering::Relaxed);
                    st.shared.delivered.fetch_add((n - resp.refused.len().min(n)) as u64, Ordering::Relaxed);
                    sent -= n;
                    st.finish(n);
                    acked = true;
                }
                Ok(None) => return StreamEnd::Broken { acked },
                Err(status) => return broken(&status, acked),
            },
            permit = req_tx.reserve(), if sent < st.unacked.len() => match permit {
                Ok(permit) => {
                    let mut events = Vec::new();
                    let mut bytes = 0usize;
                    for item in st.unacked.iter().skip(sent) {
                        if !events.is_empty() && bytes + item.bytes.len() > cfg.batch_bytes {
                            break;
                        }
                        bytes += item.bytes.len();
                        events.push(item.bytes.clone());
                    }
                    sent += events.len();
                    batches.push_back((next_batch, events.len()));
                    permit.send(RecordRequest { batch: next_batch, events });
                    next_batch += 1;
                }
                Err(_) => return StreamEnd::Broken { acked },
            },
            m = rx.recv(), if st.rx_open => st.take(m),
        }
    }
}
