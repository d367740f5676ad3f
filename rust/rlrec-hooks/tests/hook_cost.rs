//! The cost of rlrec's hook per event, against a hook that does nothing,
//! in the same run (calls interleaved, so both see the same load). Not a
//! test: run it and read the table.
//!
//!     cargo test --release --ignore-rust-version --test hook_cost -- --ignored --nocapture
//!
//! Each call is timed on its own (Instant around the awaited hook); the
//! forwarder streams into a real `rlrec serve` meanwhile.

// Tests report their counts and figures on stderr (the library never prints).
#![allow(clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::bytes::Bytes;
use rlmesh_runtime::*;
use rlrec_hooks::{Config, Forwarder};

use common::serve::Serve;
use common::world::obs_space;

/// Calls per payload: small events many times; 150 KB camera frames
/// fewer, so that they stay within the queue's byte budget (a burst
/// beyond it measures the drop path instead).
const RUNS: [(&str, usize, usize); 3] = [
    ("StepCompleted", 0, 20_000),
    ("ObservationEmitted", 8, 20_000),
    ("ObservationEmitted", 150_000, 1_000),
];

fn route() -> RuntimeEnvContext {
    RuntimeEnvContext {
        env_id: "env-bench".into(),
        env_component_id: "env/toy".into(),
        model_component_id: "model/toy".into(),
        lane: None,
    }
}

fn observation(session: &str, step: i64, bytes: usize) -> ObservationEmittedEvent {
    let leaf = Bytes::from(vec![7u8; bytes]);
    ObservationEmittedEvent {
        session_id: session.into(),
        route: route(),
        episode_id: "e1".into(),
        episode_record_id: "ep-000001".into(),
        episode_ids: vec!["e1".into()],
        episode_record_ids: vec!["ep-000001".into()],
        step,
        env_index: 0,
        is_reset: false,
        num_envs: 1,
        observation_space: Arc::new(obs_space()),
        observation: Some(vec![leaf.clone()]),
        raw_observation: Some(vec![leaf]),
        infos: None,
    }
}

fn step(session: &str, step: i64) -> StepCompletedEvent {
    StepCompletedEvent {
        session_id: session.into(),
        route: route(),
        episode_id: "e1".into(),
        episode_record_id: "ep-000001".into(),
        step,
        env_index: 0,
        rewards: vec![1.0],
        infos: None,
        terminated: vec![false],
        truncated: vec![false],
        autoreset_roll: vec![false],
        predict_ms: 0.1,
        step_ms: 0.1,
    }
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn hook_cost_against_noop() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let mut serve = Serve::start(&tmp.path().join("root"));
    let fwd = Forwarder::start(Config::new(serve.addr.clone(), tmp.path().join("spool")))
        .expect("forwarder");
    let noop = NoopRuntimeHooks;
    let session = "sess-bench";
    fwd.session_started(SessionStartedEvent {
        session_id: session.into(),
        route: route(),
        env_id: "env-bench".into(),
    })
    .await
    .expect("start");
    eprintln!("| event | payload | hook | calls | p50 | p99 |");
    eprintln!("|---|---|---|---|---|---|");
    let mut s = 0i64;
    for (label, bytes, n) in RUNS {
        let mut t_noop = Vec::with_capacity(n);
        let mut t_fwd = Vec::with_capacity(n);
        for _ in 0..n {
            s += 1;
            if bytes == 0 {
                let e = step(session, s);
                let t = Instant::now();
                let _ = noop.step_completed(e.clone()).await;
                t_noop.push(t.elapsed());
                let t = Instant::now();
                let _ = fwd.step_completed(e).await;
                t_fwd.push(t.elapsed());
            } else {
                let e = observation(session, s, bytes);
                let t = Instant::now();
                let _ = noop.observation_emitted(e.clone()).await;
                t_noop.push(t.elapsed());
                let t = Instant::now();
                let _ = fwd.observation_emitted(e).await;
                t_fwd.push(t.elapsed());
            }
        }
        for (name, v) in [("no-op", &mut t_noop), ("rlrec", &mut t_fwd)] {
            let p50 = pct(v, 0.50);
            let p99 = pct(v, 0.99);
            eprintln!(
                "| {label} | {bytes} B | {name} | {n} | {:.2} µs | {:.2} µs |",
                p50.as_secs_f64() * 1e6,
                p99.as_secs_f64() * 1e6
            );
        }
    }
    let stats = fwd
        .close(Instant::now() + Duration::from_secs(120))
        .await
        .expect("acknowledged");
    eprintln!("{stats:?}");
    assert_eq!(stats.dropped, 0);
    serve.stop();
}
