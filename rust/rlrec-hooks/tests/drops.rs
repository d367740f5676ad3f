//! A full queue never stalls the driver: with rlrec serve away and a tiny
//! byte budget, hooks drop events after the send timeout, the run goes
//! on, and the drops reach the recording as a WARN logs row with their
//! count once the server is back.

// Tests report their counts and figures on stderr (the library never prints).
#![allow(clippy::print_stderr)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rlmesh_runtime::RuntimeDriver;
use rlrec_hooks::proto::events as ev;
use rlrec_hooks::{Config, DROP_LOG_SOURCE, Forwarder};

use common::serve::{Serve, replay_events};
use common::world::{EnvPlan, ToyEnv, ToyModel, spec};
use common::{Fanout, Tap};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_drops_counts_and_reports() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let mut cfg = Config::new(format!("http://{listen}"), tmp.path().join("spool"));
    cfg.max_queue_bytes = 16 << 10;
    cfg.send_timeout = Duration::from_millis(5);
    let fwd = Arc::new(Forwarder::start(cfg).expect("forwarder"));
    let tap = Arc::new(Tap::default());
    let hooks = Arc::new(Fanout {
        tap: tap.clone(),
        fwd: fwd.clone(),
        transform: false,
    });
    let mut s = spec("drops", 1, false, false);
    s.max_episodes = Some(20);
    let (session, env) = (s.session_id.clone(), s.env_id.clone());
    let plan = EnvPlan {
        lengths: vec![10],
        next_step: false,
        lane_served: false,
        fail_at_call: None,
        step_delay: Duration::ZERO,
    };
    let report = RuntimeDriver::new(s, ToyEnv::new(plan), ToyModel, hooks)
        .run()
        .await
        .expect("the run completes although nothing is acknowledged");
    assert_eq!(report.total_episodes, 20);
    let stats = fwd.stats();
    assert!(
        stats.dropped > 0,
        "a 16 KiB budget with no server drops: {stats:?}"
    );
    let emitted = tap.take();

    let spool = fwd.spool_path().expect("spool");
    let root = tmp.path().join("root");
    let mut serve = Serve::start_at(&root, &listen);
    // What the forwarder kept, as its spool holds it (close removes it).
    let kept_before = std::fs::read(&spool).expect("spool");
    let end = fwd
        .close(Instant::now() + Duration::from_secs(60))
        .await
        .expect("acknowledged once the server is up");
    serve.stop();
    let recorded = replay_events(&root, &session, &env);
    let kept = common::serve::decode_stream(&kept_before);
    eprintln!(
        "kept {:?}\nrecorded {:?}",
        common::census(&kept),
        common::census(&recorded)
    );
    // The forwarder kept every event it did not count as dropped, plus
    // the drop report, and the server acknowledged all of them.
    assert_eq!(kept.len() as u64 + stats.dropped, emitted.len() as u64 + 1);
    assert_eq!(end.delivered, kept.len() as u64, "{end:?}");
    // The ROOT holds them; of observations whose steps were dropped, the
    // recorder may keep fewer (it counts them as dropped steps).
    let (k, r) = (common::census(&kept), common::census(&recorded));
    for (kind, n) in &k {
        let got = r.get(kind).copied().unwrap_or(0);
        if *kind == "ObservationEmitted" {
            assert!(
                got <= *n && got + 2 >= *n,
                "{kind}: kept {n}, recorded {got}"
            );
        } else {
            assert_eq!(got, *n, "{kind}: kept {n}, recorded {got}");
        }
    }
    let reports: Vec<&ev::Log> = recorded
        .iter()
        .filter_map(|e| match &e.kind {
            Some(ev::event::Kind::Log(l)) if l.source.as_deref() == Some(DROP_LOG_SOURCE) => {
                Some(l)
            }
            _ => None,
        })
        .collect();
    assert_eq!(reports.len(), 1, "one drop report");
    assert_eq!(reports[0].level, ev::LogLevel::Warn as i32);
    assert!(
        reports[0]
            .message
            .contains(&format!("dropped {} events", stats.dropped)),
        "{}",
        reports[0].message
    );
    // The recording still starts and ends.
    let kinds: Vec<&str> = recorded.iter().map(common::kind_name).collect();
    assert!(kinds.contains(&"SessionStarted") && kinds.contains(&"SessionEnded"));
    eprintln!(
        "drops: {} emitted, {} dropped, {} recorded (with the report)",
        emitted.len(),
        stats.dropped,
        recorded.len()
    );
}
