"""Benchmark of rlrec.loader against a plain pyarrow.dataset scan.

    python python/bench/loader_bench.py ROOT [--columns observation,action,reward] [--batch 256]

For the loader without torch (workers -1: numpy batches in the calling
process) and through a torch DataLoader with 0, 2 and 4 workers:
samples/s over one epoch of a sequential, a block-shuffled and a globally
shuffled pass, the time to the first batch and the time to build the
index (which comes before: the first batch arrives index_s +
first_batch_s after the loader is made; torch is imported before, as a
training process has it); peak RSS of the process and its workers (the
largest one). The floor: a pyarrow.dataset scan of the same steps files
and typed columns (rows/s), sequential, single process, decoded to the
same numpy arrays in batches of the same size. The scan reads the files
the loader's index names, so both are timed from the end of that one
index build (a loader is made once per process). Each figure is the
median of --repeat runs (default 5), each in a fresh process, taken in
rounds of every measurement in turn; "vs_scan" is the ratio of a median
to the scan's median. Prints one JSON line per measurement, then the
1-minute load average before and after each round.
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


def rss_children_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def one(args) -> dict:
    import pyarrow.dataset as ds

    from rlrec.loader import StepLoader

    cols = args.columns.split(",")
    if args.kind != "scan":
        import torch  # noqa: F401  (a training process has it loaded already)
    t_index = time.perf_counter()
    ld = StepLoader(
        args.root,
        cols,
        batch_size=args.batch,
        order="sequential" if args.kind == "scan" else args.kind,
        seed=1,
        block_episodes=8,
        budget_bytes=args.budget << 20,
    )
    t0 = time.perf_counter()
    index_s = t0 - t_index
    n = 0
    first = None
    if args.kind == "scan":
        names = [c.name for c in ld.columns]  # the same files and typed columns
        files = [f.path for f in ld.index.files]
        for rb in ds.dataset(files, format="parquet").to_batches(columns=names, batch_size=args.batch):
            for c in ld.columns:  # the same numpy arrays the loader gives
                c.decode(rb.column(c.name))
            n += rb.num_rows
            if first is None:
                first = time.perf_counter() - t0
    else:
        batches = ld if args.workers < 0 else ld.dataloader(num_workers=args.workers)
        for b in batches:
            n += len(b["step"])
            if first is None:
                first = time.perf_counter() - t0
    total = time.perf_counter() - t0
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return {
        "kind": args.kind,
        "workers": args.workers,
        "samples": n,
        "samples_per_s": n / total,
        "first_batch_s": first,
        "index_s": index_s,
        "peak_rss_mb": rss / 1024,
    }


ALL_RUNS = [("scan", 0)] + [(k, w) for k in ("sequential", "block", "global") for w in (-1, 0, 2, 4)]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("root")
    p.add_argument("--columns", default="observation,action,reward")
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--budget", type=int, default=512, help="MiB")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument(
        "--runs",
        default=None,
        help="which measurements, as kind:workers,... (default all: scan, and sequential, block "
        "and global with workers -1 (numpy batches, no DataLoader), 0, 2 and 4)",
    )
    p.add_argument("--kind", default=None)
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()
    if args.kind:
        print(json.dumps(one(args)))
        return
    runs = ALL_RUNS
    if args.runs:
        runs = [(k, int(w)) for k, w in (r.split(":") for r in args.runs.split(","))]
    if ("scan", 0) not in runs:
        runs = [("scan", 0)] + runs
    got: dict[tuple[str, int], list[dict]] = {r: [] for r in runs}
    load = [os.getloadavg()[0]]
    # Rounds of every measurement in turn (A B C A B C ...), each in a
    # fresh process, so a change in the machine's load falls on all alike.
    for _ in range(args.repeat):
        for kind, workers in runs:
            cmd = [sys.executable, __file__, args.root, "--columns", args.columns, "--batch", str(args.batch)]
            cmd += ["--budget", str(args.budget), "--kind", kind, "--workers", str(workers)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=os.environ)
            got[(kind, workers)].append(json.loads(out.stdout.strip().splitlines()[-1]))
        load.append(os.getloadavg()[0])
    scan = statistics.median(r["samples_per_s"] for r in got[("scan", 0)])
    for (kind, workers), rs in got.items():
        med = {
            k: statistics.median(r[k] for r in rs) for k in ("samples_per_s", "first_batch_s", "index_s", "peak_rss_mb")
        }
        rate = [round(r["samples_per_s"]) for r in rs]
        print(
            json.dumps(
                {
                    "kind": kind,
                    "workers": workers,
                    "samples": rs[0]["samples"],
                    **med,
                    "vs_scan": med["samples_per_s"] / scan,
                    "samples_per_s_runs": rate,
                }
            ),
            flush=True,
        )
    print(json.dumps({"load_1min": load}))


if __name__ == "__main__":
    main()
