"""A small env and model from rlmesh's own Python API, local and offline,
and hooks that keep what a run showed them, to compare with what was
recorded."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import rlmesh
from rlmesh import spaces as S
from rlmesh.numpy import Model


class CameraEnv:
    """A Dict observation (an 8x6 RGB camera image, a float32 position, a
    Text instruction) and a Discrete(3) action. An episode ends
    (terminated) when the position leaves [-2, 2], or is truncated at
    horizon steps; info carries is_success at the end."""

    def __init__(self, horizon: int = 12) -> None:
        self.observation_space = S.Dict(
            {
                "image": S.Box(0, 255, shape=(8, 6, 3), dtype=np.uint8),
                "pos": S.Box(-10.0, 10.0, shape=(2,), dtype=np.float32),
                "instruction": S.Text(max_length=32),
            }
        )
        self.action_space = S.Discrete(3)
        self.horizon = horizon
        self.rng = np.random.default_rng(0)
        self.t = 0
        self.pos = np.zeros(2, np.float32)

    def reset(self, seed=None, options=None):
        self.rng = np.random.default_rng(seed)
        self.t = 0
        self.pos = self.rng.uniform(-1, 1, 2).astype(np.float32)
        return self._obs(), {}

    def _obs(self):
        return {
            "image": self.rng.integers(0, 256, (8, 6, 3), dtype=np.uint8),
            "pos": self.pos.copy(),
            "instruction": f"go {self.t}",
        }

    def step(self, action):
        self.t += 1
        self.pos = (self.pos + np.float32(int(action) - 1) * np.float32(0.5)).astype(np.float32)
        reward = float(-np.abs(self.pos).sum())
        terminated = bool(np.abs(self.pos).max() > 2)
        truncated = self.t >= self.horizon and not terminated
        info = {"t": self.t}
        if terminated or truncated:
            info["is_success"] = truncated
        return self._obs(), reward, terminated, truncated, info

    def close(self):
        pass


def policy(observation) -> np.int64:
    """Pushes the position back toward 0, a deterministic policy."""
    total = float(observation["pos"].sum())
    return np.int64(0 if total > 0 else 2) if abs(total) > 0.3 else np.int64(1)


def model() -> Model:
    return Model(policy)


@dataclass
class Seen:
    """What one run's hooks were given."""

    episodes: dict[int, dict[str, Any]] = field(default_factory=dict)
    steps: dict[int, list[Any]] = field(default_factory=dict)
    result: Any = None


class Tee(rlmesh.RunHooks):
    """Hands every hook call to inner and keeps what it saw, one Seen per run."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.runs: list[Seen] = []

    def on_run_start(self, context):
        self.runs.append(Seen())
        self.inner.on_run_start(context)

    def on_episode_start(self, *, episode, seed):
        self.runs[-1].episodes[episode] = {"seed": seed}
        self.runs[-1].steps[episode] = []
        self.inner.on_episode_start(episode=episode, seed=seed)

    def on_step(self, event):
        self.runs[-1].steps[event.episode].append(event)
        self.inner.on_step(event)

    def on_episode_end(self, result):
        self.runs[-1].episodes[result.index]["result"] = result
        self.inner.on_episode_end(result)

    def on_run_end(self, result):
        self.runs[-1].result = result
        self.inner.on_run_end(result)
