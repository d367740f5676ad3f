//! `rlrec serve` killed with SIGKILL mid-run and started again on the same
//! ROOT: the forwarder reconnects, resends what was not acknowledged, and
//! the server drops what its log already had, so the ROOT holds every
//! event exactly once.

// Tests report their counts on stderr (the library never prints).
#![allow(clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlmesh_runtime::RuntimeDriver;
use rlrec_hooks::{Config, Forwarder};

use common::serve::{Serve, recover, replay_events, wait_until};
use common::world::{EnvPlan, ToyEnv, ToyModel, spec};
use common::{Fanout, Tap, compare};

#[test]
fn server_killed_and_restarted_mid_run() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("root");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let serve = Arc::new(std::sync::Mutex::new(Serve::start_at(&root, &listen)));
    let fwd = Arc::new(
        Forwarder::start(Config::new(
            format!("http://{listen}"),
            tmp.path().join("spool"),
        ))
        .expect("forwarder"),
    );
    let tap = Arc::new(Tap::default());

    // The server's life, on a thread: killed once 300 events went by
    // (some acknowledged, some only in its log, some not yet sent), then
    // started again on the same ROOT and port.
    let killer = {
        let (serve, fwd, root, listen) = (serve.clone(), fwd.clone(), root.clone(), listen.clone());
        std::thread::spawn(move || {
            wait_until("300 events accepted", Duration::from_secs(120), || {
                fwd.stats().accepted >= 300
            });
            let before = fwd.stats();
            serve.lock().expect("serve").kill9();
            *serve.lock().expect("serve") = Serve::start_at(&root, &listen);
            before
        })
    };

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (session, env, stats) = rt.block_on(async {
        let hooks = Arc::new(Fanout {
            tap: tap.clone(),
            fwd: fwd.clone(),
            transform: false,
        });
        let mut s = spec("reconnect", 1, false, false);
        s.max_episodes = Some(60);
        let ids = (s.session_id.clone(), s.env_id.clone());
        let plan = EnvPlan {
            lengths: vec![10],
            next_step: false,
            lane_served: false,
            fail_at_call: None,
            step_delay: Duration::from_micros(300),
        };
        RuntimeDriver::new(s, ToyEnv::new(plan), ToyModel, hooks)
            .run()
            .await
            .expect("run");
        let stats = fwd
            .close(Instant::now() + Duration::from_secs(120))
            .await
            .expect("everything acknowledged by the restarted server");
        (ids.0, ids.1, stats)
    });
    let before = killer.join().expect("killer thread");
    serve.lock().expect("serve").stop();
    recover(&root);
    let emitted = tap.take();
    assert_eq!(stats.refused, 0, "{stats:?}");
    assert_eq!(stats.dropped, 0, "{stats:?}");
    let recorded = replay_events(&root, &session, &env);
    let diffs = compare(&emitted, &recorded);
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    eprintln!(
        "reconnect: killed at {before:?}; {} events emitted, {} recorded, each once",
        emitted.len(),
        recorded.len()
    );
}
