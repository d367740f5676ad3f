"""The order of an epoch's samples, and which consumer delivers which batch.

**The sequence.** An epoch is one sequence of the N selected samples (a
sample is a step of an episode; the index numbers them episode by episode,
0..N-1), fixed by (seed, epoch, order) and the selection alone:

- ``"sequential"``: sample p is sample p.
- ``"global"``: a seeded permutation of all N samples, any step of any
  episode next to any other (random access; for local disks and caches).
- ``"block"``: a seeded permutation of the episodes, cut into blocks of
  ``block_episodes`` consecutive episodes, each block's samples permuted
  within it: the samples of a few episodes at a time, so slow storage
  serves whole row groups to consecutive batches.

The global permutation is a Feistel network over the next even power of
two with cycle walking (``FeistelPermutation``): position to sample in
O(1) time and memory, so every process computes any part of the sequence
without holding it. The episodes' permutation (block order) is one too;
a block's samples are permuted by sorting a keyed hash of their positions
(``sorted_permutation``), computed once per block. Keys are SHA-256 of
the seed, the epoch and the block: the same on every machine.

**Batches and consumers.** Training resumes at sample position P (0 at an
epoch's start). Global batch g holds the positions
[P + g*B, min(N, P + (g+1)*B)), in order. With R ranks of K workers each
(R = world_size, K = num_workers, K = 1 without worker processes), rank r
delivers the global batches g = j*R + r for its local batches j = 0, 1, ...,
and worker w of rank r produces its local batches j with j mod K = w.

**Proof of exactly once and of the same sequence for any R and K.** The
global batches partition [P, N) (consecutive half-open ranges that start
at P and end at N). The map g -> (r, j) = (g mod R, g div R) is a
bijection from global batch numbers to (rank, local batch) pairs, and
j -> (w, i) = (j mod K, j div K) one from local batches to (worker, turn)
pairs, so every global batch is produced by exactly one worker of exactly
one rank, and so every position in [P, N) once, and every sample of the
epoch once when P = 0 (the permutation is a bijection on [0, N)). A
torch DataLoader over an iterable dataset takes its K workers' outputs
round robin, worker 0 first: its j-th output is worker j mod K's (j div K)-th
batch, local batch j, so rank r's stream is global batches r, r+R, r+2R, ...
whatever K is, and taking the ranks' streams round robin gives batches
0, 1, 2, ...: the sequence of samples does not depend on R or K.
(A worker that runs out ends: its next local batch would be j >= the
rank's count, and so would every later one, so the round robin loses no
batch and reorders none.) Resuming at P with other R' and K' gives
[P, N) in the same order by the same argument, and the samples before P
were the first P of the same sequence, so the epoch is delivered exactly
once across the stop.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass

import numpy as np

__all__ = ["ORDERS", "FeistelPermutation", "Order", "consumer_batches"]

ORDERS = ("global", "block", "sequential")

# The key derivation is part of the sequence a seed gives; do not change
# it, or a saved state resumes into another order.
_KEY_LABEL = b"rlrec.loader.order.v1"
_ROUNDS = 4
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64's finaliser; uint64 arithmetic wraps. x is a fresh array.
    x ^= x >> np.uint64(30)
    x *= _M1
    x ^= x >> np.uint64(27)
    x *= _M2
    x ^= x >> np.uint64(31)
    return x


def _keys(*parts: int | str) -> np.ndarray:
    h = hashlib.sha256(_KEY_LABEL)
    for p in parts:
        b = str(p).encode("utf-8")
        h.update(struct.pack(">Q", len(b)))
        h.update(b)
    d = h.digest()
    return np.array(struct.unpack(">4Q", d), dtype=np.uint64)


class FeistelPermutation:
    """A keyed bijection of [0, n) computed on arrays of positions."""

    def __init__(self, n: int, *key: int | str):
        if n < 0:
            raise ValueError(f"order: a permutation of {n} elements")
        self.n = n
        bits = max(2, int(n - 1).bit_length()) if n > 1 else 2
        self.half = (bits + 1) // 2
        self.mask = np.uint64((1 << self.half) - 1)
        self.keys = _keys(*key)

    def _encrypt(self, x: np.ndarray) -> np.ndarray:
        h = np.uint64(self.half)
        left, right = x >> h, x & self.mask
        for k in self.keys[:_ROUNDS]:
            left, right = right, left ^ (_mix(right ^ k) & self.mask)
        return (left << h) | right

    def __call__(self, positions: np.ndarray) -> np.ndarray:
        x = np.asarray(positions, dtype=np.uint64)
        if x.size and (int(x.max()) >= self.n):
            raise IndexError(f"order: position {int(x.max())} of a permutation of {self.n}")
        y = self._encrypt(x)
        out = y >= np.uint64(self.n)
        while out.any():  # cycle walking: at most 4 expected rounds
            y[out] = self._encrypt(y[out])
            out = y >= np.uint64(self.n)
        return y.astype(np.int64)


def sorted_permutation(n: int, *key: int | str) -> np.ndarray:
    """A keyed permutation of [0, n) as a whole array: the positions sorted
    by a keyed hash of each (ties, if any, by position). One pass, for the
    small domains of blocks, where cycle walking costs more."""
    k = _keys(*key)
    h = _mix(np.arange(n, dtype=np.uint64) ^ k[0])
    h = _mix(h ^ k[1])
    return np.argsort(h, kind="stable").astype(np.int64)


@dataclass(frozen=True)
class Order:
    """The sequence of one epoch over episodes of the given step counts."""

    counts: np.ndarray  # steps per episode, in index order
    order: str = "global"
    seed: int = 0
    epoch: int = 0
    block_episodes: int = 16

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise ValueError(f"order: {self.order!r} is no order; want one of {', '.join(ORDERS)}")
        if self.block_episodes < 1:
            raise ValueError(f"order: block_episodes {self.block_episodes}: want at least 1")
        counts = np.asarray(self.counts, dtype=np.int64)
        object.__setattr__(self, "counts", counts)
        cum = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=cum[1:])
        object.__setattr__(self, "_cum", cum)
        if self.order == "global":
            object.__setattr__(self, "_perm", FeistelPermutation(int(cum[-1]), self.seed, self.epoch, "global"))
        if self.order == "block":
            e = len(counts)
            eps = FeistelPermutation(e, self.seed, self.epoch, "episodes")(np.arange(e)) if e else np.zeros(0, np.int64)
            k = self.block_episodes
            sizes = np.add.reduceat(counts[eps], np.arange(0, e, k)) if e else np.zeros(0, np.int64)
            bcum = np.zeros(len(sizes) + 1, dtype=np.int64)
            np.cumsum(sizes, out=bcum[1:])
            object.__setattr__(self, "_eps", eps)
            object.__setattr__(self, "_bcum", bcum)

    @property
    def total(self) -> int:
        return int(self._cum[-1])

    def samples(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The (episode, step) of each position of the sequence."""
        p = np.asarray(positions, dtype=np.int64)
        if p.size and (p.min() < 0 or p.max() >= self.total):
            raise IndexError(f"order: positions outside [0, {self.total})")
        return self._samples(p)

    def range_samples(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """``samples`` of the positions lo..hi-1 (a batch's)."""
        if not (0 <= lo <= hi <= self.total):
            raise IndexError(f"order: positions [{lo}, {hi}) outside [0, {self.total})")
        return self._samples(np.arange(lo, hi, dtype=np.int64))

    def _samples(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.order == "sequential":
            sid = p
        elif self.order == "global":
            sid = self._perm(p)
        else:
            return self._block_samples(p)
        ep = np.searchsorted(self._cum, sid, side="right") - 1
        return ep, sid - self._cum[ep]

    def _block(self, b: int) -> tuple[np.ndarray, np.ndarray]:
        """Block b's samples in its order, as (episode, step) arrays; the
        last few blocks are kept, as consecutive batches share them."""
        cache = self.__dict__.setdefault("_blocks", {})
        hit = cache.get(b)
        if hit is None:
            k = self.block_episodes
            members = self._eps[b * k : (b + 1) * k]
            mcum = np.zeros(len(members) + 1, dtype=np.int64)
            np.cumsum(self.counts[members], out=mcum[1:])
            q = sorted_permutation(int(mcum[-1]), self.seed, self.epoch, "block", b)
            m = np.searchsorted(mcum, q, side="right") - 1
            hit = (members[m], q - mcum[m])
            if len(cache) >= 4:
                cache.pop(next(iter(cache)))
            cache[b] = hit
        return hit

    def _block_samples(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ep_out = np.empty(p.shape, dtype=np.int64)
        st_out = np.empty(p.shape, dtype=np.int64)
        blocks = np.searchsorted(self._bcum, p, side="right") - 1
        if p.size and blocks[0] == blocks[-1] and (blocks == blocks[0]).all():  # a batch inside one block
            b = int(blocks[0])
            eps, steps = self._block(b)
            off = p - self._bcum[b]
            return eps[off], steps[off]
        for b in np.unique(blocks):
            sel = blocks == b
            eps, steps = self._block(int(b))
            off = p[sel] - self._bcum[b]
            ep_out[sel] = eps[off]
            st_out[sel] = steps[off]
        return ep_out, st_out


def consumer_batches(
    total: int, start: int, batch_size: int, rank: int, world_size: int, worker: int, num_workers: int
):
    """The global batches one worker of one rank produces, in its order, as
    (global batch number, first position, end position) triples."""
    if batch_size < 1:
        raise ValueError(f"order: batch_size {batch_size}: want at least 1")
    if not (0 <= rank < world_size):
        raise ValueError(f"order: rank {rank} of world_size {world_size}")
    if not (0 <= worker < max(1, num_workers)):
        raise ValueError(f"order: worker {worker} of {num_workers}")
    k = max(1, num_workers)
    n_batches = -(-(total - start) // batch_size) if total > start else 0
    j = worker
    while True:
        g = j * world_size + rank
        if g >= n_batches:
            return
        lo = start + g * batch_size
        yield g, lo, min(total, lo + batch_size)
        j += k
