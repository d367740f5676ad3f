"""Windows, masks and values against a brute-force read of every row."""

from __future__ import annotations

import numpy as np
import pytest

from rlrec.loader import StepLoader

from .loader_helpers import episode_rows


@pytest.mark.parametrize(
    "history,future",
    [(0, 0), (3, 0), (0, 4), (2, 5), (40, 40)],
    ids=["step", "history", "future", "both", "wider-than-episodes"],
)
def test_windows_against_brute_force(cartpole_root, history, future):
    ld = StepLoader(
        cartpole_root,
        ["observation", "action", "reward", "is_last"],
        batch_size=13,
        history=history,
        future=future,
        seed=2,
    )
    ref = episode_rows(ld)
    seen = 0
    for batch in ld:
        for i, (e, s) in enumerate(zip(batch["episode"], batch["step"])):
            rows = ref[e]
            n = len(rows["reward"])
            assert rows["step_col"][s] == s
            want_steps = np.arange(s - history, s + future + 1)
            want_mask = (want_steps >= 0) & (want_steps < n)
            idx = np.clip(want_steps, 0, n - 1)  # edges repeat the edge step
            for c in ("observation", "action", "reward", "is_last"):
                got = batch[c][i]
                want = rows[c][idx]
                if history == 0 and future == 0:
                    want = want[0]
                np.testing.assert_array_equal(got, want, err_msg=f"{c} of episode {e} step {s}")
            if history or future:
                np.testing.assert_array_equal(batch["mask"][i], want_mask)
            seen += 1
    assert seen == len(ld)


def test_map_style_access(episode_root):
    ld = StepLoader(episode_root, ["observation", "reward"], history=1, future=1)
    ref = episode_rows(ld)
    i = 0
    for e, rows in enumerate(ref):
        for s in range(len(rows["reward"])):
            a, b = ld[e, s], ld[i]
            np.testing.assert_array_equal(a["observation"][1], rows["observation"][s])
            for k in a:
                np.testing.assert_array_equal(a[k], b[k])
            i += 1
    with pytest.raises(IndexError):
        ld[len(ref), 0]
    with pytest.raises(IndexError):
        ld[len(ld)]


def test_budget_bounds_what_is_held(cartpole_root):
    ld = StepLoader(cartpole_root, ["observation", "reward"], batch_size=16, budget_bytes=1 << 20, seed=3)
    n = sum(1 for _ in ld.produce())
    cache = ld._cache
    largest = max(
        cache.estimate((f, rg))
        for f in range(len(ld.index.files))
        for rg in range(ld.index.files[f].metadata.num_row_groups)
    )
    assert n == ld.batches()
    assert cache.peak <= max(cache.budget, 2 * largest) + largest
    assert cache.used <= cache.budget + largest


def test_only_requested_columns_are_read(episode_root):
    ld = StepLoader(episode_root, ["reward"], batch_size=64)
    b = next(iter(ld))
    assert set(b) == {"reward", "episode", "step"}
    assert b["reward"].dtype == np.float64
