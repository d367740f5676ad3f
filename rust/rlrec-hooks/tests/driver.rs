//! The real rlmesh 0.1.0 RuntimeDriver, in-process, with the toy env and
//! model, recording through rlrec-hooks into a real `rlrec serve`; each
//! case compares what the driver emitted (a tap beside rlrec's hooks)
//! with what the ROOT holds (`rlrec replay --format events`, `rlrec
//! inspect --json`).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::serve::{Serve, inspect, replay_events};
use common::world::{EnvPlan, ToyEnv, ToyModel, spec};
use common::{Fanout, Tap, census, compare, kind_name, of_recording};
use rlmesh_runtime::{RuntimeDriver, RuntimeSessionSpec};
use rlrec_hooks::proto::events as ev;
use rlrec_hooks::{Config, Forwarder};

struct Case {
    name: &'static str,
    plan: EnvPlan,
    lanes: usize,
    next_step: bool,
    tweak: fn(&mut RuntimeSessionSpec),
    transform: bool,
    routes: usize,
    want_failure: bool,
}

fn plan(lengths: &[usize], next_step: bool, lane_served: bool) -> EnvPlan {
    EnvPlan {
        lengths: lengths.to_vec(),
        next_step,
        lane_served,
        fail_at_call: None,
        step_delay: Duration::ZERO,
    }
}

struct Outcome {
    /// Per recording: (session, env, emitted, recorded, inspect json).
    recordings: Vec<(String, String, Vec<ev::Event>, Vec<ev::Event>, serde_json::Value)>,
    stats: rlrec_hooks::Stats,
}

async fn run_case(c: Case) -> Outcome {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("root");
    let mut serve = Serve::start(&root);
    let fwd = Arc::new(
        Forwarder::start(Config::new(serve.addr.clone(), tmp.path().join("spool")))
            .expect("start forwarder"),
    );
    let tap = Arc::new(Tap::default());
    let hooks = Arc::new(Fanout {
        tap: tap.clone(),
        fwd: fwd.clone(),
        transform: c.transform,
    });
    let mut runs = Vec::new();
    let mut ids = Vec::new();
    for r in 0..c.routes {
        let mut s = spec(
            &format!("{}-{r}", c.name),
            c.lanes,
            c.next_step,
            c.plan.lane_served,
        );
        (c.tweak)(&mut s);
        ids.push((s.session_id.clone(), s.env_id.clone()));
        let driver = RuntimeDriver::new(s, ToyEnv::new(c.plan.clone()), ToyModel, hooks.clone());
        runs.push(driver.run());
    }
    // The driver's future is not Send: the routes run concurrently on
    // this task.
    for res in futures::future::join_all(runs).await {
        assert_eq!(
            res.is_err(),
            c.want_failure,
            "case {}: driver result {:?}",
            c.name,
            res.as_ref().err()
        );
    }
    let stats = fwd
        .close(Instant::now() + Duration::from_secs(60))
        .await
        .expect("every event acknowledged");
    serve.stop();
    let emitted = tap.take();
    let mut recordings = Vec::new();
    for (session, env) in ids {
        let mine = of_recording(&emitted, &session, &env);
        let recorded = replay_events(&root, &session, &env);
        let json = inspect(&root, &session, &env);
        recordings.push((session, env, mine, recorded, json));
    }
    Outcome { recordings, stats }
}

/// Every event accounted for, field by field; returns the per-kind counts
/// for the report.
fn check(name: &str, o: &Outcome) {
    let total: usize = o.recordings.iter().map(|r| r.2.len()).sum();
    assert_eq!(o.stats.dropped, 0, "{name}: drops");
    assert_eq!(o.stats.refused, 0, "{name}: refusals");
    assert_eq!(o.stats.accepted, total as u64, "{name}: accepted vs emitted");
    for (session, env, emitted, recorded, _) in &o.recordings {
        let diffs = compare(emitted, recorded);
        assert!(
            diffs.is_empty(),
            "{name} {session}/{env}: the ROOT differs from what the driver emitted:\n{}",
            diffs.join("\n")
        );
        eprintln!(
            "case {name} {session}/{env}: emitted {} events, recorded {}: {:?}",
            emitted.len(),
            recorded.len(),
            census(emitted)
        );
    }
}

/// The lanes of per-lane events, in emission order.
fn lane_order(events: &[ev::Event]) -> Vec<u32> {
    events
        .iter()
        .filter_map(|e| e.route.as_ref().and_then(|r| r.lane))
        .collect()
}

/// Some lane's events come before and after another lane's.
fn interleaved(lanes: &[u32]) -> bool {
    let mut runs = lanes.to_vec();
    runs.dedup();
    let mut seen = std::collections::HashSet::new();
    runs.iter().any(|l| !seen.insert(*l))
}

fn episodes(json: &serde_json::Value) -> Vec<serde_json::Value> {
    fn find(v: &serde_json::Value, out: &mut Vec<serde_json::Value>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(serde_json::Value::Array(a)) = m.get("episodes") {
                    out.extend(a.iter().cloned());
                }
                for (k, x) in m {
                    if k != "episodes" {
                        find(x, out);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| find(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    find(json, &mut out);
    out
}

/// Episode rows: one per EpisodeStarted, with the completion's figures.
fn check_episode_rows(name: &str, emitted: &[ev::Event], json: &serde_json::Value) {
    use ev::event::Kind;
    let rows = episodes(json);
    let started: Vec<&ev::EpisodeStarted> = emitted
        .iter()
        .filter_map(|e| match &e.kind {
            Some(Kind::EpisodeStarted(s)) => Some(s),
            _ => None,
        })
        .collect();
    assert_eq!(rows.len(), started.len(), "{name}: episode rows {json}");
    for e in emitted {
        if let Some(Kind::EpisodeCompleted(c)) = &e.kind {
            let row = rows
                .iter()
                .find(|r| r["episode_record_id"] == c.episode_record_id.as_str())
                .unwrap_or_else(|| panic!("{name}: no row for {}", c.episode_record_id));
            assert_eq!(row["step_count"], c.step_count, "{name}: {row}");
            assert_eq!(row["return"].as_f64(), Some(c.cumulative_reward), "{name}: {row}");
            assert_eq!(row["status"], "completed", "{name}: {row}");
            assert_eq!(row["terminated"], c.terminated, "{name}: {row}");
            assert_eq!(row["truncated"], c.truncated, "{name}: {row}");
            if let Some(success) = c.success {
                assert_eq!(row["success"], success, "{name}: {row}");
            }
        }
    }
}

fn no_tweak(_: &mut RuntimeSessionSpec) {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn single_env() {
    let o = run_case(Case {
        name: "single",
        plan: plan(&[3], false, false),
        lanes: 1,
        next_step: false,
        tweak: no_tweak,
        transform: false,
        routes: 1,
        want_failure: false,
    })
    .await;
    check("single", &o);
    let (_, _, emitted, _, json) = &o.recordings[0];
    check_episode_rows("single", emitted, json);
    let kinds: Vec<&str> = emitted.iter().map(kind_name).collect();
    assert_eq!(kinds.first(), Some(&"SessionStarted"));
    assert_eq!(kinds.last(), Some(&"SessionEnded"), "0.1: final telemetry, then SessionEnded");
}
