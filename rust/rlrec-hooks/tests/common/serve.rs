//! A real `rlrec serve` for the tests, and the rlrec commands that read
//! its ROOT back. The binary is $RLREC_BIN, or built once from this
//! repository with `go build`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use prost::Message;
use rlrec_hooks::proto::events as ev;

/// The rlrec binary: $RLREC_BIN, else `go build` from the repository root
/// into this crate's target directory (once per test process).
pub fn rlrec_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(b) = std::env::var_os("RLREC_BIN") {
            let b = PathBuf::from(b);
            assert!(b.is_file(), "RLREC_BIN={} is no file", b.display());
            return b;
        }
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rlrec");
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let st = Command::new("go")
            .args(["build", "-o"])
            .arg(&out)
            .arg("./cmd/rlrec")
            .current_dir(&root)
            .status()
            .expect("run go build (set RLREC_BIN to a built rlrec instead)");
        assert!(st.success(), "go build ./cmd/rlrec failed");
        out
    })
    .clone()
}

pub struct Serve {
    child: Option<Child>,
    pub addr: String,
    pub root: PathBuf,
}

impl Serve {
    /// Starts `rlrec serve -o ROOT` on a free loopback port and waits for
    /// its "listening on" line.
    pub fn start(root: &Path) -> Serve {
        Serve::start_at(root, "127.0.0.1:0")
    }

    /// Starts `rlrec serve -o ROOT --listen LISTEN`.
    pub fn start_at(root: &Path, listen: &str) -> Serve {
        let mut child = Command::new(rlrec_bin())
            .args(["serve", "--listen", listen, "--metrics-listen", "", "-o"])
            .arg(root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rlrec serve");
        let stderr = child.stderr.take().expect("serve stderr");
        let mut lines = BufReader::new(stderr).lines();
        let addr = loop {
            let line = lines
                .next()
                .expect("rlrec serve exited before it listened")
                .expect("read serve stderr");
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split([',', ' ']).next().unwrap_or("").to_string();
            }
        };
        // Keep draining its stderr so that it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Serve {
            child: Some(child),
            addr: format!("http://{addr}"),
            root: root.to_path_buf(),
        }
    }

    /// SIGTERM, then waits for it to drain and close ROOT.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let st = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .expect("kill -TERM");
            assert!(st.success());
            let st = child.wait().expect("wait for rlrec serve");
            assert!(st.success(), "rlrec serve exited with {st}");
        }
    }
}

impl Serve {
    /// SIGKILL: the server dies with events received but not acknowledged.
    pub fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().expect("kill -9 rlrec serve");
            child.wait().expect("reap rlrec serve");
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Splits a length-delimited event stream.
pub fn decode_stream(mut data: &[u8]) -> Vec<ev::Event> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let e = ev::Event::decode_length_delimited(&mut data).expect("a length-delimited event");
        out.push(e);
    }
    out
}

/// `rlrec replay ROOT --session ID --env ENV --format events`.
pub fn replay_events(root: &Path, session: &str, env: &str) -> Vec<ev::Event> {
    let out = Command::new(rlrec_bin())
        .arg("replay")
        .arg(root)
        .args(["--session", session, "--env", env, "--format", "events"])
        .stderr(Stdio::piped())
        .output()
        .expect("run rlrec replay");
    assert!(
        out.status.success(),
        "rlrec replay failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    decode_stream(&out.stdout)
}

/// `rlrec inspect ROOT --session ID --env ENV --json`.
pub fn inspect(root: &Path, session: &str, env: &str) -> serde_json::Value {
    let out = Command::new(rlrec_bin())
        .arg("inspect")
        .arg(root)
        .args(["--session", session, "--env", env, "--json"])
        .output()
        .expect("run rlrec inspect");
    assert!(
        out.status.success(),
        "rlrec inspect failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("inspect --json output")
}

/// `rlrec ingest --out ROOT FILE`.
pub fn ingest(root: &Path, file: &Path) -> std::process::Output {
    Command::new(rlrec_bin())
        .args(["ingest", "--out"])
        .arg(root)
        .arg(file)
        .output()
        .expect("run rlrec ingest")
}

/// Polls `cond` until it holds; the deadline only bounds a failure.
pub fn wait_until(what: &str, bound: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + bound;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `rlrec recover ROOT`: writes out recordings left open in the log (a
/// producer killed mid-run leaves its recording open).
pub fn recover(root: &Path) {
    let out = Command::new(rlrec_bin())
        .arg("recover")
        .arg(root)
        .output()
        .expect("run rlrec recover");
    assert!(
        out.status.success(),
        "rlrec recover failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
