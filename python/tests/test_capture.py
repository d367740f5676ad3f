"""The capture end to end: a loop that calls the hooks as rlmesh's
Session.run does, recorded through `rlrec ingest -` and through `rlrec
serve`, then read back with the Go side: `rlrec verify` must pass and
`rlrec replay` must give back exactly the observations, actions and rewards
fed in, and the event stream must hold the very leaf bytes.

The rlrec binary is built from this checkout into a temporary directory
(or taken from $RLREC_BIN). $RLREC_PY_ROOT_OUT, when set, names a directory
the ingest test copies its ROOT to, for the DuckDB check in interop/.
"""

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np

from rlrec import END_REASON, Capture, encode_batch
from rlrec import spaces as S
from rlrec._pb import events_pb2
from rlrec._serve import UnauthenticatedError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = None
TMP = None


def setUpModule():
    global BIN, TMP
    TMP = tempfile.mkdtemp(prefix="rlrec-py-")
    BIN = os.environ.get("RLREC_BIN")
    if not BIN:
        BIN = os.path.join(TMP, "rlrec")
        subprocess.run(["go", "build", "-o", BIN, "./cmd/rlrec"], cwd=REPO, check=True)


def tearDownModule():
    shutil.rmtree(TMP, ignore_errors=True)


def rlrec(*args, check=True):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"rlrec {' '.join(args)} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return p


# What rlmesh's Session.run hands its hooks (same field names).


@dataclass(frozen=True)
class StepEvent:
    episode: int
    seed: Any
    step: int
    observation: Any
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    info: Mapping[str, Any]
    predict_ms: float
    step_ms: float
    read: Callable[[object], object]


@dataclass(frozen=True)
class EpisodeResult:
    index: int
    seed: Any
    steps: int
    reward: float
    terminated: bool
    truncated: bool
    success: Any = None
    duration_s: float = 0.0
    predict_ms: float = 0.0
    step_ms: float = 0.0


@dataclass(frozen=True)
class RunResult:
    episodes: tuple = ()


def run_session(hooks, env, policy, *, episodes, seeds=None, step_cap=100_000, after_step=None, session=None):
    """Session.run's loop and hook order; returns what it fed in per episode:
    [(observation, action, reward)] lists."""
    fed = []
    results = []
    try:
        hooks.on_run_start(session if session is not None else SimpleNamespace(_contract=env))
        for i in range(episodes):
            seed = seeds[i] if seeds else None
            obs, info = env.reset(seed=seed)
            t_ep = time.perf_counter()
            hooks.on_episode_start(episode=i, seed=seed)
            steps, total, term, trunc, last_info = 0, 0.0, False, False, info
            fed.append([])
            while not (term or trunc) and steps < step_cap:
                prev = obs
                t0 = time.perf_counter()
                action = policy(prev)
                t1 = time.perf_counter()
                obs, reward, term, trunc, last_info = env.step(action)
                t2 = time.perf_counter()
                # rlmesh 0.1 flags the step cap on the capped step itself
                # (Session.run: "the event says so -- as the native loop's
                # does"), so the step's flags agree with the episode's end.
                if not (term or trunc) and steps + 1 >= step_cap:
                    trunc = True
                fed[-1].append((prev, action, reward))
                hooks.on_step(
                    StepEvent(
                        i,
                        seed,
                        steps,
                        prev,
                        action,
                        reward,
                        term,
                        trunc,
                        last_info,
                        (t1 - t0) * 1000,
                        (t2 - t1) * 1000,
                        lambda item: None,
                    )
                )
                steps += 1
                total += reward
                if after_step is not None:
                    after_step(i, steps)
            if not term and not trunc:
                trunc = True
            res = EpisodeResult(
                i,
                seed,
                steps,
                total,
                term,
                trunc,
                success=bool(last_info["is_success"]) if "is_success" in last_info else None,
                duration_s=time.perf_counter() - t_ep,
            )
            results.append(res)
            hooks.on_episode_end(res)
    finally:
        hooks.on_run_end(RunResult(tuple(results)))
    return fed


# Three small envs with different spaces.


class CartEnv:
    """Box float32 observation, Discrete action."""

    observation_space = S.Box(-4.8, 4.8, (4,), np.float32)
    action_space = S.Discrete(2)

    def __init__(self, horizon=25):
        self.rng = np.random.default_rng(1)
        self.horizon = horizon

    def reset(self, seed=None):
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self.t = 0
        self.x = self.rng.uniform(-0.05, 0.05, 4).astype(np.float32)
        return self.x.copy(), {}

    def step(self, action):
        self.t += 1
        self.x = (self.x + np.float32(0.1) * (int(action) * 2 - 1) + self.rng.normal(0, 0.01, 4)).astype(np.float32)
        term = bool(abs(self.x[0]) > 0.6)
        trunc = self.t >= self.horizon
        return self.x.copy(), 1.0, term, trunc, {"is_success": trunc and not term, "t": self.t}


class PickEnv:
    """Dict observation (declared order not sorted) with an image, a Text
    instruction and a state; Box float32 action."""

    observation_space = S.Dict(
        {
            "state": S.Box(-10, 10, (3,), np.float32),
            "image": S.Box(0, 255, (4, 4, 3), np.uint8),
            "instruction": S.Text(64, min_length=1),
        }
    )
    action_space = S.Box(-1.0, 1.0, (2,), np.float32)
    words = ["pick up the red block", "put the rød cube in the bowl", "stack ☃ on 🧱", "x"]

    def __init__(self):
        self.rng = np.random.default_rng(2)
        self.episodes = 0

    def reset(self, seed=None):
        self.t = 0
        self.episodes += 1
        self.text = self.words[self.episodes % len(self.words)]
        return self.obs(), {}

    def obs(self):
        return {
            "instruction": self.text,
            "image": self.rng.integers(0, 256, (4, 4, 3), dtype=np.uint8),
            "state": self.rng.normal(0, 1, 3).astype(np.float32),
        }

    def step(self, action):
        self.t += 1
        done = self.t >= 6
        return self.obs(), float(np.float32(action).sum()), done, False, {"progress": self.t / 6, "grasped": done}


class GridEnv:
    """Tuple observation of MultiBinary and MultiDiscrete; Discrete action
    with a start and an int32 dtype. Never terminates: the step cap ends it."""

    observation_space = S.Tuple([S.MultiBinary(3), S.MultiDiscrete([3, 4])])
    action_space = S.Discrete(3, start=-1, dtype=np.int32)

    def reset(self, seed=None):
        self.t = 0
        return (np.array([1, 0, 1], dtype=np.int8), np.array([0, 0])), {}

    def step(self, action):
        self.t += 1
        return (np.array([self.t % 2, 1, 0], dtype=np.int8), np.array([self.t % 3, self.t % 4])), -0.5, False, False, {}


def random_policy(space, seed):
    rng = random.Random(seed)
    if isinstance(space, S.Discrete):
        return lambda obs: np.int64(space.start + rng.randrange(space.n))
    return lambda obs: np.array([rng.uniform(-1, 1) for _ in range(space.shape[0])], dtype=np.float32)


# Reading back.


def same_value(spec, got, want, path="obs"):
    kind = spec.WhichOneof("spec")
    if kind == "dict":
        assert set(got) == set(spec.dict.keys), (path, got)
        for k, child in zip(spec.dict.keys, spec.dict.spaces):
            same_value(child, got[k], want[k], f"{path}.{k}")
    elif kind == "tuple":
        assert len(got) == len(spec.tuple.spaces), (path, got)
        for i, child in enumerate(spec.tuple.spaces):
            same_value(child, got[i], want[i], f"{path}.{i}")
    elif kind == "text":
        assert got == want, (path, got, want)
    elif kind == "discrete":
        assert int(got) == int(want), (path, got, want)
    elif kind == "multi_binary":
        assert [int(x) for x in np.ravel(got)] == [int(x != 0) for x in np.ravel(want)], (path, got, want)
    else:
        dt = np.asarray(want).dtype
        assert np.array_equal(np.asarray(got, dtype=dt), np.asarray(want)), (path, got, want)


def read_delimited(data):
    out, off = [], 0
    while off < len(data):
        n, shift = 0, 0
        while True:
            b = data[off]
            off += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        ev = events_pb2.Event()
        ev.ParseFromString(data[off : off + n])
        out.append(ev)
        off += n
    return out


class Readback:
    """What a ROOT holds for one recording, through the rlrec CLI."""

    def __init__(self, root, session_id, env_id, values=True):
        self.root, self.session_id, self.env_id = root, session_id, env_id
        p = rlrec("replay", root, "--session", session_id, "--env", env_id)
        lines = p.stdout.splitlines()
        if not values:  # the decoded values come last; leave large ones unparsed
            lines = [line[: line.index(',"observation":')] + "}" for line in lines]
        self.rows = [json.loads(line) for line in lines]
        info = json.loads(rlrec("inspect", root, "--session", session_id, "--env", env_id, "--json").stdout)
        self.inspect = info
        ev = subprocess.run(
            [BIN, "replay", root, "--session", session_id, "--env", env_id, "--format", "events"],
            capture_output=True,
            check=True,
        )
        self.events = read_delimited(ev.stdout)

    def session_row(self):
        rows = [s for s in self.inspect["sessions"] if s["env_id"] == self.env_id]
        assert len(rows) == 1, self.inspect["sessions"]
        return rows[0]


class CaptureCase(unittest.TestCase):
    def check_recording(self, root, cap, run, fed, env, values=True):
        rb = Readback(root, cap.session_id, run.env_id, values)
        obs_spec, act_spec = run.observation_space, run.action_space
        # Steps: every one fed in, once, in order, with its values.
        by_ep = defaultdict(list)
        for row in rb.rows:
            self.assertEqual(row["session_id"], cap.session_id)
            self.assertEqual(row["env_id"], run.env_id)
            by_ep[row["episode_record_id"]].append(row)
        self.assertEqual(sorted(by_ep), [ep.episode_record_id for ep in run.episodes if ep.steps])
        for ep, steps in zip(run.episodes, fed):
            rows = by_ep[ep.episode_record_id]
            self.assertEqual(len(rows), len(steps), ep.episode_record_id)
            for i, (row, (obs, action, reward)) in enumerate(zip(rows, steps)):
                self.assertEqual(row["episode_id"], ep.episode_id)
                self.assertEqual(row["step"], i)
                self.assertEqual(row["session_step"], i + 1)
                self.assertEqual(row["reward"], reward)
                self.assertEqual(row["is_first"], i == 0)
                self.assertEqual(row["is_last"], i == len(steps) - 1)
                if values:
                    same_value(obs_spec, row["observation"], obs)
                    same_value(act_spec, row["action"], action, "action")
        # The event stream holds the exact leaf bytes that were fed.
        sent_obs = [encode_batch(obs_spec, [o]) for steps in fed for (o, _, _) in steps]
        sent_act = [encode_batch(act_spec, [a]) for steps in fed for (_, a, _) in steps]
        got_obs = [
            list(e.observation_emitted.observation.leaves) for e in rb.events if e.HasField("observation_emitted")
        ]
        got_act = [list(e.action_received.action.leaves) for e in rb.events if e.HasField("action_received")]
        self.assertEqual(got_act, sent_act)
        self.assertEqual(got_obs, sent_obs)
        # The sessions row.
        s = rb.session_row()
        self.assertEqual(s["status"], "ended")
        self.assertEqual(s["reason"], END_REASON)
        self.assertEqual(s["total_steps"], sum(len(x) for x in fed))
        self.assertEqual(s["steps_recorded"], sum(len(x) for x in fed))
        self.assertEqual(s["total_episodes"], len(fed))
        self.assertEqual(s["episodes_completed"], len(fed))
        self.assertEqual(s["problems"], 0, s["problem_summary"])
        self.assertEqual(s["dropped_steps"], 0)
        return rb


class IngestTest(CaptureCase):
    def test_three_envs_into_one_root(self):
        root = os.path.join(TMP, "ingest-root")
        cap = Capture(root=root, rlrec=BIN, env_component_id="env/py", model_component_id="model/py")
        cart, pick, grid = CartEnv(), PickEnv(), GridEnv()
        fed_cart = run_session(cap, cart, random_policy(cart.action_space, 1), episodes=3, seeds=[7, 8, 9])
        fed_pick = run_session(cap, pick, random_policy(pick.action_space, 2), episodes=3)
        fed_grid = run_session(cap, grid, random_policy(grid.action_space, 3), episodes=2, step_cap=5)
        cap.close()
        self.assertEqual(len(cap.runs), 3)
        self.assertEqual(len({r.env_id for r in cap.runs}), 3)
        rlrec("verify", root)
        rb = self.check_recording(root, cap, cap.runs[0], fed_cart, cart)
        self.check_recording(root, cap, cap.runs[1], fed_pick, pick)
        rb_grid = self.check_recording(root, cap, cap.runs[2], fed_grid, grid)

        # Event order of one run (docs/rlmesh-wire.md §5, one env, DISABLED autoreset).
        # The seed of each seeded episode is a debug log line of its own.
        seeds = [e.log.message for e in rb.events if e.HasField("log") and e.log.level == events_pb2.LOG_LEVEL_DEBUG]
        self.assertEqual(
            seeds, [f"episode ep-00000{i + 1} (run episode {i}) reset with seed {7 + i}" for i in range(3)]
        )
        evs = [e for e in rb.events if not (e.HasField("log") and e.log.level == events_pb2.LOG_LEVEL_DEBUG)]
        kinds = [e.WhichOneof("kind") for e in evs]
        self.assertEqual(kinds[:4], ["session_started", "log", "episode_started", "observation_emitted"])
        self.assertRegex(evs[1].log.message, r"^env reset complete in \d+ms \(1 episode\(s\) ready\)$")
        self.assertEqual(kinds[4:6], ["action_received", "step_completed"])
        self.assertEqual(kinds[-2:], ["session_ended", "telemetry_snapshot"])
        # Between episodes: EpisodeCompleted, EpisodeStarted (auto reset),
        # then the new episode's reset observation; no terminal observation.
        i = kinds.index("episode_completed")
        self.assertEqual(
            kinds[i - 2 : i + 3],
            ["action_received", "step_completed", "episode_completed", "episode_started", "observation_emitted"],
        )
        self.assertTrue(evs[i + 1].episode_started.started_from_auto_reset)
        self.assertTrue(evs[i + 2].observation_emitted.is_reset)
        self.assertEqual(evs[i + 2].observation_emitted.step, 0)
        tel = evs[-1].telemetry_snapshot
        self.assertEqual(tel.horizon, events_pb2.TELEMETRY_HORIZON_SESSION)
        self.assertEqual(
            [(r.op, r.component, r.metric) for r in tel.rows],
            [
                ("env.reset", "env", "rpc.total"),
                ("env.step", "env", "rpc.total"),
                ("model.predict", "model", "rpc.total"),
            ],
        )
        self.assertEqual(tel.rows[1].count, sum(len(x) for x in fed_cart))
        first_obs = [e for e in rb.events if e.HasField("observation_emitted")][0].observation_emitted
        self.assertTrue(first_obs.is_reset)
        self.assertEqual((first_obs.step, first_obs.num_envs), (0, 1))
        # Episodes: record ids per run from 1, auto reset after the first,
        # final_info from the last step's info (success from is_success).
        row = rb.session_row()
        self.assertEqual(row["env_component_id"], "env/py")
        eps = json.loads(
            rlrec(
                "inspect",
                root,
                "--session",
                cap.session_id,
                "--env",
                cap.runs[0].env_id,
                "--episode",
                "ep-000002",
                "--json",
            ).stdout
        )
        text = json.dumps(eps)
        for want in ('"ep-000002"', '"started_from_auto_reset": true', '"status": "completed"'):
            self.assertIn(want, text)
        grid_ends = [e.episode_completed for e in rb_grid.events if e.HasField("episode_completed")]
        self.assertEqual([(c.step_count, c.truncated, c.terminated) for c in grid_ends], [(5, True, False)] * 2)
        self.assertEqual([c.episode_record_id for c in grid_ends], ["ep-000001", "ep-000002"])

        out = os.environ.get("RLREC_PY_ROOT_OUT")
        if out:
            shutil.rmtree(out, ignore_errors=True)
            shutil.copytree(root, out)
            with open(out.rstrip(os.sep) + ".json", "w") as f:
                json.dump(
                    {
                        "session_id": cap.session_id,
                        "env_ids": [r.env_id for r in cap.runs],
                        "steps": [sum(len(x) for x in f_) for f_ in (fed_cart, fed_pick, fed_grid)],
                        "instructions": sorted({o["instruction"] for ep in fed_pick for (o, _, _) in ep}),
                    },
                    f,
                )

    def test_a_run_that_raises_is_recorded_failed(self):
        root = os.path.join(TMP, "failed-root")
        cap = Capture(root=root, rlrec=BIN)
        env = CartEnv(horizon=1000)

        def boom(ep, steps):
            if steps == 4:
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            run_session(cap, env, random_policy(env.action_space, 1), episodes=2, after_step=boom)
        cap.close()
        rlrec("verify", root)
        rb = Readback(root, cap.session_id, cap.runs[0].env_id)
        s = rb.session_row()
        self.assertEqual(s["status"], "failed")
        self.assertIn("KeyboardInterrupt", s["reason"])
        self.assertEqual(s["episodes_incomplete"], 1)
        self.assertEqual(len(rb.rows), 4)
        kinds = [e.WhichOneof("kind") for e in rb.events]
        self.assertEqual(kinds[-2:], ["telemetry_snapshot", "session_failed"])

    def test_a_value_that_does_not_fit_raises(self):
        root = os.path.join(TMP, "bad-root")
        cap = Capture(root=root, rlrec=BIN, observation_space=S.Box(shape=(3,)), action_space=S.Discrete(2))
        with self.assertRaises(ValueError):
            run_session(cap, CartEnv(), lambda o: 0, episodes=1)
        cap.close()
        self.assertEqual(json.loads(rlrec("inspect", root, "--json").stdout)["sessions"][0]["status"], "failed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, root, token_file=None, tls=None):
        self.root, self.port, self.token_file, self.tls = root, free_port(), token_file, tls
        self.addr = f"127.0.0.1:{self.port}"
        self.start()

    def start(self):
        argv = [BIN, "serve", "--out", self.root, "--listen", self.addr, "--metrics-listen", ""]
        if self.token_file:
            argv += ["--token-file", self.token_file]
        if self.tls:
            argv += ["--tls-cert", self.tls[0], "--tls-key", self.tls[1]]
        self.log = open(os.path.join(TMP, f"serve-{self.port}.log"), "ab")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=self.log)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"rlrec serve exited {self.proc.returncode}; see {self.log.name}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("rlrec serve did not listen")

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)
        self.log.close()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self._wait()
        self.log.close()

    def _wait(self):
        rc = self.proc.wait(60)
        if rc != 0:
            raise AssertionError(f"rlrec serve exited {rc}; see {self.log.name}")


class ServeTest(CaptureCase):
    def test_record_through_serve(self):
        root = os.path.join(TMP, "serve-root")
        srv = Server(root)
        try:
            cap = Capture(srv.addr)
            cart, pick = CartEnv(), PickEnv()
            fed_cart = run_session(cap, cart, random_policy(cart.action_space, 4), episodes=2)
            fed_pick = run_session(cap, pick, random_policy(pick.action_space, 5), episodes=2)
            self.assertEqual(cap._client.unacked_bytes, 0)  # on_run_end waited for the acks
            cap.close()
        finally:
            srv.stop()
        rlrec("verify", root)
        self.check_recording(root, cap, cap.runs[0], fed_cart, cart)
        self.check_recording(root, cap, cap.runs[1], fed_pick, pick)

    def test_server_killed_and_restarted_mid_run_loses_and_duplicates_nothing(self):
        root = os.path.join(TMP, "kill-root")
        srv = Server(root)
        env = PickEnv()
        try:
            cap = Capture(srv.addr)
            kills = {(0, 3), (1, 2), (2, 5)}

            def maybe_kill(ep, steps):
                if (ep, steps) in kills:
                    # The kill catches events in flight: in the capture's
                    # queue or sent and not acknowledged.
                    unacked = cap._client.queued - cap._client.acked + cap._queue.pending()
                    self.assertGreater(unacked, 0)
                    srv.kill()
                    time.sleep(0.2)  # the client notices and retries meanwhile
                    srv.start()
                    cap.flush()  # resent to the new server and acknowledged

            fed = run_session(cap, env, random_policy(env.action_space, 6), episodes=3, after_step=maybe_kill)
            self.assertGreaterEqual(cap._client.streams, 4)
            cap.close()
        finally:
            srv.stop()
        rlrec("verify", root)
        self.check_recording(root, cap, cap.runs[0], fed, env)

    def test_hooks_wait_while_the_unacknowledged_events_are_full(self):
        root = os.path.join(TMP, "full-root")
        srv = Server(root)

        class CameraEnv:
            observation_space = S.Box(0, 255, (224, 224, 3), np.uint8)  # 150 KB a step
            action_space = S.Discrete(4)

            def reset(self, seed=None):
                self.t = 0
                return np.full((224, 224, 3), 0, np.uint8), {}

            def step(self, action):
                self.t += 1
                return np.full((224, 224, 3), self.t % 256, np.uint8), 0.0, self.t >= 30, False, {}

        env = CameraEnv()
        try:
            # max_wait=None: the hooks wait for room rather than drop.
            cap = Capture(srv.addr, max_unacked_bytes=1 << 20, max_queue_bytes=1, max_wait=None)
            srv.kill()
            down = time.monotonic()
            waited = []

            def restart_later():
                time.sleep(1.0)
                srv.start()

            import threading

            t = threading.Thread(target=restart_later)
            t.start()

            def note(ep, steps):
                waited.append((steps, time.monotonic() - down, cap._client.unacked_bytes))

            fed = run_session(cap, env, random_policy(env.action_space, 7), episodes=1, after_step=note)
            t.join()
            # With the server down, the 1 MiB bound held the hooks back: no
            # more than 8 steps' observations were queued (7 unacknowledged,
            # one in the capture's queue) before it came back.
            early = [s for s, at, _ in waited if at < 0.9]
            self.assertLessEqual(max(early, default=0), 8)
            self.assertLessEqual(max(b for _, _, b in waited), (1 << 20) + 160_000)
            cap.close()
        finally:
            srv.stop()
        rlrec("verify", root)
        self.check_recording(root, cap, cap.runs[0], fed, env, values=False)  # the event bytes are compared

    def test_token(self):
        root = os.path.join(TMP, "token-root")
        tok = os.path.join(TMP, "token")
        with open(tok, "w") as f:
            f.write("s3cret\n")
        srv = Server(root, token_file=tok)
        try:
            env = CartEnv()
            # Its refused events stay in its spool for a Capture with the
            # right token: a spool of its own keeps them out of this ROOT.
            bad = Capture(srv.addr, token="wrong", spool=os.path.join(TMP, "token-spool"))
            with self.assertRaises(Exception) as cm:
                run_session(bad, env, random_policy(env.action_space, 1), episodes=1)
            self.assertIn("refused the token", str(cm.exception))
            with self.assertRaises(UnauthenticatedError):
                bad.close()
            good = Capture(srv.addr, token_file=tok)
            fed = run_session(good, env, random_policy(env.action_space, 1), episodes=1)
            good.close()
        finally:
            srv.stop()
        rlrec("verify", root)
        self.check_recording(root, good, good.runs[0], fed, env)
        sessions = json.loads(rlrec("inspect", root, "--json").stdout)["sessions"]
        self.assertEqual([s["session_id"] for s in sessions], [good.session_id])

    def test_tls(self):
        # A self-signed certificate for 127.0.0.1 (its own CA), made with
        # the generator that ships with Go.
        d = os.path.join(TMP, "tls")
        os.makedirs(d)
        gen = os.path.join(
            subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip(),
            "src",
            "crypto",
            "tls",
            "generate_cert.go",
        )
        subprocess.run(
            ["go", "run", gen, "--host", "127.0.0.1,localhost", "--ca", "--ecdsa-curve", "P256"],
            cwd=d,
            check=True,
            capture_output=True,
        )
        cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        root = os.path.join(TMP, "tls-root")
        tok = os.path.join(TMP, "tls-token")
        with open(tok, "w") as f:
            f.write("s3cret\n")
        srv = Server(root, token_file=tok, tls=(cert, key))
        try:
            from rlrec._serve import IngestClient

            # Plaintext gets no connection from a TLS server.
            with self.assertRaises(ConnectionError):
                IngestClient(srv.addr, token="s3cret", connect_timeout=2)
            env = CartEnv()
            cap = Capture(srv.addr, token_file=tok, tls_ca=cert)
            fed = run_session(cap, env, random_policy(env.action_space, 2), episodes=2)
            cap.close()
        finally:
            srv.stop()
        rlrec("verify", root)
        self.check_recording(root, cap, cap.runs[0], fed, env)
        sessions = json.loads(rlrec("inspect", root, "--json").stdout)["sessions"]
        self.assertEqual([s["session_id"] for s in sessions], [cap.session_id])


if __name__ == "__main__":
    unittest.main()
