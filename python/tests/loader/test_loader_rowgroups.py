"""Batches whose rows straddle row groups, and reading ahead across them,
on the packed ROOT: 137,102 steps in two files of two row groups each."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from rlrec.loader import StepLoader

COLS = ["observation", "action", "reward"]


@pytest.mark.parametrize(
    "order,batch,history,future",
    [
        ("sequential", 1000, 0, 0),
        ("sequential", 997, 2, 3),
        ("block", 512, 0, 0),
        ("global", 4096, 1, 1),
    ],
    ids=["sequential", "sequential-window", "block", "global-window"],
)
def test_batches_across_row_groups(packed_root, order, batch, history, future):
    ld = StepLoader(
        packed_root, COLS, batch_size=batch, order=order, history=history, future=future, seed=3, block_episodes=64
    )
    idx = ld.index
    assert sum(f.metadata.num_row_groups for f in idx.files) >= 3
    tables = [pq.read_table(f.path, columns=[*COLS, "step", "episode_record_id"]) for f in idx.files]
    # every file's rows one after another: file f's row r is row base[f] + r
    base = np.cumsum([0] + [t.num_rows for t in tables])
    ref = {c.name: np.concatenate([c.decode(t.column(c.name)) for t in tables]) for c in ld.columns}
    step_col = np.concatenate([t.column("step").to_numpy() for t in tables])
    rid_col = np.array(sum((t.column("episode_record_id").to_pylist() for t in tables), []), dtype=object)
    rids = np.array(idx.episodes.column("episode_record_id").to_pylist(), dtype=object)
    # per row: its (file, row group) as one number
    rg_of = np.concatenate(
        [k * 1000 + np.repeat(np.arange(len(f.rg_starts) - 1), np.diff(f.rg_starts)) for k, f in enumerate(idx.files)]
    )
    offsets = np.arange(-history, future + 1)
    pairs, straddling = [], 0
    for b in ld:
        ep, st = b["episode"], b["step"]
        steps = st[:, None] + offsets[None, :]
        n = idx.count[ep][:, None]
        rows = base[idx.file_of[ep]][:, None] + idx.start[ep][:, None] + np.clip(steps, 0, n - 1)
        # the rows are the episode's, at the steps asked for (edges repeated)
        np.testing.assert_array_equal(step_col[rows], np.clip(steps, 0, n - 1))
        assert (rid_col[rows] == rids[ep][:, None]).all()
        for c in COLS:
            want = ref[c][rows]
            np.testing.assert_array_equal(b[c], want[:, 0] if not (history or future) else want, err_msg=c)
        if history or future:
            np.testing.assert_array_equal(b["mask"], (steps >= 0) & (steps < n))
        groups = rg_of[rows]
        straddling += int(groups.min() != groups.max())
        pairs.extend(zip(ep.tolist(), st.tolist()))
    assert straddling > 0, "no batch had rows of two row groups"
    assert sorted(pairs) == [(e, s) for e in range(len(idx)) for s in range(int(idx.count[e]))]


def test_ordered_pass_reads_the_next_row_group_ahead(packed_root):
    # 5 batches of 256 planned ahead cover a fraction of a row group; the
    # loader plans further, to the next row group's first batch, and
    # starts its read long before that batch.
    ld = StepLoader(packed_root, COLS, batch_size=256, order="sequential", prefetch_batches=4)
    idx = ld.index
    assert np.diff(idx.files[0].rg_starts)[0] > 100 * 256
    reads, first_key = [], None
    for b in ld:
        reads.append(ld._cache.reads)
        f = idx.file_of[b["episode"]]
        rows = idx.start[b["episode"]] + b["step"]
        keys = {
            (int(f[j]), int(np.searchsorted(idx.files[f[j]].rg_starts, rows[j], side="right") - 1))
            for j in range(len(f))
        }
        if first_key is None:
            first_key = min(keys)
        if keys != {first_key}:
            break
    assert reads[0] == 1
    i = len(reads) - 1  # the first batch with rows of another row group
    assert i > 100 and reads[i - 100] >= 2, (
        f"batch {i} needs another row group; row groups read 100 batches before: {reads[i - 100]}"
    )
    n = len(reads) + sum(1 for _ in ld)
    assert n == -(-len(ld) // 256)
    assert ld._cache.reads == sum(f.metadata.num_row_groups for f in idx.files), "a row group read twice"
