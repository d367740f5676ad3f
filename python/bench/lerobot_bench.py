"""LeRobot's own loader on an ``rlrec export --format lerobot`` directory.

    LEROBOT_VENV/bin/python python/bench/lerobot_bench.py DIR [--batch 256] [--max-seconds 60]

The counterpart of ``loader_bench.py``: ``LeRobotDataset(repo_id, root=DIR)``
through a torch DataLoader with 0, 2 and 4 workers, in order
(shuffle=False, against rlrec's "sequential") and shuffled (against
rlrec's "global"): samples/s (over the epoch, or over the batches after
the first within --max-seconds when an epoch takes longer), time to the
first batch from constructing the dataset, peak RSS. Median of --repeat
runs, each in a fresh process; one JSON line per measurement. Runs in a
venv that has lerobot (bench/peers installs one), not in rlrec's.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def one(args) -> dict:
    import torch
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    t0 = time.perf_counter()
    ds = LeRobotDataset("rlrec/bench", root=args.dir)
    dl = torch.utils.data.DataLoader(
        ds,
        batch_size=args.batch,
        shuffle=args.kind == "shuffled",
        num_workers=args.workers,
        generator=torch.Generator().manual_seed(1),
    )
    n, first, t1 = 0, None, None
    for b in dl:
        if first is None:
            t1 = time.perf_counter()
            first = t1 - t0
        else:
            n += len(b["index"])
        if time.perf_counter() - t1 > args.max_seconds:
            break
    rate = n / (time.perf_counter() - t1) if n else 0.0
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return {
        "kind": args.kind,
        "workers": args.workers,
        "frames": len(ds),
        "samples_per_s": rate,
        "first_batch_s": first,
        "peak_rss_mb": rss / 1024,
    }


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--max-seconds", type=float, default=60)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--kind", default=None)
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()
    if args.kind:
        print(json.dumps(one(args)))
        return
    for kind in ("sequential", "shuffled"):
        for workers in (0, 2, 4):
            got = []
            for _ in range(args.repeat):
                cmd = [
                    sys.executable,
                    __file__,
                    args.dir,
                    "--batch",
                    str(args.batch),
                    "--max-seconds",
                    str(args.max_seconds),
                    "--kind",
                    kind,
                    "--workers",
                    str(workers),
                ]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
                got.append(json.loads(out.stdout.strip().splitlines()[-1]))
            med = {k: statistics.median(r[k] for r in got) for k in ("samples_per_s", "first_batch_s", "peak_rss_mb")}
            print(json.dumps({"kind": kind, "workers": workers, "frames": got[0]["frames"], **med}), flush=True)
    print(json.dumps({"load_after": os.getloadavg()}))


if __name__ == "__main__":
    main()
