"""The capture's events without a destination: what it sends for rlmesh's
hook calls (reset observations, durations, concurrent runs)."""

import threading
import unittest
from types import SimpleNamespace

import numpy as np

import rlrec.capture as capture_mod
from rlrec import Capture
from rlrec import spaces as S
from rlrec._pb import events_pb2


class Sink:
    """Stands in for `rlrec ingest -`: keeps the events."""

    instances = []

    def __init__(self, root, rlrec=None, layout=None):
        self.events, self.running = [], True
        Sink.instances.append(self)

    def send(self, ev):
        ev2 = events_pb2.Event()
        ev2.CopyFrom(ev)
        self.events.append(ev2)

    def flush(self):
        pass

    def finish(self):
        self.running = False


class FakeSession:
    """rlmesh's Session as Session.run uses it: reset() returns (obs, info)."""

    def __init__(self):
        self.observation_space, self.action_space = S.Box(-1.0, 1.0, (2,), np.float32), S.Discrete(2)
        self.resets = 0

    def reset(self, *, seed=None):
        self.resets += 1
        return np.full(2, self.resets / 10, np.float32), {}


def result(steps, duration_s):
    return SimpleNamespace(
        steps=steps, reward=float(steps), terminated=steps > 0, truncated=steps == 0, duration_s=duration_s
    )


def step(obs, action=0):
    return SimpleNamespace(observation=obs, action=action, reward=1.0, info={}, predict_ms=1.0, step_ms=1.0)


class CaptureEvents(unittest.TestCase):
    def setUp(self):
        self._orig = capture_mod.IngestProcess
        capture_mod.IngestProcess = Sink
        Sink.instances = []

    def tearDown(self):
        capture_mod.IngestProcess = self._orig

    def run_loop(self, cap, session, episodes):
        """Session.run's loop: reset, on_episode_start, steps, on_episode_end."""
        cap.on_run_start(session)
        for i, (n, dur) in enumerate(episodes):
            obs, _ = session.reset(seed=None)
            cap.on_episode_start(episode=i, seed=None)
            for _ in range(n):
                cap.on_step(step(obs))
                obs = obs + 1
            cap.on_episode_end(result(n, dur))
        cap.on_run_end(None)
        return Sink.instances[-1].events

    def test_a_zero_step_episode_records_its_reset_observation(self):
        cap = Capture(root="unused")
        session = FakeSession()
        evs = self.run_loop(cap, session, [(0, 0.001), (2, 0.002)])
        kinds = [e.WhichOneof("kind") for e in evs if e.WhichOneof("kind") != "log"]
        self.assertEqual(
            kinds[:5],
            ["session_started", "episode_started", "observation_emitted", "episode_completed", "episode_started"],
        )
        obs = [e.observation_emitted for e in evs if e.HasField("observation_emitted")]
        # One reset observation per episode, then the second one's step.
        self.assertEqual(
            [(o.episode_record_id, o.step, o.is_reset) for o in obs],
            [("ep-000001", 0, True), ("ep-000002", 0, True), ("ep-000002", 1, False)],
        )
        self.assertEqual(obs[0].observation.leaves[0], np.full(2, 0.1, np.float32).tobytes())
        self.assertEqual(obs[1].observation.leaves[0], np.full(2, 0.2, np.float32).tobytes())
        # The session's reset is its own again after the run.
        self.assertNotIn("reset", vars(session))

    def test_duration_is_floored(self):
        cap = Capture(root="unused")
        evs = self.run_loop(cap, FakeSession(), [(1, 0.0029999), (1, 0.0071)])
        self.assertEqual([e.episode_completed.duration_ms for e in evs if e.HasField("episode_completed")], [2, 7])

    def test_every_event_carries_the_time_of_its_hook_call(self):
        cap = Capture(root="unused")
        evs = self.run_loop(cap, FakeSession(), [(2, 0.001)])
        times = [e.time_unix_nano for e in evs]
        self.assertTrue(all(t > 0 for t in times))
        self.assertEqual(times, sorted(times))

    def test_concurrent_runs_are_refused(self):
        cap = Capture(root="unused")
        session = FakeSession()
        cap.on_run_start(session)
        errors = []

        def other():
            try:
                cap.on_run_start(FakeSession())
            except RuntimeError as exc:
                errors.append(str(exc))
            finally:
                cap.on_run_end(None)  # Session.run's finally: leaves the first run alone

        t = threading.Thread(target=other)
        t.start()
        t.join()
        self.assertEqual(len(errors), 1)
        self.assertIn("one Capture records one run at a time", errors[0])
        # The first run goes on and ends normally.
        obs, _ = session.reset(seed=None)
        cap.on_episode_start(episode=0, seed=None)
        cap.on_step(step(obs))
        cap.on_episode_end(result(1, 0.001))
        cap.on_run_end(None)
        self.assertEqual(len(cap.runs), 1)
        kinds = [e.WhichOneof("kind") for e in Sink.instances[0].events]
        self.assertEqual(kinds[-2:], ["session_ended", "telemetry_snapshot"])


if __name__ == "__main__":
    unittest.main()
