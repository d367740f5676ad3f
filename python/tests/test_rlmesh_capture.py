"""The capture on real rlmesh 0.1 runs: Model.run (the native runtime
loop), rlmesh.run and Session.run (the session loop) with a Capture as
hooks=, into a ROOT through rlrec ingest and through rlrec serve. The
recorded tables, read back with rlrec.open, must equal what the hooks
saw, episode by episode and step by step."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
import rlmesh
from conftest import free_port
from rlmesh_envs import CameraEnv, Seen, Tee, model

import rlrec

SEEDS = [3, 5, 8]


def assert_same(value, want, where):
    if isinstance(want, dict):
        assert isinstance(value, dict) and sorted(value) == sorted(want), where  # order: the space's
        for k in want:
            assert_same(value[k], want[k], f"{where}.{k}")
    elif isinstance(want, str):
        assert value == want, where
    else:
        want = np.asarray(want)
        assert isinstance(value, np.ndarray | np.generic), where
        assert value.dtype == want.dtype and value.shape == want.shape, f"{where}: {value.dtype}{value.shape}"
        np.testing.assert_array_equal(value, want, err_msg=where)


def check_recording(root: Path, session_id: str, run: rlrec.RunInfo, seen: Seen) -> None:
    r = rlrec.open(root)
    eps = r.episodes(session=session_id, env=run.env_id).sort_values("episode_index").reset_index(drop=True)
    results = [seen.episodes[i]["result"] for i in sorted(seen.episodes)]
    assert len(eps) == len(results)
    for row, res in zip(eps.itertuples(), results, strict=True):
        where = f"episode {row.episode_record_id}"
        assert row.status == "completed", where
        assert row.step_count == res.steps == row.steps_recorded, where
        assert row.cumulative_reward == pytest.approx(res.reward), where
        assert (row.terminated, row.truncated) == (res.terminated, res.truncated), where
        assert row.duration_ms == int(res.duration_s * 1000), where

    steps = r.steps_pandas(session=session_id, env=run.env_id)
    assert (steps["session_id"] == session_id).all() and (steps["env_id"] == run.env_id).all()
    by_ep = {k: g.sort_values("step") for k, g in steps.groupby("episode_record_id")}
    for ep, i in zip(run.episodes, sorted(seen.steps), strict=True):
        events = seen.steps[i]
        rows = by_ep.get(ep.episode_record_id)
        assert rows is not None and len(rows) == len(events), ep.episode_record_id
        for row, ev in zip(rows.itertuples(), events, strict=True):
            where = f"{ep.episode_record_id} step {ev.step}"
            assert row.step == ev.step, where
            assert row.reward == ev.reward, where
            assert (row.terminated, row.truncated) == (ev.terminated, ev.truncated), where
            assert_same(row.observation, ev.observation, where + " observation")
            assert_same(row.action, np.asarray(ev.action), where + " action")
    # The spaces as stored: the camera image is uint8 H x W x C.
    first = steps.iloc[0].observation
    assert first["image"].dtype == np.uint8 and first["image"].shape == (8, 6, 3)
    assert isinstance(first["instruction"], str)


@pytest.mark.parametrize("entry", ["Model.run", "rlmesh.run", "Session.run"])
def test_real_rlmesh_run_into_a_root(entry, rlrec_bin, tmp_path):
    root = tmp_path / "root"
    cap = rlrec.Capture(root=root, rlrec=rlrec_bin)
    tee = Tee(cap)
    m = model()
    if entry == "Model.run":
        result = m.run(CameraEnv(), seeds=SEEDS, hooks=tee)
    elif entry == "rlmesh.run":
        result = rlmesh.run(m, CameraEnv(), seeds=SEEDS, hooks=tee)
    else:
        with m.session(CameraEnv()) as session:
            result = session.run(seeds=SEEDS, hooks=tee)
    cap.close()
    assert result.num_episodes == len(SEEDS) and result.total_steps > len(SEEDS)
    (run,) = cap.runs
    assert run.dropped_steps == 0 and len(run.run_nonce) == 16
    check_recording(root, cap.session_id, run, tee.runs[0])
    # The new fields of rlmesh 0.1, as the hooks gave them.
    eps = rlrec.open(root).episodes()
    if "seed" in eps.columns:  # schema version 3
        assert sorted(eps["seed"]) == SEEDS
    run_verify = subprocess.run([rlrec_bin, "verify", str(root)], capture_output=True, text=True)
    assert run_verify.returncode == 0, run_verify.stdout + run_verify.stderr


def test_real_rlmesh_run_through_serve(rlrec_bin, tmp_path):
    root = tmp_path / "root"
    addr = f"127.0.0.1:{free_port()}"
    srv = subprocess.Popen([rlrec_bin, "serve", "--listen", addr, "--out", str(root)], stderr=subprocess.PIPE)
    try:
        cap = rlrec.Capture(addr)  # waits for the server to answer (connect_timeout)
        tee = Tee(cap)
        m = model()
        m.run(CameraEnv(), seeds=SEEDS, hooks=tee)
        with m.session(CameraEnv()) as session:
            session.run(seeds=SEEDS[:2], hooks=tee)
        cap.close()
    finally:
        srv.terminate()
        srv.wait()
    assert len(cap.runs) == 2
    for run, seen in zip(cap.runs, tee.runs, strict=True):
        check_recording(root, cap.session_id, run, seen)


def test_a_slow_destination_drops_steps_and_records_it(rlrec_bin, tmp_path):
    """rlrec ingest does not read until the run's last episode has ended:
    the hooks must not block on it; steps past the queue's bound are
    dropped, counted and recorded as a logs row."""
    root, gate = tmp_path / "root", tmp_path / "gate"
    wrapper = tmp_path / "slow-rlrec"
    wrapper.write_text(f'#!/bin/sh\nwhile [ ! -e {gate} ]; do sleep 0.01; done\nexec {rlrec_bin} "$@"\n')
    wrapper.chmod(0o755)
    # About two steps' events fit; the pipe to the gated process takes 64 KiB more.
    cap = rlrec.Capture(root=root, rlrec=str(wrapper), max_queue_bytes=2048, max_wait=0.0)

    class OpenAtLastEnd(Tee):
        """Opens the gate once the last episode has ended (and, should the
        run fail, at its end), noting the drops the hooks had by then."""

        drops_before_open = None

        def on_episode_end(self, result):
            super().on_episode_end(result)
            if result.index == len(SEEDS) - 1:
                self.drops_before_open = cap.runs[-1].dropped_steps
                gate.touch()

        def on_run_end(self, result):
            gate.touch()
            super().on_run_end(result)

    tee = OpenAtLastEnd(cap)
    env = CameraEnv(horizon=400)
    big = rlmesh.spaces.Box(0, 255, shape=(64, 64, 3), dtype=np.uint8)
    env.observation_space = rlmesh.spaces.Dict(
        {"image": big, "pos": env.observation_space["pos"], "instruction": env.observation_space["instruction"]}
    )

    def obs(self=env):
        return {"image": self.rng.integers(0, 256, (64, 64, 3), dtype=np.uint8), "pos": self.pos.copy(),
                "instruction": f"go {self.t}"}  # fmt: skip

    env._obs = obs
    model().run(env, seeds=SEEDS, hooks=tee)
    cap.close()
    (run,) = cap.runs
    assert tee.drops_before_open, "no step was dropped while the destination read nothing"
    seen = tee.runs[0]
    total = sum(len(v) for v in seen.steps.values())
    r = rlrec.open(root)
    steps = r.steps(columns=["episode_record_id", "step", "reward"])
    assert 0 < steps.num_rows == total - run.dropped_steps
    logs = r.logs()
    dropped = logs[logs["message"].str.contains("rlrec capture dropped")]
    assert len(dropped) == 2, logs["message"].tolist()  # the first drop, and the run's total
    assert f"dropped {run.dropped_steps} step(s)" in dropped["message"].iloc[-1]
