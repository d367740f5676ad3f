"""The child of test_spool_kill9: a real rlmesh 0.1 run (Model.run, the
native loop) with a Capture toward ``rlrec serve`` at argv[1], spooling in
argv[2]. It writes ``ready`` once the Capture is connected, waits for a
line on standard input, runs, and after each hook returned writes one
line to standard output (unbuffered, one write(2)), so that the lines the
parent read before killing it name exactly the hooks that returned:

    episode RECORD_ID
    step RECORD_ID STEP REWARD_HEX STEPS_DROPPED_SO_FAR  (STEP: rlmesh's, from 0)
    end RECORD_ID STEPS
"""

from __future__ import annotations

import os
import sys

import rlmesh
from rlmesh_envs import CameraEnv, model

import rlrec


def say(line: str) -> None:
    os.write(1, (line + "\n").encode())


class Reporter(rlmesh.RunHooks):
    def __init__(self, cap: rlrec.Capture) -> None:
        self.cap = cap

    def on_run_start(self, context):
        self.cap.on_run_start(context)
        run = self.cap.runs[-1]
        say(f"run {run.session_id} {run.env_id}")

    def on_episode_start(self, *, episode, seed):
        self.cap.on_episode_start(episode=episode, seed=seed)
        say(f"episode {self.cap.runs[-1].episodes[-1].episode_record_id}")

    def on_step(self, event):
        self.cap.on_step(event)
        ep = self.cap.runs[-1].episodes[-1]
        dropped = self.cap.runs[-1].dropped_steps
        say(f"step {ep.episode_record_id} {event.step} {float(event.reward).hex()} {dropped}")

    def on_episode_end(self, result):
        self.cap.on_episode_end(result)
        ep = self.cap.runs[-1].episodes[-1]
        say(f"end {ep.episode_record_id} {ep.steps}")

    def on_run_end(self, result):
        self.cap.on_run_end(result)


def main() -> None:
    addr, spool = sys.argv[1], sys.argv[2]
    cap = rlrec.Capture(addr, spool=spool, flush_timeout=None)
    say("ready")
    sys.stdin.readline()
    model().run(CameraEnv(horizon=40), seeds=list(range(10_000)), hooks=Reporter(cap))


if __name__ == "__main__":
    main()
