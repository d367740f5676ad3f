"""kill -9 of a Python process recording a real rlmesh 0.1 run: every
event whose capture hook returned reaches the ROOT, exactly once, through
a Capture restarted on the spool directory, and through ``rlrec ingest``
of the spool files themselves.

The child (spool_child.py) connects to an ``rlrec serve``, which is then
killed, so nothing the run sends is acknowledged and all of it must come
from the spool; the child reports each hook that returned through a pipe
and is killed with SIGKILL mid-episode. A new server on the same ROOT and
address then gets the spool from a restarted Capture."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import free_port
from rlmesh_envs import CameraEnv, Tee, model

import rlrec

HERE = Path(__file__).resolve().parent
BOUND_S = 180  # a failure bound, not a wait


class Reports:
    """What the child said, line by line, read from its pipe."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc, self.lines, self._buf = proc, [], b""

    def read_until(self, cond) -> None:
        deadline = time.monotonic() + BOUND_S
        while not cond(self):
            assert time.monotonic() < deadline, f"the child did not get there: {self.lines[-3:]}"
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            assert chunk, f"the child exited {self.proc.wait()}: {self.proc.stderr.read().decode()}"
            self._take(chunk)

    def rest(self) -> None:
        while chunk := os.read(self.proc.stdout.fileno(), 1 << 16):
            self._take(chunk)

    def _take(self, chunk: bytes) -> None:
        self._buf += chunk
        *done, self._buf = self._buf.split(b"\n")
        self.lines += [d.decode() for d in done]

    def of(self, kind: str) -> list[list[str]]:
        return [ln.split()[1:] for ln in self.lines if ln.split()[0] == kind]


def run_rlrec(rlrec_bin: str, *args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([rlrec_bin, *args], capture_output=True, text=True)
    assert p.returncode == 0, f"rlrec {' '.join(args)} exited {p.returncode}: {p.stderr}"
    return p


def check_delivery(what: str, root: Path, session: str, env: str, rep: Reports) -> None:
    """The ROOT holds each reported step once with its reward, each
    reported episode, the ended ones completed; at most the one hook in
    flight at the kill more."""
    r = rlrec.open(root)
    steps = r.steps_pandas(session=session, env=env)
    got = [(row.episode_record_id, int(row.step), float(row.reward)) for row in steps.itertuples()]
    assert len(got) == len(set((e, s) for e, s, _ in got)), f"{what}: a step recorded twice"
    want = [(e, int(s), float.fromhex(rw)) for e, s, rw, _ in rep.of("step")]
    missing = set(want) - set(got)
    assert not missing, f"{what}: {len(missing)} returned steps not recorded, e.g. {sorted(missing)[:3]}"
    extra = set(got) - set(want)
    assert len(extra) <= 1, f"{what}: {len(extra)} steps recorded that no returned hook reported"
    eps = r.episodes(session=session, env=env)
    status = dict(zip(eps["episode_record_id"], eps["status"], strict=True))
    started = [e for (e,) in rep.of("episode")]
    assert set(started) <= set(status), f"{what}: started episodes missing: {set(started) - set(status)}"
    assert len(status) <= len(started) + 1, f"{what}: {len(status)} episodes recorded, {len(started)} reported"
    counts = dict(zip(eps["episode_record_id"], eps["step_count"], strict=True))
    for e, n in rep.of("end"):
        assert status[e] == "completed" and counts[e] == int(n), f"{what}: episode {e}: {status[e]} {counts[e]}"
    print(
        f"{what}: {len(want)} steps and {len(rep.of('end'))} finished episodes returned before kill -9; "
        f"{len(got)} steps and {sum(s == 'completed' for s in status.values())} completed episodes recorded",
        file=sys.stderr,
    )


def test_kill9_spool_delivers_every_returned_hook(rlrec_bin, tmp_path):
    root, spool = tmp_path / "root", tmp_path / "spool"
    addr = f"127.0.0.1:{free_port()}"
    serve = [rlrec_bin, "serve", "--listen", addr, "--out", str(root)]
    srv = subprocess.Popen(serve, stderr=subprocess.DEVNULL)
    child = None
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]))
        child = subprocess.Popen(
            [sys.executable, str(HERE / "spool_child.py"), addr, str(spool)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )
        rep = Reports(child)
        rep.read_until(lambda r: "ready" in r.lines)
        srv.kill()  # nothing the run sends is acknowledged
        srv.wait()
        child.stdin.write(b"go\n")
        child.stdin.flush()
        rep.read_until(lambda r: len(r.of("end")) >= 3 and len(r.of("step")) >= 130)
        child.send_signal(signal.SIGKILL)
        child.wait()
        rep.rest()
        assert all(d == "0" for *_, d in rep.of("step")), "the child dropped steps: the test needs them all"
        (session, env_id), ends = rep.of("run")[0], len(rep.of("end"))
        assert len(rep.of("episode")) > ends, "killed inside an episode"
        spooled = sorted(p.name for p in spool.iterdir())
        assert spooled and all(n.endswith((".events", ".acked")) for n in spooled), spooled
        for name in spooled:
            if name.endswith(".acked"):
                assert (spool / name).read_bytes() == bytes(8), f"{name}: nothing was acknowledged"
        copy = tmp_path / "spool-copy.events"
        with open(copy, "wb") as out:
            for name in spooled:
                if name.endswith(".events"):
                    out.write((spool / name).read_bytes())

        # A Capture restarted on the spool resends it; the server drops
        # what it had already taken from the dead stream.
        srv = subprocess.Popen(serve, stderr=subprocess.DEVNULL)
        cap = rlrec.Capture(addr, spool=spool)
        assert cap.recovered.segments >= 1 and cap.recovered.events >= len(rep.of("step")), cap.recovered
        cap.close()
        assert list(spool.iterdir()) == [], "acknowledged segments are removed"
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        srv.terminate()
        srv.wait()
    run_rlrec(rlrec_bin, "recover", str(root))  # the dead run's recording never ended
    assert ends >= 3
    check_delivery("restarted Capture", root, session, env_id, rep)

    # The spool on its own is an event stream rlrec ingest records.
    root2 = tmp_path / "root-ingest"
    run_rlrec(rlrec_bin, "ingest", "--out", str(root2), str(copy))
    if (root2 / "_rlrec").exists():
        run_rlrec(rlrec_bin, "recover", str(root2))
    check_delivery("rlrec ingest SPOOL", root2, session, env_id, rep)
    shutil.rmtree(tmp_path / "spool", ignore_errors=True)


def test_a_spool_that_cannot_be_written_drops_steps_and_records_it(rlrec_bin, tmp_path):
    """A full disk, made real with RLIMIT_FSIZE on this process (writes past
    64 KiB fail with EFBIG, the first one short): the run goes on, the
    steps whose spool write failed are dropped and counted, the recording
    gets the WARN row, and everything else is recorded."""
    root = tmp_path / "root"
    addr = f"127.0.0.1:{free_port()}"
    srv = subprocess.Popen([rlrec_bin, "serve", "--listen", addr, "--out", str(root)], stderr=subprocess.DEVNULL)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        cap = rlrec.Capture(addr, spool=tmp_path / "spool")
        tee = Tee(cap)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, hard))
        try:
            model().run(CameraEnv(horizon=40), seeds=list(range(20)), hooks=tee)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        cap.close()
    finally:
        signal.signal(signal.SIGXFSZ, old)
        srv.terminate()
        srv.wait()
    (run,) = cap.runs
    seen = sum(len(v) for v in tee.runs[0].steps.values())
    assert run.completed == 20 and 0 < run.dropped_steps < seen, (run.dropped_steps, seen)
    r = rlrec.open(root)
    assert len(r.steps_pandas(session=cap.session_id, env=run.env_id)) == seen - run.dropped_steps
    eps = r.episodes(session=cap.session_id, env=run.env_id)
    assert len(eps) == 20 and (eps["status"] == "completed").all()
    warns = [m for m in r.logs()["message"] if m.startswith("rlrec capture dropped")]
    # The first drop and the run's total, each naming the spool's failure.
    assert len(warns) == 2 and all("the spool could not be written" in m for m in warns), warns
    assert not any(p.name.endswith(".events") for p in (tmp_path / "spool").iterdir())
