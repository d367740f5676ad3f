"""The capture hook's cost with and without its spool (rlrec.Capture's
``spool=``), against a real ``rlrec serve``, in one run.

    RLREC_BIN=/path/to/rlrec python python/bench/spool_bench.py [--rounds 2] [--steps 2000]

Each round runs the variants in the order memory, spool, spool, memory
(A B B A), each a fresh Capture recording one run of episodes of 200
steps into its own ROOT; every ``on_step`` call is timed, and the median
per variant and workload is printed (microseconds), with the ratio. The
workloads: a CartPole-sized observation (4 float32) and a camera frame
(224x224x3 uint8 and 8 float32), both with a Discrete(2) action.
``max_wait=None``, so no step is dropped. The load average is printed
before and after: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from types import SimpleNamespace

import numpy as np
from rlmesh import spaces as S

import rlrec


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


WORKLOADS = {
    "cartpole": (S.Box(-10.0, 10.0, shape=(4,), dtype=np.float32), lambda rng: rng.random(4, dtype=np.float32)),
    "camera": (
        S.Dict(
            {
                "image": S.Box(0, 255, shape=(224, 224, 3), dtype=np.uint8),
                "state": S.Box(-1.0, 1.0, shape=(8,), dtype=np.float32),
            }
        ),
        lambda rng: {
            "image": rng.integers(0, 256, (224, 224, 3), dtype=np.uint8),
            "state": rng.random(8, dtype=np.float32),
        },
    ),
}


def one(addr: str, spool: str | None, workload: str, steps: int) -> list[float]:
    space, make = WORKLOADS[workload]
    rng = np.random.default_rng(0)
    cap = rlrec.Capture(
        addr, spool=spool if spool else False, observation_space=space, action_space=S.Discrete(2), max_wait=None
    )
    cap.on_run_start(None)
    times = []
    ep, t = 0, 0
    cap.on_episode_start(episode=ep, seed=ep)
    for _ in range(steps):
        obs = make(rng)
        ev = SimpleNamespace(episode=ep, step=t, observation=obs, action=np.int64(t % 2), reward=1.0,
                             terminated=False, truncated=t == 199, info={}, predict_ms=0.0, step_ms=0.0)  # fmt: skip
        t0 = time.perf_counter()
        cap.on_step(ev)
        times.append(time.perf_counter() - t0)
        t += 1
        if t == 200:
            cap.on_episode_end(SimpleNamespace(index=ep, steps=t, reward=float(t), terminated=False, truncated=True,
                                               duration_s=0.0, seed=ep))  # fmt: skip
            ep, t = ep + 1, 0
            cap.on_episode_start(episode=ep, seed=ep)
    cap.on_episode_end(SimpleNamespace(index=ep, steps=t, reward=float(t), terminated=False, truncated=True,
                                       duration_s=0.0, seed=ep))  # fmt: skip
    cap.on_run_end(None)
    cap.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2000)
    a = ap.parse_args()
    rlrec_bin = os.environ.get("RLREC_BIN", "rlrec")
    work = tempfile.mkdtemp(prefix="spool-bench-")
    addr = f"127.0.0.1:{free_port()}"
    srv = subprocess.Popen([rlrec_bin, "serve", "--listen", addr, "--out", os.path.join(work, "root")],
                           stderr=subprocess.DEVNULL)  # fmt: skip
    print("load average before:", open("/proc/loadavg").read().split()[:3])
    try:
        got: dict[tuple[str, str], list[float]] = {}
        for workload in WORKLOADS:
            for r in range(a.rounds):
                for variant in ("memory", "spool", "spool", "memory"):
                    spool = os.path.join(work, f"spool-{r}") if variant == "spool" else None
                    got.setdefault((workload, variant), []).extend(one(addr, spool, workload, a.steps))
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(work, ignore_errors=True)
    print("load average after:", open("/proc/loadavg").read().split()[:3])
    for workload in WORKLOADS:
        m = statistics.median(got[(workload, "memory")]) * 1e6
        s = statistics.median(got[(workload, "spool")]) * 1e6
        n = len(got[(workload, "spool")])
        print(f"{workload}: on_step median {m:.1f} us memory only, {s:.1f} us spooled ({s / m:.2f}x), {n} steps each")


if __name__ == "__main__":
    main()
