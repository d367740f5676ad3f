//! kill -9 of the process that runs the driver: every event whose rlrec
//! hook returned reaches the ROOT, through a forwarder restarted on the
//! spool, and through `rlrec ingest` of the spool file itself.
//!
//! The test re-runs its own binary as the child (`child_driver`, which
//! does nothing unless RLREC_KILL9_DIR is set). The child reports each
//! event whose hook returned by appending it, length-delimited, to a
//! file after the hook returned (a write(2): it survives the kill too).

// Tests report their counts and figures on stderr (the library never prints).
#![allow(clippy::print_stderr)]

mod common;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use prost::Message;
use rlmesh_runtime::*;
use rlrec_hooks::proto::events as ev;
use rlrec_hooks::{Config, Forwarder, convert};

use common::serve::{Serve, decode_stream, ingest, recover, replay_events, wait_until};
use common::world::{EnvPlan, ToyEnv, ToyModel, spec};
use common::{kind_name, normalize};

const CHILD_DIR: &str = "RLREC_KILL9_DIR";
const CHILD_SERVER: &str = "RLREC_KILL9_SERVER";

/// Forwards to rlrec's hooks and reports each event whose hook returned.
struct Reporter {
    fwd: Forwarder,
    out: Mutex<File>,
}

impl Reporter {
    fn report(&self, e: ev::Event) {
        let buf = e.encode_length_delimited_to_vec();
        let mut f = self.out.lock().expect("report file");
        f.write_all(&buf).expect("report an event");
    }
}

#[async_trait]
impl RuntimeHooks for Reporter {
    async fn env_connected(&self, e: EnvConnectedEvent) -> Result<(), HookError> {
        let wire = convert::env_connected(e.clone());
        self.fwd.env_connected(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn model_connected(&self, e: ModelConnectedEvent) -> Result<(), HookError> {
        let wire = convert::model_connected(e.clone());
        self.fwd.model_connected(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn session_started(&self, e: SessionStartedEvent) -> Result<(), HookError> {
        let wire = convert::session_started(e.clone());
        self.fwd.session_started(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn episode_started(&self, e: EpisodeStartedEvent) -> Result<(), HookError> {
        let wire = convert::episode_started(e.clone());
        self.fwd.episode_started(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn episode_completed(&self, e: EpisodeCompletedEvent) -> Result<(), HookError> {
        let wire = convert::episode_completed(e.clone());
        self.fwd.episode_completed(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn action_received(&self, e: ActionReceivedEvent) -> Result<(), HookError> {
        let wire = convert::action_received(e.clone());
        self.fwd.action_received(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn step_completed(&self, e: StepCompletedEvent) -> Result<(), HookError> {
        let wire = convert::step_completed(e.clone());
        self.fwd.step_completed(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn observation_emitted(&self, e: ObservationEmittedEvent) -> Result<(), HookError> {
        let wire = convert::observation_emitted(e.clone());
        self.fwd.observation_emitted(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn session_ended(&self, e: SessionEndedEvent) -> Result<(), HookError> {
        let wire = convert::session_ended(e.clone());
        self.fwd.session_ended(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn on_telemetry(&self, e: TelemetrySnapshotEvent) -> Result<(), HookError> {
        let wire = convert::telemetry(e.clone());
        self.fwd.on_telemetry(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn session_failed(&self, e: SessionFailedEvent) -> Result<(), HookError> {
        let wire = convert::session_failed(e.clone());
        self.fwd.session_failed(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn log(&self, e: LogEvent) -> Result<(), HookError> {
        let wire = convert::log(e.clone());
        self.fwd.log(e).await?;
        self.report(wire);
        Ok(())
    }
    async fn relay_advisory(&self, e: RelayAdvisoryEvent) -> Result<(), HookError> {
        let wire = convert::relay_advisory(e.clone());
        self.fwd.relay_advisory(e).await?;
        self.report(wire);
        Ok(())
    }
}

/// The child: a long run recording into the server, until it is killed.
#[test]
#[ignore = "the child process of kill9_spool_delivers_every_returned_hook"]
fn child_driver() {
    let (Some(dir), Some(server)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var(CHILD_SERVER).ok(),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let fwd = Forwarder::start(Config::new(server, dir.join("spool"))).expect("forwarder");
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("returned.events"))
            .expect("report file");
        let hooks = Arc::new(Reporter {
            fwd,
            out: Mutex::new(out),
        });
        let mut s = spec("kill9", 1, false, false);
        s.max_episodes = Some(1_000_000);
        let plan = EnvPlan {
            lengths: vec![7],
            next_step: false,
            lane_served: false,
            fail_at_call: None,
            step_delay: Duration::from_micros(200),
        };
        let _ = RuntimeDriver::new(s, ToyEnv::new(plan), ToyModel, hooks)
            .run()
            .await;
    });
}

fn returned(dir: &Path) -> Vec<ev::Event> {
    let data = std::fs::read(dir.join("returned.events")).unwrap_or_default();
    // A report cut by the kill is the one event whose report was being
    // written: only whole frames count.
    let mut out = Vec::new();
    let mut b = &data[..];
    while !b.is_empty() {
        match ev::Event::decode_length_delimited(&mut b) {
            Ok(e) => out.push(e),
            Err(_) => break,
        }
    }
    out
}

/// Every returned event is in `recorded`; `recorded` holds at most
/// `in_flight` more (hooks that wrote their event and were killed before
/// the report).
fn check_delivery(what: &str, returned: &[ev::Event], recorded: &[ev::Event], in_flight: usize) {
    let a: Vec<ev::Event> = returned.iter().map(normalize).collect();
    let b: Vec<ev::Event> = recorded.iter().map(normalize).collect();
    let mut used = vec![false; b.len()];
    for (i, x) in a.iter().enumerate() {
        let j = (0..b.len()).find(|&j| !used[j] && b[j] == *x);
        assert!(
            j.is_some(),
            "{what}: returned event {i} ({}) is not in the ROOT: {:?}",
            kind_name(x),
            x.kind
        );
        if let Some(j) = j {
            used[j] = true;
        }
    }
    let extra = used.iter().filter(|u| !**u).count();
    assert!(
        extra <= in_flight,
        "{what}: {extra} recorded events were never reported returned"
    );
    eprintln!(
        "{what}: {} hooks returned before kill -9, {} events recorded ({} in flight at the kill)",
        a.len(),
        b.len(),
        extra
    );
}

#[test]
fn kill9_spool_delivers_every_returned_hook() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let dir = tmp.path().to_path_buf();
    let root = dir.join("root");
    // The child records towards a server that is not there yet, so that
    // nothing it sends is acknowledged: all of it must come from the spool.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let listen = format!("127.0.0.1:{port}");
    let server = format!("http://{listen}");
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_driver", "--ignored", "--nocapture"])
        .env(CHILD_DIR, &dir)
        .env(CHILD_SERVER, &server)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the child");
    wait_until(
        "500 returned hooks in the child",
        Duration::from_secs(120),
        || returned(&dir).len() >= 500,
    );
    child.kill().expect("kill -9 the child"); // SIGKILL
    child.wait().expect("reap the child");
    let reported = returned(&dir);
    let session = reported[0].session_id.clone();
    let env = reported[0]
        .route
        .as_ref()
        .map(|r| r.env_id.clone())
        .unwrap_or_default();

    // The dead run's spool, as `rlrec ingest` reads it.
    let spools: Vec<PathBuf> = std::fs::read_dir(dir.join("spool"))
        .expect("spool dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "events"))
        .collect();
    assert_eq!(spools.len(), 1, "one dead run's spool: {spools:?}");
    let spool_copy = dir.join("spool-copy.events");
    std::fs::copy(&spools[0], &spool_copy).expect("copy the spool");

    // A restarted forwarder resends what the server had not acknowledged.
    let mut serve = Serve::start_at(&root, &listen);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let stats = rt.block_on(async {
        let fwd = Forwarder::start(Config::new(serve.addr.clone(), dir.join("spool")))
            .expect("restart the forwarder");
        fwd.close(Instant::now() + Duration::from_secs(60))
            .await
            .expect("the dead run's events acknowledged")
    });
    assert_eq!(stats.refused, 0);
    assert!(
        stats.accepted >= reported.len() as u64,
        "the restarted forwarder took over the spool: {stats:?}"
    );
    eprintln!("restarted forwarder: {stats:?}");
    let left: Vec<PathBuf> = std::fs::read_dir(dir.join("spool"))
        .expect("spool dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    assert!(left.is_empty(), "acknowledged spools are removed: {left:?}");
    serve.stop();
    // The run never ended: its recording is open in the log.
    recover(&root);
    let recorded = replay_events(&root, &session, &env);
    check_delivery("restarted forwarder", &reported, &recorded, 2);

    // The spool file on its own records the same with `rlrec ingest`.
    let root2 = dir.join("root-ingest");
    let out = ingest(&root2, &spool_copy);
    let spooled = decode_stream(&std::fs::read(&spool_copy).expect("read spool")[..]);
    eprintln!(
        "rlrec ingest of the spool: {} events in it, exit {}: {}",
        spooled.len(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    assert!(
        out.status.success(),
        "rlrec ingest SPOOL: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    if root2.join("_rlrec").exists() {
        recover(&root2);
    }
    let recorded2 = replay_events(&root2, &session, &env);
    check_delivery("rlrec ingest SPOOL", &reported, &recorded2, 2);
}
