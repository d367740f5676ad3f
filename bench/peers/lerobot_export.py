"""LeRobot loads what ``rlrec export --format lerobot`` writes: every frame,
with the shapes its info.json declares, with images as PNG and with
``--video`` (MP4, decoded by LeRobot's own video backend).

    python3 bench/peers/run.py --lerobot-export      # makes the LeRobot venv, then runs this in it
    <lerobot venv>/bin/python bench/peers/lerobot_export.py [--rlrec BIN]

A ROOT from ``rlrec demo`` (its pick-place recordings carry 64x64x3 camera
images, a Text instruction, a state and an action); each pick-place
recording and each cartpole recording is exported twice (PNG, --video),
opened with ``LeRobotDataset(repo_id, root=DIR)`` and iterated frame by
frame. Checked for every frame: the image is a float tensor of shape
(C, H, W) in [0, 1] with (H, W, C) as declared, ``observation.state`` and
``action`` have the declared widths (a declared [1] comes back as a 0-d
tensor, as LeRobot returns its own scalar features), ``episode_index`` and ``frame_index``
run as the episodes table says, and the task is the recorded instruction.
Exit status 1 on any mismatch, with what and where.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time


def rlrec(binary: str, *args: str) -> str:
    p = subprocess.run([binary, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"rlrec {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def check(root: str, repo_id: str) -> tuple[int, int]:
    """Iterates every frame of the dataset at root; returns (episodes, frames)."""
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    with open(os.path.join(root, "meta", "info.json")) as f:
        info = json.load(f)
    feats = info["features"]
    ds = LeRobotDataset(repo_id, root=root)
    if len(ds) != info["total_frames"]:
        raise SystemExit(f"{root}: LeRobotDataset has {len(ds)} frames, info.json says {info['total_frames']}")
    images = [k for k, v in feats.items() if v["dtype"] in ("image", "video")]
    expect_next = {}
    for i in range(len(ds)):
        item = ds[i]
        where = f"{root} frame {i}"
        for k in images:
            h, w, c = feats[k]["shape"]
            t = item[k]
            if tuple(t.shape) != (c, h, w) or not t.is_floating_point():
                raise SystemExit(f"{where}: {k} is {t.dtype} {tuple(t.shape)}, want float ({c}, {h}, {w})")
            if float(t.min()) < 0 or float(t.max()) > 1:
                raise SystemExit(f"{where}: {k} has values outside [0, 1]")
        for k in ("observation.state", "action"):
            if k in feats:
                want = tuple(feats[k]["shape"])
                # LeRobot stores a shape [1] feature as a scalar column and
                # gives it back as a 0-d tensor, for its own datasets too.
                ok = {want, ()} if want == (1,) else {want}
                if tuple(item[k].shape) not in ok:
                    raise SystemExit(f"{where}: {k} has shape {tuple(item[k].shape)}, want {want}")
        ep, fi = int(item["episode_index"]), int(item["frame_index"])
        if fi != expect_next.get(ep, 0):
            raise SystemExit(f"{where}: episode {ep} frame_index {fi}, want {expect_next.get(ep, 0)}")
        expect_next[ep] = fi + 1
        if not isinstance(item.get("task"), str) or not item["task"]:
            raise SystemExit(f"{where}: no task string")
    for ep in range(ds.meta.total_episodes):
        length = int(ds.meta.episodes[ep]["length"])
        if expect_next.get(ep) != length:
            raise SystemExit(f"{root}: episode {ep} iterated {expect_next.get(ep)} frames, its length is {length}")
    return ds.meta.total_episodes, len(ds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rlrec", default=os.environ.get("RLREC_BIN", "rlrec"))
    a = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with tempfile.TemporaryDirectory(prefix="rlrec-lerobot-") as tmp:
        root = os.path.join(tmp, "demo")
        rlrec(a.rlrec, "demo", "-o", root, "--seed", "7")
        sessions = json.loads(rlrec(a.rlrec, "inspect", root, "--json"))["sessions"]
        done = 0
        for s in sessions:
            for video in (False, True):
                if video and s["env_component_id"] != "env/pick-place":
                    continue  # no camera: --video changes nothing
                out = os.path.join(tmp, f"{s['env_id']}-{'video' if video else 'png'}")
                args = [
                    "export",
                    root,
                    "--format",
                    "lerobot",
                    "-o",
                    out,
                    "--session",
                    s["session_id"],
                    "--env",
                    s["env_id"],
                ]
                if video:
                    args.append("--video")
                rlrec(a.rlrec, *args)
                t = time.monotonic()
                episodes, frames = check(out, f"rlrec/{s['env_id']}")
                print(
                    f"{s['env_component_id']} {'--video' if video else 'png'}: LeRobotDataset loaded "
                    f"{episodes} episodes, iterated {frames} frames in {time.monotonic() - t:.1f} s, shapes as declared"
                )
                if episodes != s["episodes_completed"]:
                    raise SystemExit(f"{out}: {episodes} episodes, the recording completed {s['episodes_completed']}")
                done += 1
    print(f"lerobot export: {done} passed, 0 failed")


if __name__ == "__main__":
    main()
