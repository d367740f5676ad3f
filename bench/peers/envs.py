"""The two workloads every recorder in the comparison records, and their
policies: the same episodes, step for step, for every tool.

- ``cartpole``: gymnasium's CartPole-v1 (Box(4,) float32 observation,
  Discrete(2) action), driven by a balancing policy with 30% random
  actions, so that episodes run from a few dozen steps to the 500-step cap.
  Episode ``i`` resets with seed ``seed + i`` and draws its random actions
  from ``numpy.random.default_rng(seed + i)``.
- ``camera``: ``RlrecBench/Camera-v0``, a synthetic env of the shapes of a
  robot camera task: a Dict observation of a 224x224x3 uint8 ``image`` and
  an 8-float32 ``state``, a Box(7,) float32 action, 50 steps an episode
  (then truncated). The image is a smooth scene (a gradient and a moving
  square) with a little sensor noise, so it compresses about as a camera
  frame does, neither like noise nor like a flat colour. No camera env with
  pixels installs here without a display or a physics engine, so the
  shapes are real and the pixels are synthetic.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

CAMERA_ID = "RlrecBench/Camera-v0"
CAMERA_SIDE = 224
CAMERA_STEPS = 50


class CameraEnv(gym.Env):
    """A camera-image env of fixed episode length; see the module doc."""

    metadata = {"render_modes": []}

    def __init__(self, side: int = CAMERA_SIDE, steps: int = CAMERA_STEPS):
        self.side, self.steps = side, steps
        self.observation_space = gym.spaces.Dict(
            {
                "image": gym.spaces.Box(0, 255, (side, side, 3), np.uint8),
                "state": gym.spaces.Box(-10.0, 10.0, (8,), np.float32),
            }
        )
        self.action_space = gym.spaces.Box(-1.0, 1.0, (7,), np.float32)
        yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) / side
        base = np.stack([xx * 180 + 40, yy * 160 + 50, (xx + yy) * 90 + 30], axis=-1)
        self._base = base.astype(np.uint8)
        # Sensor noise: the low 3 bits, from a pool drawn once per reset.
        self._noise = np.zeros((4, side, side, 3), np.uint8)
        self._rng = np.random.default_rng(0)
        self.t = 0
        self.state = np.zeros(8, np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._rng = np.random.default_rng(seed)
        self.t = 0
        self.state = self._rng.uniform(-1, 1, 8).astype(np.float32)
        self._noise = self._rng.integers(0, 8, self._noise.shape, dtype=np.uint8)
        return self._obs(), {}

    def step(self, action):
        self.t += 1
        a = np.asarray(action, np.float32)
        self.state = np.clip(self.state + 0.05 * np.concatenate([a, a[:1]]), -10, 10).astype(np.float32)
        reward = float(-np.abs(self.state[:3]).sum())
        return self._obs(), reward, False, self.t >= self.steps, {}

    def _obs(self):
        s = self.side
        img = self._base.copy()
        cx = int((self.state[0] * 0.25 + 0.5) * s) % s
        cy = int((self.state[1] * 0.25 + 0.5) * s) % s
        img[max(cy - 20, 0) : cy + 20, max(cx - 20, 0) : cx + 20] = (220, 40, 40)
        img ^= self._noise[self.t % len(self._noise)]
        return {"image": img, "state": self.state.copy()}


def register() -> None:
    if CAMERA_ID not in gym.registry:
        gym.register(CAMERA_ID, entry_point="envs:CameraEnv")


def make(name: str) -> gym.Env:
    register()
    if name == "cartpole":
        return gym.make("CartPole-v1")
    if name == "camera":
        return gym.make(CAMERA_ID)
    raise ValueError(f"unknown env {name!r}: cartpole or camera")


class Policy:
    """The actions of episode ``episode_seed``, the same for every tool."""

    def __init__(self, env_name: str, episode_seed: int):
        self.env_name = env_name
        self.rng = np.random.default_rng(episode_seed)

    def __call__(self, obs):
        if self.env_name == "cartpole":
            if self.rng.random() < 0.3:
                return int(self.rng.integers(2))
            return int(obs[2] + 0.5 * obs[3] > 0)
        return self.rng.uniform(-1, 1, 7).astype(np.float32)
