"""The loader tests' helpers: the rlrec CLI writing test ROOTs, and
reference reads of every steps row, by brute force."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq


def episode_rows(loader) -> list[dict[str, np.ndarray]]:
    """Per selected episode, its steps' columns read whole with pyarrow."""
    idx = loader.index
    out = []
    cache: dict[int, object] = {}
    for e in range(len(idx)):
        f = int(idx.file_of[e])
        if f not in cache:
            cache[f] = pq.read_table(idx.files[f].path, filesystem=idx.root.fs)
        t = cache[f].slice(int(idx.start[e]), int(idx.count[e]))
        out.append(
            {c.name: c.decode(t.column(c.name)) for c in loader.columns} | {"step_col": t.column("step").to_numpy()}
        )
    return out


def sequence(batches) -> list[tuple[int, int]]:
    out = []
    for b in batches:
        out.extend(zip(np.asarray(b["episode"]).tolist(), np.asarray(b["step"]).tolist()))
    return out


REPO = Path(__file__).resolve().parents[3]  # the repository


def run_cli(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, check=False, **kw)
    if r.returncode != 0:
        raise RuntimeError(
            f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} exited {r.returncode}: {r.stderr.decode()[-2000:]}"
        )
    return r


def simulate(rlrec_bin: str, dst: Path, *args: str) -> Path:
    run_cli([rlrec_bin, "simulate", "--reproducible", *args, "-o", str(dst)])
    return dst


def ingest(rlrec_bin: str, stream: Path, root: str, layout: str, env: dict | None = None) -> str:
    run_cli([rlrec_bin, "ingest", "--layout", layout, "-o", root, str(stream)], env=env)
    return root
