"""Exactly once, the same sequence for any number of workers and ranks,
and resume from a saved state with another number of workers."""

from __future__ import annotations

import json
import random
from collections import Counter

import numpy as np
import pytest

from rlrec.loader import FeistelPermutation, Order, StepLoader

from .loader_helpers import sequence

COLS = ["observation", "reward"]


def everything(loader) -> Counter:
    return Counter((e, s) for e in range(len(loader.index)) for s in range(int(loader.index.count[e])))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 16, 17, 1000, 4097])
def test_feistel_is_a_permutation(n):
    p = FeistelPermutation(n, 7, 0, "global")(np.arange(n))
    assert sorted(p.tolist()) == list(range(n))
    if n >= 16:
        assert p.tolist() != list(range(n)), "not shuffled"
        assert p.tolist() != FeistelPermutation(n, 8, 0, "global")(np.arange(n)).tolist(), "seed ignored"


@pytest.mark.parametrize("order", ["global", "block", "sequential"])
def test_order_covers_every_sample_once(order):
    counts = np.array([5, 1, 30, 7, 7, 2, 11])
    o = Order(counts, order, seed=3, epoch=1, block_episodes=3)
    ep, st = o.samples(np.arange(o.total))
    got = sorted(zip(ep.tolist(), st.tolist()))
    assert got == [(e, s) for e in range(len(counts)) for s in range(counts[e])]
    if order == "block":  # a block's samples are contiguous in the sequence
        blocks = [set() for _ in range(3)]
        members = {int(e): i // 3 for i, e in enumerate(o._eps)}
        firsts = [members[int(e)] for e in ep]
        assert firsts == sorted(firsts), "blocks interleave"
        del blocks


@pytest.mark.parametrize(
    "order,batch", [("global", 7), ("block", 16), ("sequential", 32)], ids=["global-7", "block-16", "sequential-32"]
)
def test_exactly_once_same_sequence(cartpole_root, order, batch):
    def make(**kw):
        return StepLoader(cartpole_root, COLS, batch_size=batch, order=order, seed=11, block_episodes=4, **kw)

    ref = make()
    want = everything(ref)
    seqs = {}
    for workers in (0, 2, 4):
        ld = make()
        seqs[f"workers={workers}"] = sequence(ld.dataloader(num_workers=workers))
        assert ld.epoch == 1 and ld.position == 0
    # two ranks, each a loader of its own with 2 workers; the run's
    # sequence is their batches round robin
    ranks = [make(rank=r, world_size=2) for r in range(2)]
    streams = [list(ld.dataloader(num_workers=2)) for ld in ranks]
    assert abs(len(streams[0]) - len(streams[1])) <= 1
    assert [len(s) for s in streams] == [
        ld.batches(r) for r, ld in enumerate([make(rank=r, world_size=2) for r in range(2)])
    ]
    merged = []
    for i in range(max(map(len, streams))):
        merged.extend(s[i] for s in streams if i < len(s))
    seqs["ranks=2"] = sequence(merged)
    seqs["numpy"] = sequence(make())
    first = seqs["workers=0"]
    assert Counter(first) == want and len(first) == sum(want.values())
    for name, s in seqs.items():
        assert s == first, f"{name} gives another sequence"
    if order != "sequential":
        assert first != sorted(first)


def test_epochs_differ_and_repeat(episode_root):
    a = StepLoader(episode_root, COLS, batch_size=50, seed=1)
    e0, e1 = sequence(a), sequence(a)
    assert Counter(e0) == Counter(e1) and e0 != e1
    b = StepLoader(episode_root, COLS, batch_size=50, seed=1)
    b.set_epoch(1)
    assert sequence(b) == e1


@pytest.mark.parametrize("order", ["global", "block"])
def test_resume_with_other_workers(cartpole_root, order):
    rng = random.Random(5)

    def make(**kw):
        return StepLoader(cartpole_root, COLS, batch_size=9, order=order, seed=4, block_episodes=3, **kw)

    full = sequence(make().dataloader(num_workers=0))
    got = []
    state = None
    worker_counts = [2, 0, 4, 1, 3, 2]
    for round_, workers in enumerate(worker_counts):
        ld = make()
        if state is not None:
            ld.load_state_dict(json.loads(state))
        it = iter(ld.dataloader(num_workers=workers))
        stop = rng.randint(1, 12) if round_ < len(worker_counts) - 1 else None
        for i, batch in enumerate(it):
            got.extend(sequence([batch]))
            state = json.dumps(ld.state_dict())
            if stop is not None and i + 1 == stop:
                break
        del it  # killed mid-epoch: its workers' unsent batches are lost
        if json.loads(state)["epoch"] == 1:
            break
    assert got == full
    assert json.loads(state)["position"] == 0 and json.loads(state)["epoch"] == 1


def test_resume_two_ranks_to_one(episode_root):
    def make(**kw):
        return StepLoader(episode_root, COLS, batch_size=10, seed=9, **kw)

    full = sequence(make())
    ranks = [make(rank=r, world_size=2) for r in range(2)]
    its = [iter(ld.dataloader(num_workers=2)) for ld in ranks]
    got = []
    for _ in range(5):  # five training steps in lockstep
        for it in its:
            got.extend(sequence([next(it)]))
    states = [ld.state_dict() for ld in ranks]
    assert states[0] == states[1]
    one = make()
    one.load_state_dict(json.loads(json.dumps(states[0])))
    got.extend(sequence(one.dataloader(num_workers=3)))
    assert got == full


def test_state_of_another_selection_is_refused(episode_root):
    a = StepLoader(episode_root, COLS, batch_size=10)
    b = StepLoader(episode_root, COLS, batch_size=10, where="episode_index > 3")
    with pytest.raises(ValueError, match="another selection"):
        b.load_state_dict(a.state_dict())
