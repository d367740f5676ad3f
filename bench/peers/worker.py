"""One recording, or one read, by one tool: the child process run.py starts
(in the tool's own virtual environment) and times, measures and kills.

    worker.py record --tool TOOL --env ENV --episodes N --out DIR [--seed S] [--addr HOST:PORT]
    worker.py read   --tool TOOL --env ENV --out DIR

``record`` plays episodes ``seed .. seed+N-1`` of ENV (envs.py) with the
same policy for every tool, recording them with TOOL, and prints to
standard output, flushed, ``start`` when the recorder is set up and the
first reset comes next, one line ``episode K`` once the tool has
returned from the call that ends episode K (the point a user's program
moves on), then one JSON line ``result {...}`` with:

- ``steps``, ``episodes``;
- ``loop_s``: from the first reset to the return of the last episode's
  end call (rlrec ``on_episode_end``, LeRobot ``save_episode``, Minari's
  and EnvLogger's last ``step``); the env's own time is in it, so run.py
  subtracts the ``none`` tool's loop (the env alone) to get the added time;
- ``readable_s``: from there until the data is readable by the tool's own
  reader: the closing call (rlrec ``on_run_end``, which waits until
  ``rlrec ingest`` has exited or ``rlrec serve`` acknowledged everything,
  then for ``serve`` until ``rlrec inspect`` shows every episode in
  Parquet; Minari ``create_dataset``; LeRobot ``finalize``; EnvLogger
  ``close``);
- ``maxrss_kb``: this process's peak RSS; ``children_maxrss_kb``: that of
  ``rlrec ingest`` (rlrec-ingest only: another tool's children, such as
  a fork, are not its recorder).

``read`` loads DIR with the tool's own reader and prints ``read {...}``
with the number of complete episodes it loads and their step counts.

Tools: ``none`` (the env alone), ``rlrec-ingest`` and ``rlrec-serve``
(rlrec's Python capture into ``rlrec ingest -`` or to a running ``rlrec
serve`` at --addr; ``rlrec-serve-flush`` also calls ``Capture.flush()``
after each episode, so that an episode is durable on the server before the
run goes on), ``minari`` (DataCollector + create_dataset, its
defaults: HDF5, images JPEG-encoded), ``minari-raw`` (the same with
``jpeg_encoding=False``, lossless like the others), ``lerobot`` and
``lerobot-video`` (LeRobotDataset.create, add_frame, save_episode,
finalize; images as PNG, or encoded to MP4 at save_episode), ``envlogger``
(EnvLogger around a dm_env adapter of the env, Riegeli files).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import envs  # noqa: E402

RLREC = os.environ.get("RLREC_BIN", "rlrec")
FPS = 30


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class StepEvent:
    """What rlmesh's Session.run hands on_step (the fields the capture reads)."""

    __slots__ = ("observation", "action", "reward", "terminated", "truncated", "info", "predict_ms", "step_ms")

    def __init__(self, observation, action, reward, terminated, truncated, info, predict_ms, step_ms):
        self.observation, self.action, self.reward = observation, action, reward
        self.terminated, self.truncated, self.info = terminated, truncated, info
        self.predict_ms, self.step_ms = predict_ms, step_ms


class EpisodeResult:
    __slots__ = ("index", "seed", "steps", "reward", "terminated", "truncated", "duration_s")

    def __init__(self, index, seed, steps, reward, terminated, truncated, duration_s):
        self.index, self.seed, self.steps, self.reward = index, seed, steps, reward
        self.terminated, self.truncated, self.duration_s = terminated, truncated, duration_s


# Each recorder: start(env) -> gym env to step, on_reset, on_step, on_end, close.


class NoRecorder:
    def __init__(self, a):
        pass

    def wrap(self, env):
        return env

    def on_reset(self, i, seed, obs):
        pass

    def on_step(self, obs, action, reward, term, trunc, info, step_ms):
        pass

    def on_end(self, i, seed, steps, total, term, trunc, dur):
        pass

    def close(self):
        pass


class RlrecRecorder(NoRecorder):
    """rlrec's Python capture, driven in rlmesh Session.run's hook order."""

    def __init__(self, a):
        from rlrec import Capture

        self.a = a
        self.Capture = Capture

    def wrap(self, env):
        # max_wait=None: the hooks wait for room in the capture's queue
        # rather than drop steps, so every tool records the same data.
        kw = dict(
            observation_space=env.observation_space,
            action_space=env.action_space,
            env_component_id=f"env/{self.a.env}",
            model_component_id="model/bench-policy",
            max_wait=None,
        )
        if self.a.tool.startswith("rlrec-serve"):
            self.cap = self.Capture(self.a.addr, spool=spool_dir(self.a.out), **kw)
        else:
            self.cap = self.Capture(root=self.a.out, rlrec=RLREC, **kw)
        self.cap.on_run_start(None)
        self.results = []
        return env

    def on_reset(self, i, seed, obs):
        self.cap.on_episode_start(episode=i, seed=seed)

    def on_step(self, obs, action, reward, term, trunc, info, step_ms):
        self.cap.on_step(StepEvent(obs, action, reward, term, trunc, info, 0.0, step_ms))

    def on_end(self, i, seed, steps, total, term, trunc, dur):
        self.cap.on_episode_end(EpisodeResult(i, seed, steps, total, term, trunc, dur))
        if self.a.tool == "rlrec-serve-flush":
            self.cap.flush()  # the episode is durable on the server before the run goes on

    def close(self):
        self.cap.on_run_end(None)
        run = self.cap.runs[-1]
        self.cap.close()
        if self.a.tool.startswith("rlrec-serve"):
            # Acknowledged means durable in the server's log; readable means
            # in Parquet, which the server writes right after.
            deadline = time.monotonic() + 120
            while rlrec_complete(self.a.out, run.session_id) < len(run.episodes):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"rlrec serve did not publish the episodes of {run.session_id} in 120 s")
                time.sleep(0.005)


def rlrec_inspect(root: str) -> dict:
    p = subprocess.run([RLREC, "inspect", root, "--json"], capture_output=True, text=True)
    if p.returncode != 0 and not p.stdout.strip():
        raise RuntimeError(f"rlrec inspect {root} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def rlrec_complete(root: str, session_id: str | None = None) -> int:
    if not os.path.isdir(os.path.join(root, "episodes")):
        return 0
    d = rlrec_inspect(root)
    return sum(
        s.get("episodes_completed", 0)
        for s in d.get("sessions", [])
        if session_id is None or s.get("session_id") == session_id
    )


class MinariRecorder(NoRecorder):
    def __init__(self, a):
        os.environ["MINARI_DATASETS_PATH"] = a.out
        import jax.tree_util  # noqa: F401  (the collector imports it at its first step)
        from minari import DataCollector

        self.a = a
        self.DataCollector = DataCollector

    def wrap(self, env):
        self.env = self.DataCollector(env, record_infos=False, jpeg_encoding=self.a.tool == "minari")
        return self.env

    def close(self):
        self.env.create_dataset(dataset_id=f"bench/{self.a.env}-v0", algorithm_name="bench-policy")


def lerobot_features(env_name: str, video: bool) -> dict:
    if env_name == "cartpole":
        return {
            "observation.state": {"dtype": "float32", "shape": (4,), "names": ["x", "x_dot", "theta", "theta_dot"]},
            "action": {"dtype": "int64", "shape": (1,), "names": ["push"]},
            "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
            "next.done": {"dtype": "bool", "shape": (1,), "names": None},
        }
    side = envs.CAMERA_SIDE
    return {
        "observation.images.image": {
            "dtype": "video" if video else "image",
            "shape": (side, side, 3),
            "names": ["height", "width", "channels"],
        },
        "observation.state": {"dtype": "float32", "shape": (8,), "names": None},
        "action": {"dtype": "float32", "shape": (7,), "names": None},
        "next.reward": {"dtype": "float32", "shape": (1,), "names": None},
        "next.done": {"dtype": "bool", "shape": (1,), "names": None},
    }


class LeRobotRecorder(NoRecorder):
    """LeRobot's dataset writer as lerobot-record drives it: create, then
    add_frame per step and save_episode per episode, finalize at the end;
    camera images go through its image writer with 4 threads, as
    lerobot-record's default of 4 threads per camera."""

    def __init__(self, a):
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        self.a = a
        video = a.tool == "lerobot-video"
        kw = {}
        if a.env == "camera":
            kw["image_writer_threads"] = 4
        self.ds = LeRobotDataset.create(
            repo_id=f"bench/{a.env}",
            fps=FPS,
            root=os.path.join(a.out, "dataset"),
            features=lerobot_features(a.env, video),
            use_videos=video,
            **kw,
        )

    def on_step(self, obs, action, reward, term, trunc, info, step_ms):
        if self.a.env == "cartpole":
            frame = {"observation.state": np.asarray(obs, np.float32), "action": np.array([action], np.int64)}
        else:
            frame = {
                "observation.images.image": obs["image"],
                "observation.state": obs["state"],
                "action": np.asarray(action, np.float32),
            }
        frame["next.reward"] = np.array([reward], np.float32)
        frame["next.done"] = np.array([term or trunc], bool)
        frame["task"] = f"bench {self.a.env}"
        self.ds.add_frame(frame)

    def on_end(self, i, seed, steps, total, term, trunc, dur):
        self.ds.save_episode()

    def close(self):
        self.ds.finalize()


class DmEnv:
    """gymnasium env as a dm_env.Environment, what EnvLogger wraps."""

    def __init__(self, env, env_name):
        import dm_env
        from dm_env import specs

        self.dm_env, self.env, self.env_name = dm_env, env, env_name
        self.seed = None
        if env_name == "cartpole":
            self._obs_spec = specs.Array((4,), np.float32, "observation")
            self._act_spec = specs.DiscreteArray(2, name="action")
        else:
            side = envs.CAMERA_SIDE
            self._obs_spec = {
                "image": specs.Array((side, side, 3), np.uint8, "image"),
                "state": specs.Array((8,), np.float32, "state"),
            }
            self._act_spec = specs.BoundedArray((7,), np.float32, -1.0, 1.0, "action")

    def reset(self):
        obs, _ = self.env.reset(seed=self.seed)
        return self.dm_env.restart(obs)

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        if term:
            return self.dm_env.termination(np.float32(r), obs)
        if trunc:
            return self.dm_env.truncation(np.float32(r), obs)
        return self.dm_env.transition(np.float32(r), obs)

    def observation_spec(self):
        return self._obs_spec

    def action_spec(self):
        return self._act_spec

    def reward_spec(self):
        from dm_env import specs

        return specs.Array((), np.float32, "reward")

    def discount_spec(self):
        from dm_env import specs

        return specs.BoundedArray((), np.float64, 0.0, 1.0, "discount")

    def close(self):
        self.env.close()


def run_envlogger(a, env, say_episode) -> tuple[int, float, float]:
    """EnvLogger's loop is dm_env's: reset/step on the logger."""
    import envlogger

    dm = DmEnv(env, a.env)
    steps = 0
    logger = envlogger.EnvLogger(dm, data_directory=a.out)
    say("start")
    t0 = time.perf_counter()
    for i in range(a.episodes):
        seed = a.seed + i
        dm.seed = seed
        policy = envs.Policy(a.env, seed)
        ts = logger.reset()
        while True:
            ts = logger.step(policy(ts.observation))
            steps += 1
            if ts.last():
                break
        say_episode(i + 1)
    t1 = time.perf_counter()
    logger.close()
    t2 = time.perf_counter()
    return steps, t1 - t0, t2 - t1


RECORDERS = {
    "none": NoRecorder,
    "rlrec-ingest": RlrecRecorder,
    "rlrec-serve": RlrecRecorder,
    "rlrec-serve-flush": RlrecRecorder,
    "minari": MinariRecorder,
    "minari-raw": MinariRecorder,
    "lerobot": LeRobotRecorder,
    "lerobot-video": LeRobotRecorder,
}


def record(a) -> None:
    os.makedirs(a.out, exist_ok=True)
    env = envs.make(a.env)
    if a.tool == "envlogger":
        steps, loop_s, readable_s = run_envlogger(a, env, lambda k: say(f"episode {k}"))
    else:
        rec = RECORDERS[a.tool](a)
        genv = rec.wrap(env)
        steps = 0
        say("start")
        t0 = time.perf_counter()
        for i in range(a.episodes):
            seed = a.seed + i
            policy = envs.Policy(a.env, seed)
            obs, _ = genv.reset(seed=seed)
            t_ep = time.perf_counter()
            rec.on_reset(i, seed, obs)
            n, total = 0, 0.0
            while True:
                action = policy(obs)
                ts = time.perf_counter()
                nxt, reward, term, trunc, info = genv.step(action)
                step_ms = (time.perf_counter() - ts) * 1000
                rec.on_step(obs, action, reward, term, trunc, info, step_ms)
                obs = nxt
                n += 1
                total += reward
                if term or trunc:
                    break
            steps += n
            rec.on_end(i, seed, n, total, term, trunc, time.perf_counter() - t_ep)
            say(f"episode {i + 1}")
        t1 = time.perf_counter()
        rec.close()
        t2 = time.perf_counter()
        loop_s, readable_s = t1 - t0, t2 - t1
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if a.tool == "rlrec-ingest" else 0
    say(
        "result "
        + json.dumps(
            {
                "steps": steps,
                "episodes": a.episodes,
                "loop_s": loop_s,
                "readable_s": readable_s,
                "maxrss_kb": own,
                "children_maxrss_kb": kids,
            }
        )
    )


# Readers: complete episodes each tool's own reader loads from DIR.


def spool_dir(out: str) -> str:
    """The capture's spool for a recording into out (beside it, so that its
    files are not counted as the recording's)."""
    return out.rstrip("/") + ".spool"


def resend(a) -> dict:
    """A Capture started on a killed run's spool: it resends what the
    server had not acknowledged, and returns once it is acknowledged."""
    from rlrec import Capture

    t = time.monotonic()
    cap = Capture(a.addr, spool=spool_dir(a.out))
    cap.close()
    r = cap.recovered
    return {"segments": r.segments, "events": r.events, "torn_bytes": r.torn_bytes, "s": round(time.monotonic() - t, 3)}


def read(a) -> dict:
    if not os.path.isdir(a.out) or not os.listdir(a.out):
        return {"episodes": 0, "error": "nothing on disk"}
    if a.tool.startswith("rlrec"):
        d = rlrec_inspect(a.out)
        if d.get("needs_recovery"):
            p = subprocess.run([RLREC, "recover", a.out], capture_output=True, text=True)
            if p.returncode != 0:
                return {"episodes": 0, "error": f"rlrec recover: {p.stderr.strip()[-300:]}"}
            d = rlrec_inspect(a.out)
        lengths = []
        for s in d.get("sessions", []):
            lengths += [s.get("episodes_completed", 0)]
        return {"episodes": sum(lengths)}
    if a.tool.startswith("minari"):
        os.environ["MINARI_DATASETS_PATH"] = a.out
        import minari

        ds = minari.load_dataset(f"bench/{a.env}-v0")
        lengths = [len(ep.rewards) for ep in ds.iterate_episodes()]
        return {"episodes": len(lengths), "lengths": lengths}
    if a.tool.startswith("lerobot"):
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        ds = LeRobotDataset(f"bench/{a.env}", root=os.path.join(a.out, "dataset"))
        counts: dict[int, int] = {}
        for i in range(len(ds)):
            item = ds[i]
            e = int(item["episode_index"])
            counts[e] = counts.get(e, 0) + 1
        return {"episodes": ds.meta.total_episodes, "frames": len(ds), "lengths": [counts[k] for k in sorted(counts)]}
    if a.tool == "envlogger":
        import envlogger

        with envlogger.Reader(a.out) as r:
            lengths = [len(ep) - 1 for ep in r.episodes]  # the first timestep is the reset
        return {"episodes": len(lengths), "lengths": lengths}
    raise ValueError(a.tool)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["record", "read", "resend"])
    ap.add_argument("--tool", required=True, choices=sorted([*RECORDERS, "envlogger"]))
    ap.add_argument("--env", required=True, choices=["cartpole", "camera"])
    ap.add_argument("--episodes", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--out", required=True)
    ap.add_argument("--addr", default="127.0.0.1:7465")
    a = ap.parse_args()
    a.out = os.path.abspath(a.out)
    if a.mode == "record":
        record(a)
    elif a.mode == "resend":
        say("resend " + json.dumps(resend(a)))
    else:
        try:
            r = read(a)
        except Exception as exc:  # the reader's own failure is the result
            r = {"episodes": 0, "error": f"{type(exc).__name__}: {str(exc)[:300]}"}
        say("read " + json.dumps(r))


if __name__ == "__main__":
    main()
