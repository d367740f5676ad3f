"""A bucket ROOT (real versitygw on loopback) gives the directory's samples."""

from __future__ import annotations

import numpy as np
import pytest

from rlrec.loader import StepLoader

from .loader_helpers import ingest


@pytest.mark.parametrize("layout", ["episode", "session"])
def test_bucket_equals_directory(rlrec_bin, cartpole_stream, tmp_path, s3_env, layout):
    import os

    d = ingest(rlrec_bin, cartpole_stream, str(tmp_path / "dir"), layout)
    b = ingest(
        rlrec_bin,
        cartpole_stream,
        f"s3://loader/loader-{layout}",
        layout,
        env=dict(os.environ, **s3_env) | {"HOME": str(tmp_path)},
    )
    kw = dict(
        columns=["observation", "action", "reward", "terminated"],
        batch_size=11,
        history=2,
        future=1,
        order="block",
        seed=6,
        block_episodes=3,
    )
    a, s = StepLoader(d, **kw), StepLoader(b, io_threads=4, **kw)
    assert len(a) == len(s) and len(a) > 0
    assert a.episodes.column("episode_record_id").to_pylist() == s.episodes.column("episode_record_id").to_pylist()
    n = 0
    for x, y in zip(a, s.dataloader(num_workers=2)):
        assert x.keys() == y.keys()
        for k in x:
            np.testing.assert_array_equal(x[k], np.asarray(y[k]), err_msg=k)
        n += 1
    assert n == a.batches() and s.epoch == 1
