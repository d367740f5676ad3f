"""rlrec against the recorders people use today, on the same episodes.

    python3 bench/peers/run.py                      # every tool, 3 repetitions, 3 kills each; writes results.json
    python3 bench/peers/run.py --smoke              # what .ci/run runs: seconds, rlrec, EnvLogger and the env alone
    python3 bench/peers/run.py --tools rlrec-ingest,minari --reps 3 --crashes 2
    python3 bench/peers/run.py --lerobot-export     # LeRobotDataset loads rlrec export's output (lerobot_export.py)

Standard library only: each tool runs in a child process (worker.py) in its
own virtual environment, made once from its pinned requirements file
(requirements-<venv>.txt beside this file) under
${RLREC_CI_CACHE:-~/.cache/rlrec-ci}/peers/<venv>-<hash of the file>, and
reused while the file is unchanged ($RLREC_PEERS_<VENV>_PYTHON names the
python of an existing environment instead). The install time and size of each are
printed and kept in the results. ``rlrec`` is $RLREC_BIN, or built from
this checkout into the same cache.

What is measured, for each env (envs.py: gymnasium CartPole-v1 and a
224x224x3 camera env) and tool, over --reps repetitions in a rotating
order (medians; the env alone runs in every venv as that venv's baseline):

- added time per step: (the recording loop - the env alone's loop in the
  same venv) / steps;
- episodes per second: episodes / (loop + time to readable);
- bytes on disk per step: the sizes of every file the tool left, / steps;
- peak RSS of the process that runs the env (and, for rlrec, of the
  recorder process: ``rlrec ingest`` or ``rlrec serve``);
- time to readable: from the return of the last episode's end call until
  the tool's reader can load the data (worker.py says what each includes).

Then the crash test (--crashes per tool and env): the recording process is
killed with SIGKILL at a random point (uniform over 10-90% of its measured
recording time, from its ``start`` line to readable; the random generator
seeded by --seed), the episodes it had
finished are counted from its ``episode K`` lines, and the tool's own
reader (worker.py read) counts the complete episodes it still loads. For
rlrec two kills: the Python process alone (the recorder process, ``rlrec
ingest`` or ``rlrec serve``, lives on: ingest sees its input end, serve
keeps the recording open until ``rlrec recover``), and the Python process
together with the recorder process (then ``rlrec recover`` before reading).
For the ``rlrec-serve`` tools a Capture is then started on the killed
run's spool (worker.py resend; a new ``rlrec serve`` on the same ROOT when
the server was killed too): it resends what the server had not
acknowledged before the reader counts.

The smoke pass (--smoke) covers the harness end to end with the light
peers: rlrec (ingest and serve; a 300 MB venv), EnvLogger (130 MB) and the env alone,
one repetition of 2 episodes per env and one crash per tool. Minari needs
jax to write a dataset (a 700 MB venv) and LeRobot torch with its CUDA
libraries (7.6 GB): too heavy for CI, so they run in the full pass
only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKER = os.path.join(HERE, "worker.py")

# The venv each tool runs in (requirements-<venv>.txt).
VENV = {
    "rlrec-ingest": "base",
    "rlrec-serve": "base",
    "rlrec-serve-flush": "base",
    "minari": "minari",
    "minari-raw": "minari",
    "lerobot": "lerobot",
    "lerobot-video": "lerobot",
    "envlogger": "envlogger",
}
ALL_TOOLS = list(VENV)
SMOKE_TOOLS = ["rlrec-ingest", "rlrec-serve", "envlogger"]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cache_dir() -> str:
    c = os.environ.get("RLREC_CI_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "rlrec-ci"
    )
    return os.path.join(c, "peers")


def dir_bytes(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except FileNotFoundError:
                pass
    return total


def venv_python(name: str, python: str) -> tuple[str, dict]:
    """The venv of requirements-<name>.txt, made when missing; returns its
    python and what installing it took."""
    given = os.environ.get(f"RLREC_PEERS_{name.upper()}_PYTHON")
    if given:  # an existing environment with the same packages
        return given, {"given": given}
    req = os.path.join(HERE, f"requirements-{name}.txt")
    with open(req, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    d = os.path.join(cache_dir(), f"{name}-{digest}")
    py = os.path.join(d, "bin", "python")
    stamp = os.path.join(d, "installed.json")
    if os.path.exists(stamp):
        with open(stamp) as f:
            return py, json.load(f)
    if os.path.exists(d):
        shutil.rmtree(d)
    log(f"-- installing the {name} venv into {d} (from {os.path.relpath(req, REPO)})")
    t = time.monotonic()
    subprocess.run([python, "-m", "venv", d], check=True)
    env = dict(os.environ, PIP_CACHE_DIR=os.path.join(cache_dir(), "pip"))
    p = subprocess.run(
        [py, "-m", "pip", "install", "--no-input", "--no-deps", "-r", req], env=env, capture_output=True, text=True
    )
    if p.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        raise SystemExit(f"installing {req} into {d} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
    info = {
        "install_s": round(time.monotonic() - t, 1),
        "size_mb": round(dir_bytes(d) / 1e6),
        "python": subprocess.run(
            [py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
        ).stdout.strip(),
    }
    with open(stamp, "w") as f:
        json.dump(info, f)
    log(f"-- {name}: {info['install_s']} s, {info['size_mb']} MB")
    return py, info


def install_rlrec(py: str) -> None:
    """rlrec's Python package from this checkout, as the README installs it
    (pip install ./python), every run: it changes with the checkout."""
    p = subprocess.run(
        [
            py,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-input",
            "--no-deps",
            "--no-build-isolation",
            "--force-reinstall",
            os.path.join(REPO, "python"),
        ],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise SystemExit(f"pip install ./python into {py} failed (exit {p.returncode}):\n{p.stderr[-3000:]}")


def rlrec_bin() -> str:
    b = os.environ.get("RLREC_BIN")
    if b:
        return b
    b = os.path.join(cache_dir(), "rlrec")
    log(f"-- building rlrec into {b}")
    subprocess.run(["go", "build", "-o", b, "./cmd/rlrec"], cwd=REPO, check=True)
    return b


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Server:
    """An ``rlrec serve`` on a fresh port for one recording."""

    def __init__(self, rlrec: str, out: str):
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.out = out
        self.proc = subprocess.Popen(
            [rlrec, "serve", "-o", out, "--listen", self.addr, "--metrics-listen", f"127.0.0.1:{free_port()}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:  # ready once it accepts connections
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"rlrec serve exited {self.proc.returncode}: {self.proc.stderr.read().decode()[-500:]}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("rlrec serve did not listen within 60 s") from None
                time.sleep(0.01)

    def stop(self, kill: bool = False) -> int:
        hwm = hwm_kb(self.proc.pid)
        self.proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self.proc.wait(timeout=120)
        return hwm


def start_worker(py: str, tool: str, env: str, episodes: int, out: str, rlrec: str, addr: str | None, seed: int):
    argv = [
        py,
        WORKER,
        "record",
        "--tool",
        tool,
        "--env",
        env,
        "--episodes",
        str(episodes),
        "--out",
        out,
        "--seed",
        str(seed),
    ]
    if addr:
        argv += ["--addr", addr]
    e = dict(
        os.environ,
        RLREC_BIN=rlrec,
        PYTHONUNBUFFERED="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        WANDB_MODE="disabled",
    )
    return subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e, start_new_session=True
    )


class Lines(threading.Thread):
    """Reads a worker's standard output as it comes."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.lines = stream, []
        self.started = threading.Event()
        self.start()

    def run(self):
        for line in self.stream:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("start"):
                self.started.set()

    def finished(self) -> int:
        return max([int(x.split()[1]) for x in self.lines if x.startswith("episode ")], default=0)

    def result(self) -> dict | None:
        for x in self.lines:
            if x.startswith("result "):
                return json.loads(x[7:])
        return None


def record_once(py, tool, env, episodes, workdir, rlrec, seed) -> dict:
    out = tempfile.mkdtemp(prefix=f"{tool}-{env}-", dir=workdir)
    server = Server(rlrec, out) if tool.startswith("rlrec-serve") else None
    t0 = time.monotonic()
    p = start_worker(py, tool, env, episodes, out, rlrec, server.addr if server else None, seed)
    lines = Lines(p.stdout)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    lines.join()
    wall = time.monotonic() - t0
    rec_rss = server.stop() if server else 0
    r = lines.result()
    if p.returncode != 0 or r is None:
        raise RuntimeError(f"{tool} on {env} exited {p.returncode}:\n{err[-3000:]}")
    # wait4's ru_maxrss is the largest of the worker and its children (rlrec
    # ingest): the worker reports its own.
    r.update(
        wall_s=wall,
        rss_kb=r.pop("maxrss_kb"),
        recorder_rss_kb=max(rec_rss, r.pop("children_maxrss_kb")),
        bytes=dir_bytes(out),
        out=out,
    )
    return r


def read_back(py, tool, env, out, rlrec) -> dict:
    e = dict(os.environ, RLREC_BIN=rlrec, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    p = subprocess.run(
        [py, WORKER, "read", "--tool", tool, "--env", env, "--out", out], capture_output=True, text=True, env=e
    )
    for x in p.stdout.splitlines():
        if x.startswith("read "):
            return json.loads(x[5:])
    return {"episodes": 0, "error": f"reader exited {p.returncode}: {p.stderr.strip()[-300:]}"}


def resend(py, tool, env, out, rlrec, addr) -> dict:
    e = dict(os.environ, RLREC_BIN=rlrec)
    p = subprocess.run(
        [py, WORKER, "resend", "--tool", tool, "--env", env, "--out", out, "--addr", addr],
        capture_output=True,
        text=True,
        env=e,
    )
    for x in p.stdout.splitlines():
        if x.startswith("resend "):
            return json.loads(x[len("resend ") :])
    return {"error": f"resend exited {p.returncode}: {p.stderr.strip()[-300:]}"}


def wait_group_gone(pgid: int, bound_s: float = 120) -> None:
    """Waits until every process of the group has exited (a recorder child
    finishing its input); the bound only turns a hang into a failure."""
    deadline = time.monotonic() + bound_s
    while True:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"process group {pgid} still running {bound_s} s after the kill")
        time.sleep(0.01)


def crash_once(py, tool, env, episodes, workdir, rlrec, seed, at_s, kill_recorder) -> dict:
    out = tempfile.mkdtemp(prefix=f"crash-{tool}-{env}-", dir=workdir)
    server = Server(rlrec, out) if tool.startswith("rlrec-serve") else None
    p = start_worker(py, tool, env, episodes, out, rlrec, server.addr if server else None, seed)
    lines = Lines(p.stdout)
    threading.Thread(target=p.stderr.read, daemon=True).start()
    while not lines.started.wait(0.05):  # the recorder is set up
        if p.poll() is not None:
            raise RuntimeError(f"{tool} on {env} exited {p.returncode} before it started recording")
    t0 = time.monotonic()
    while time.monotonic() - t0 < at_s and p.poll() is None:
        time.sleep(0.002)
    try:
        if kill_recorder:
            os.killpg(p.pid, signal.SIGKILL)  # the worker and its rlrec ingest
        else:
            os.kill(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # it had finished: completed_run below says so
    p.wait()
    lines.join(timeout=30)
    wait_group_gone(p.pid)
    resent = None
    if server:
        # The capture spools each event before its hook returns: a Capture
        # started on the killed run's spool resends what the server had not
        # acknowledged (to a new server on the same ROOT when it was killed
        # too).
        if kill_recorder:
            server.stop(kill=True)
            server = Server(rlrec, out)
        resent = resend(py, tool, env, out, rlrec, server.addr)
        server.stop()
    finished = lines.finished()
    got = read_back(py, tool, env, out, rlrec)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(out + ".spool", ignore_errors=True)
    return {
        "at_s": round(at_s, 2),
        "finished": finished,
        "loaded": got.get("episodes", 0),
        "completed_run": lines.result() is not None,
        "error": got.get("error"),
        "resent": resent,
    }


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tools", default=",".join(ALL_TOOLS), help="comma-separated, of " + ", ".join(ALL_TOOLS))
    ap.add_argument("--envs", default="cartpole,camera")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--episodes-cartpole", type=int, default=20)
    ap.add_argument("--episodes-camera", type=int, default=6)
    ap.add_argument("--crashes", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--python", default=sys.executable, help="the interpreter the venvs are made from")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument(
        "--lerobot-export",
        action="store_true",
        help="only check that LeRobotDataset loads rlrec export's output (lerobot_export.py)",
    )
    ap.add_argument("-o", "--out", default=os.path.join(HERE, "results.json"))
    a = ap.parse_args()
    if a.lerobot_export:
        py, info = venv_python("lerobot", a.python)
        log(f"-- lerobot venv: {info}")
        raise SystemExit(
            subprocess.run(
                [py, os.path.join(HERE, "lerobot_export.py"), "--rlrec", rlrec_bin()],
                env=dict(os.environ, HF_HUB_OFFLINE="1"),
            ).returncode
        )
    if a.smoke:
        a.tools, a.reps, a.crashes = ",".join(SMOKE_TOOLS), 1, 1
        a.episodes_cartpole = a.episodes_camera = 2
    tools = [t for t in a.tools.split(",") if t]
    for t in tools:
        if t not in VENV:
            raise SystemExit(f"unknown tool {t!r}: one of {', '.join(ALL_TOOLS)}")
    envs_ = a.envs.split(",")
    episodes = {"cartpole": a.episodes_cartpole, "camera": a.episodes_camera}
    rng = random.Random(a.seed)

    rlrec = rlrec_bin()
    venvs = {}
    for name in sorted({VENV[t] for t in tools}):
        venvs[name] = venv_python(name, a.python)
    if "base" in venvs:
        install_rlrec(venvs["base"][0])
    workdir = tempfile.mkdtemp(prefix="rlrec-peers-")
    results = {
        "machine": {"nproc": os.cpu_count(), "loadavg_start": os.getloadavg()},
        "venvs": {k: v[1] for k, v in venvs.items()},
        "runs": {},
        "crashes": {},
    }
    try:
        for env in envs_:
            n = episodes[env]
            runs = {t: [] for t in tools}
            base = {v: [] for v in venvs}
            for rep in range(a.reps):
                order = [("none", v) for v in venvs] + [(t, VENV[t]) for t in tools]
                k = rep % len(order)
                order = order[k:] + order[:k]
                for tool, v in order:
                    r = record_once(venvs[v][0], tool, env, n, workdir, rlrec, 1000)
                    if tool == "none":
                        base[v].append(r)
                    else:
                        runs[tool].append(r)
                    if rep < a.reps - 1 or tool == "none":
                        shutil.rmtree(r.pop("out"), ignore_errors=True)
                    log(
                        f"{env} rep {rep + 1}/{a.reps} {tool} ({v}): {r['steps']} steps, loop {r['loop_s']:.3f} s, "
                        f"readable {r['readable_s']:.3f} s, {r['bytes'] / 1e6:.1f} MB"
                    )
            summary = {}
            for v, rs in base.items():
                summary[f"none ({v})"] = {
                    "loop_s": median([r["loop_s"] for r in rs]),
                    "rss_mb": median([r["rss_kb"] for r in rs]) / 1024,
                }
            for t, rs in runs.items():
                bl = median([r["loop_s"] for r in base[VENV[t]]])
                steps = rs[0]["steps"]
                check = read_back(venvs[VENV[t]][0], t, env, rs[-1].pop("out"), rlrec)
                summary[t] = {
                    "steps": steps,
                    "episodes": n,
                    "added_us_per_step": median([(r["loop_s"] - bl) / r["steps"] * 1e6 for r in rs]),
                    "episodes_per_s": median([r["episodes"] / (r["loop_s"] + r["readable_s"]) for r in rs]),
                    "bytes_per_step": median([r["bytes"] / r["steps"] for r in rs]),
                    "rss_mb": median([r["rss_kb"] for r in rs]) / 1024,
                    "recorder_rss_mb": median([r["recorder_rss_kb"] for r in rs]) / 1024,
                    "readable_ms": median([r["readable_s"] for r in rs]) * 1000,
                    "loop_s": [round(r["loop_s"], 3) for r in rs],
                    "reader": check,
                }
                if check.get("episodes") != n:
                    log(f"!! {t} on {env}: its reader loads {check} of {n} episodes")
            results["runs"][env] = summary
            # The crash test.
            crashes = {}
            for t in tools:
                py = venvs[VENV[t]][0]
                span = median([r["loop_s"] + r["readable_s"] for r in runs[t]])
                kinds = [False, True] if t.startswith("rlrec") else [False]
                for kill_rec in kinds:
                    name = t + (" (with its recorder process)" if kill_rec else "")
                    rows = []
                    for _ in range(a.crashes):
                        at = rng.uniform(0.1, 0.9) * span
                        c = crash_once(py, t, env, n, workdir, rlrec, 1000, at, kill_rec)
                        rows.append(c)
                        log(
                            f"{env} crash {name} at {c['at_s']} s: finished {c['finished']}, loaded {c['loaded']}"
                            + (f" ({c['error']})" if c["error"] else "")
                            + (f"; resent from the spool: {c['resent']}" if c["resent"] else "")
                        )
                    crashes[name] = rows
            results["crashes"][env] = crashes
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results["machine"]["loadavg_end"] = os.getloadavg()
    with open(a.out + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(a.out + ".tmp", a.out)
    print_tables(results)
    checks = [(env, t, m) for env, s in results["runs"].items() for t, m in s.items() if not t.startswith("none")]
    bad = [(env, t, m["reader"]) for env, t, m in checks if m["reader"].get("episodes") != m["episodes"]]
    for env, t, r in bad:
        print(f"FAIL: {t} on {env}: its reader loads {r}")
    # One line per tool and env whose reader loaded every recorded episode.
    print(f"peers: {len(checks) - len(bad)} passed, {len(bad)} failed")
    if bad:
        raise SystemExit(1)


def print_tables(results: dict) -> None:
    for env, s in results["runs"].items():
        print(f"\n{env}")
        print(
            "| tool | added µs/step | episodes/s | bytes/step | peak RSS MB (env process / recorder process) | readable ms |"
        )
        print("|---|---|---|---|---|---|")
        for t, m in s.items():
            if t.startswith("none"):
                print(f"| {t} | loop {m['loop_s'] * 1000:.0f} ms | | | {m['rss_mb']:.0f} | |")
                continue
            rec = f" / {m['recorder_rss_mb']:.0f}" if m["recorder_rss_mb"] else ""
            print(
                f"| {t} | {m['added_us_per_step']:.0f} | {m['episodes_per_s']:.2f} | {m['bytes_per_step']:.0f} | "
                f"{m['rss_mb']:.0f}{rec} | {m['readable_ms']:.0f} |"
            )
    for env, cs in results["crashes"].items():
        print(f"\ncrashes, {env}: finished -> loaded per kill")
        for name, rows in cs.items():
            cells = ", ".join(f"{r['finished']}->{r['loaded']}" for r in rows)
            print(f"| {name} | {cells} |")


if __name__ == "__main__":
    main()
