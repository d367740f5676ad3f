//! The spool in small segments: full segments are removed as they are
//! acknowledged, and a dead run's segments are resent in order by the
//! next forwarder, every event once.

// Tests report their counts on stderr (the library never prints).
#![allow(clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlmesh_runtime::RuntimeDriver;
use rlrec_hooks::{Config, Forwarder};

use common::serve::{Serve, replay_events};
use common::world::{EnvPlan, ToyEnv, ToyModel, spec};
use common::{Fanout, Tap, compare};

fn files(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

async fn run(fwd: Arc<Forwarder>, tap: Arc<Tap>, name: &str) -> (String, String) {
    let hooks = Arc::new(Fanout {
        tap,
        fwd,
        transform: false,
    });
    let mut s = spec(name, 1, false, false);
    s.max_episodes = Some(6);
    let ids = (s.session_id.clone(), s.env_id.clone());
    let plan = EnvPlan {
        lengths: vec![8],
        next_step: false,
        lane_served: false,
        fail_at_call: None,
        step_delay: Duration::ZERO,
    };
    RuntimeDriver::new(s, ToyEnv::new(plan), ToyModel, hooks)
        .run()
        .await
        .expect("run");
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_segments_are_removed() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("root");
    let spool = tmp.path().join("spool");
    let mut serve = Serve::start(&root);
    let mut cfg = Config::new(serve.addr.clone(), &spool);
    cfg.segment_bytes = 2 << 10;
    let fwd = Arc::new(Forwarder::start(cfg).expect("forwarder"));
    let tap = Arc::new(Tap::default());
    let (session, env) = run(fwd.clone(), tap.clone(), "segments").await;
    let current = fwd.spool_path().expect("segment");
    let name = current
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        !name.ends_with("-000001.events"),
        "the run spans segments: {name}"
    );
    fwd.close(Instant::now() + Duration::from_secs(60))
        .await
        .expect("acknowledged");
    assert!(files(&spool).is_empty(), "left: {:?}", files(&spool));
    serve.stop();
    let diffs = compare(&tap.take(), &replay_events(&root, &session, &env));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_runs_segments_are_resent_in_order() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let spool = tmp.path().join("spool");
    // No server yet: nothing is acknowledged, every segment stays.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut cfg = Config::new(format!("http://{listen}"), &spool);
    cfg.segment_bytes = 2 << 10;
    let tap = Arc::new(Tap::default());
    let fwd = Arc::new(Forwarder::start(cfg.clone()).expect("forwarder"));
    let (session, env) = run(fwd.clone(), tap.clone(), "dead-segments").await;
    // The run dies without close: its hooks object goes away.
    drop(fwd);
    let left = files(&spool);
    let segments = left.iter().filter(|f| f.ends_with(".events")).count();
    assert!(segments > 2, "several segments: {left:?}");

    let root = tmp.path().join("root");
    let mut serve = Serve::start_at(&root, &listen);
    let next = Forwarder::start(cfg).expect("the next forwarder");
    common::serve::wait_until("the dead run resent", Duration::from_secs(60), || {
        files(&spool).len() <= 2 // only the next forwarder's own segment
    });
    let stats = next
        .close(Instant::now() + Duration::from_secs(60))
        .await
        .expect("acknowledged");
    assert_eq!(stats.refused, 0);
    assert!(files(&spool).is_empty(), "left: {:?}", files(&spool));
    serve.stop();
    common::serve::recover(&root);
    let emitted = tap.take();
    let diffs = compare(&emitted, &replay_events(&root, &session, &env));
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    eprintln!(
        "{} events in {segments} segments resent: {stats:?}",
        emitted.len()
    );
}
