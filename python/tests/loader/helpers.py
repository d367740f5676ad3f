"""Reference reads for the loader tests: every steps row, by brute force."""

from __future__ import annotations

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
