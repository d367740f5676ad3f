"""The loader: batches of steps or windows, in a resumable epoch order.

``StepLoader`` is both forms of access:

- iterable: ``for batch in loader`` gives this rank's batches of the
  current epoch (see ``order`` for the sequence and who delivers what),
  then moves to the next epoch; ``loader.dataloader(num_workers=K)`` does
  the same through a torch DataLoader with K worker processes, with the
  same batches in the same order;
- map-style: ``loader[i]`` (sample i of the index, episode by episode) or
  ``loader[episode, step]`` gives one sample, ``len(loader)`` the samples.

A batch is a dict of numpy arrays (tensors through the DataLoader): one
per column asked for, of shape [B, *leaf shape], or [B, T, *leaf shape]
with a window (T = history + 1 + future), and ``episode`` (the episode's
row in ``loader.episodes``), ``step`` (the step in its episode, int64)
and, with a window, ``mask`` [B, T] (bool: False where the window reaches
past the episode's first or last step; those places repeat the edge
step's values, so a model sees no values from another episode).

State: ``state_dict()`` is a small JSON-able dict, ``{"format":
"rlrec.loader.state.v1", "seed", "order", "block_episodes", "epoch",
"position", "samples", "selection"}``: ``position`` counts the samples of
the epoch's sequence delivered before the next batch (after an epoch's
last batch, the state is the next epoch's start). ``load_state_dict``
of a loader over the same selection (same ``samples`` and ``selection``,
a digest of the selected episodes) continues from there, with any batch
size, world size and number of workers. In a data-parallel run every rank
delivers one batch per training step, so the ranks' states are equal and
any one of them (rank 0's) is the run's: after j batches on each of R
ranks the first j*R global batches are delivered. A state taken from a
rank that has delivered more or fewer batches than the others would skip
or repeat the difference.

A rank's batch count may differ from another's by one at an epoch's end
(exactly once leaves nothing to pad with); ``batches()`` tells each rank's.
"""

from __future__ import annotations

import hashlib
import os
from bisect import bisect_right
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from .columns import DEFAULT_COLUMNS, Column, resolve
from .fetch import Key, RowGroupCache
from .index import Index, build_index, open_root
from .order import ORDERS, Order, consumer_batches
from .split import parse_splits
from .where import Filter, parse

if TYPE_CHECKING:
    from .torch_loader import TorchLoader

__all__ = ["STATE_FORMAT", "StateError", "StepLoader"]

STATE_FORMAT = "rlrec.loader.state.v1"  # part of saved states; do not change


# Rows (window places) planned ahead at most when planning past
# prefetch_batches to reach the next row group: about 24 bytes each.
PLAN_AHEAD_ROWS = 1 << 17
PLAN_AHEAD_STEP = 8


class Plan(NamedTuple):
    """Where one batch's rows are (``StepLoader._plan``)."""

    keys: list[Key]  # (file, row group) of the rows, in first-use order
    local: np.ndarray  # per row: its row in its row group
    which: np.ndarray | None  # per row: its key's number; None: all keys[0]
    mask: np.ndarray | None  # with a window: False past the episode's edges


class StateError(ValueError):
    """A state that does not belong to this loader's selection or order."""


class StepLoader:
    """Batches of steps (or windows of steps) of a ROOT; see the module doc.

    root: a directory or ``s3://bucket/prefix`` (or a path in ``filesystem``).
    columns: steps columns and leaves (``columns`` module); default
    observation, action, reward and the four flags.
    batch_size, history, future: samples per batch; steps before and after.
    order: ``"global"``, ``"block"`` (``block_episodes`` per block) or
    ``"sequential"``; seed: the permutations' seed.
    where: an episode filter as ``rlrec copy --where`` takes it.
    split, split_name, split_seed: ``"train=0.9,val=0.1"``, which of them,
    and the seed, as ``rlrec copy --split --seed``.
    rank, world_size: this process's place in a data-parallel run.
    budget_bytes: fetched and decoded data held per process (divided among
    a DataLoader's workers); io_threads: concurrent reads per process;
    prefetch_batches: how many batches ahead reads start (as far as the
    budget allows: 32 batches ahead read images 3x faster than 4 did);
    when those all fall in one row group, planning goes on to the first
    batch of the next one (up to PLAN_AHEAD_ROWS rows), so an ordered pass
    reads a row group while the batches of the one before are built.
    """

    def __init__(
        self,
        root: str | os.PathLike,
        columns: list[str] | tuple[str, ...] = DEFAULT_COLUMNS,
        *,
        batch_size: int = 32,
        history: int = 0,
        future: int = 0,
        order: str = "global",
        seed: int = 0,
        block_episodes: int = 16,
        where: str | Filter | None = None,
        split: str | dict[str, float] | None = None,
        split_name: str | None = None,
        split_seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        budget_bytes: int = 512 << 20,
        io_threads: int = 4,
        prefetch_batches: int = 32,
        filesystem: Any = None,
    ):
        if batch_size < 1 or history < 0 or future < 0:
            raise ValueError(
                f"loader: batch_size {batch_size}, history {history}, future {future}: want >= 1, >= 0, >= 0"
            )
        if order not in ORDERS:
            raise ValueError(f"loader: order {order!r}: want one of {', '.join(ORDERS)}")
        if not (0 <= rank < world_size):
            raise ValueError(f"loader: rank {rank} is not in [0, world_size {world_size})")
        flt = parse(where) if isinstance(where, str) else where
        spl = None
        if split is not None:
            splits = parse_splits(split)
            if split_name not in splits.names:
                raise ValueError(f"loader: split_name {split_name!r}: want one of {', '.join(splits.names)}")
            spl = (splits, split_name, int(split_seed))
        self.index: Index = build_index(open_root(root, filesystem), flt, spl, threads=io_threads * 2)
        self.columns: list[Column] = self._resolve(list(columns))
        self.batch_size, self.history, self.future = int(batch_size), int(history), int(future)
        self.order, self.seed, self.block_episodes = order, int(seed), int(block_episodes)
        self.rank, self.world_size = int(rank), int(world_size)
        self.budget_bytes, self.io_threads = int(budget_bytes), int(io_threads)
        self.prefetch_batches = max(0, int(prefetch_batches))
        self._offsets = np.arange(-self.history, self.future + 1, dtype=np.int64)
        self.epoch, self.position = 0, 0
        self._selection = self._digest()
        self._cache: RowGroupCache | None = None
        self._cache_pid = -1

    # -- selection -----------------------------------------------------

    @property
    def episodes(self):
        """The selected episodes' rows (pyarrow Table); batches' ``episode`` index it."""
        return self.index.episodes

    def _resolve(self, names: list[str]) -> list[Column]:
        files = self.index.files
        if not files:
            return resolve([n for n in names if not n.startswith(("observation", "action"))], b"", b"", [])
        wants_leaves = any(n.startswith(("observation", "action")) for n in names)
        first = files[0]
        if wants_leaves:
            for f in files[1:]:
                if (f.observation_space, f.action_space) != (first.observation_space, first.action_space):
                    raise ValueError(
                        f"loader: {first.path} and {f.path} have different spaces; load one env at a time "
                        "(where=\"env_component_id = '...'\")"
                    )
        return resolve(names, first.observation_space, first.action_space, first.schema.names)

    def _digest(self) -> str:
        h = hashlib.sha256()
        e = self.index.episodes
        for col in ("session_id", "env_id", "episode_record_id"):
            vals = e.column(col).to_pylist()
            h.update(np.array([len(v) for v in vals], dtype="<i8").tobytes())
            h.update("".join(vals).encode("utf-8", "surrogatepass"))
        h.update(self.index.count.astype("<i8").tobytes())
        return h.hexdigest()[:32]

    def __len__(self) -> int:
        return self.index.total

    # -- order and state -----------------------------------------------

    def _order(self, epoch: int) -> Order:
        return Order(self.index.count, self.order, self.seed, epoch, self.block_episodes)

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch`` at its beginning."""
        self.epoch, self.position = int(epoch), 0

    def batches(self, rank: int | None = None) -> int:
        """The batches rank (default this one) delivers in the rest of the epoch."""
        r = self.rank if rank is None else rank
        n = -(-(self.index.total - self.position) // self.batch_size)
        return max(0, -(-(n - r) // self.world_size))

    def state_dict(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "seed": self.seed,
            "order": self.order,
            "block_episodes": self.block_episodes,
            "epoch": self.epoch,
            "position": self.position,
            "samples": self.index.total,
            "selection": self._selection,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("format") != STATE_FORMAT:
            raise StateError(f"loader: state format {state.get('format')!r}, want {STATE_FORMAT!r}")
        if state.get("samples") != self.index.total or state.get("selection") != self._selection:
            raise StateError(
                f"loader: the state is of another selection ({state.get('samples')} samples, "
                f"{state.get('selection')}) than this loader's ({self.index.total}, {self._selection}): "
                "same ROOT content, where and split are needed to resume"
            )
        pos = int(state["position"])
        if not (0 <= pos <= self.index.total):
            raise StateError(f"loader: state position {pos} outside [0, {self.index.total}]")
        self.seed, self.order = int(state["seed"]), str(state["order"])
        self.block_episodes = int(state["block_episodes"])
        self.epoch, self.position = int(state["epoch"]), pos

    def _advance(self, delivered_batches: int, start: int) -> bool:
        """Moves the position past delivered batches; at the epoch's end to
        the next epoch's start (True)."""
        pos = start + delivered_batches * self.world_size * self.batch_size
        if pos >= self.index.total:
            self.epoch, self.position = self.epoch + 1, 0
            return True
        self.position = pos
        return False

    # -- reading -------------------------------------------------------

    def _cache_here(self, workers: int = 1) -> RowGroupCache:
        if self._cache is None or self._cache_pid != os.getpid():
            self._cache = RowGroupCache(
                self.index, self.columns, max(1 << 20, self.budget_bytes // max(1, workers)), self.io_threads
            )
            self._cache_pid = os.getpid()
        return self._cache

    def __getstate__(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["_cache"], d["_cache_pid"] = None, -1
        return d

    def _plan(self, ep: np.ndarray, st: np.ndarray) -> Plan:
        """Where a batch's rows are: the (file, row group) keys in first-use
        order, each row's number within its key's row group, and which key
        each row is in (None: all in keys[0], the common case of ordered
        reads). Rows are [B] without a window, [B, T] with one."""
        idx = self.index
        if self.history or self.future:
            steps = st[:, None] + self._offsets[None, :]
            n = idx.count[ep][:, None]
            mask = (steps >= 0) & (steps < n)
            rows = idx.start[ep][:, None] + np.clip(steps, 0, n - 1)
        else:
            mask = None
            rows = idx.start[ep] + st
        fe = idx.file_of[ep]
        f0 = int(fe[0])
        if fe[-1] == f0 and (fe == f0).all():
            bounds = idx.rg_bounds[f0]
            lo = bisect_right(bounds, int(rows.min())) - 1
            if lo == bisect_right(bounds, int(rows.max())) - 1:
                return Plan([(f0, lo)], rows - bounds[lo], None, mask)
            starts = idx.files[f0].rg_starts
            rgs = np.searchsorted(starts, rows, side="right") - 1
            files = np.full(rows.shape, f0, dtype=np.int64)
            local = rows - starts[rgs]
        else:
            files = np.broadcast_to(fe.reshape((-1,) + (1,) * (rows.ndim - 1)), rows.shape)
            rgs = np.empty_like(rows)
            local = np.empty_like(rows)
            for f in np.unique(fe):
                sel = files == f
                starts = idx.files[f].rg_starts
                rgs[sel] = np.searchsorted(starts, rows[sel], side="right") - 1
                local[sel] = rows[sel] - starts[rgs[sel]]
        code = files * (1 << 32) + rgs
        uniq, first, inverse = np.unique(code.ravel(), return_index=True, return_inverse=True)
        by_use = np.argsort(first, kind="stable")
        keys = [(int(u >> 32), int(u & 0xFFFFFFFF)) for u in uniq[by_use]]
        rank = np.empty_like(by_use)
        rank[by_use] = np.arange(len(by_use))
        return Plan(keys, local, rank[inverse].reshape(rows.shape), mask)

    def _gather(self, cache: RowGroupCache, ep, st, plan: Plan, protect) -> dict[str, np.ndarray]:
        local, which = plan.local, plan.which
        if which is None:
            arrays = cache.get(plan.keys[0], protect)
            out = {c.name: arrays[c.name].take(local, axis=0) for c in self.columns}
        else:
            out = {c.name: c.zeros(local.shape) for c in self.columns}
            for i, k in enumerate(plan.keys):
                arrays = cache.get(k, protect)
                sel = which == i
                rows = local[sel]
                for c in self.columns:
                    out[c.name][sel] = arrays[c.name].take(rows, axis=0)
        if plan.mask is not None:
            out["mask"] = plan.mask
        out["episode"] = np.asarray(ep, dtype=np.int64)
        out["step"] = np.asarray(st, dtype=np.int64)
        return out

    def __getitem__(self, key) -> dict[str, np.ndarray]:
        if isinstance(key, tuple):
            e, s = (int(k) for k in key)
            if not (0 <= e < len(self.index)) or not (0 <= s < self.index.count[e]):
                raise IndexError(f"loader: no step {s} of episode {e} ({len(self.index)} episodes)")
        else:
            i = int(key)
            if i < 0:
                i += self.index.total
            if not (0 <= i < self.index.total):
                raise IndexError(f"loader: sample {key} of {self.index.total}")
            cum = self.index.cum
            e = int(np.searchsorted(cum, i, side="right") - 1)
            s = i - int(cum[e])
        ep, st = np.array([e], dtype=np.int64), np.array([s], dtype=np.int64)
        plan = self._plan(ep, st)
        batch = self._gather(self._cache_here(), ep, st, plan, set(plan.keys))
        return {k: v[0] for k, v in batch.items()}

    def produce(self, worker: int = 0, num_workers: int = 1) -> Iterator[dict[str, np.ndarray]]:
        """The batches one worker of this rank produces in the current epoch
        from the current position (``order``): the DataLoader's workers run it."""
        order = self._order(self.epoch)
        cache = self._cache_here(num_workers)
        todo = consumer_batches(
            order.total, self.position, self.batch_size, self.rank, self.world_size, worker, num_workers
        )
        ahead: deque = deque()  # (ep, st, plan) of the batches planned, in order
        # The row groups the planned batches need, in first-use order, with
        # how many of them need each: what to read ahead, without going
        # through every planned batch for every batch.
        wanted: dict[Key, int] = {}
        planned = [0]  # rows (window places) of the planned batches

        def plan_next() -> bool:
            nxt = next(todo, None)
            if nxt is None:
                return False
            _, lo, hi = nxt
            ep, st = order.range_samples(lo, hi)
            plan = self._plan(ep, st)
            for k in plan.keys:
                wanted[k] = wanted.get(k, 0) + 1
            ahead.append((ep, st, plan))
            planned[0] += plan.local.size
            return True

        def plan_ahead() -> None:
            # prefetch_batches ahead, and further while they all need one
            # row group (within PLAN_AHEAD_ROWS): an ordered pass over large
            # row groups then reads the next one while the batches of the
            # current one are built. Going further takes PLAN_AHEAD_STEP
            # batches per batch delivered, so the first batch is not held
            # up by planning the batches of a whole row group.
            extra = PLAN_AHEAD_STEP
            while len(ahead) <= self.prefetch_batches or (extra and len(wanted) < 2 and planned[0] < PLAN_AHEAD_ROWS):
                if len(ahead) > self.prefetch_batches:
                    extra -= 1
                if not plan_next():
                    return

        plan_ahead()
        while ahead:
            ep, st, plan = ahead[0]
            protect = set(plan.keys)
            cache.prefetch(plan.keys, protect)
            # reading ahead evicts no row group a planned batch needs
            cache.prefetch(wanted, wanted.keys())
            batch = self._gather(cache, ep, st, plan, protect)
            ahead.popleft()
            planned[0] -= plan.local.size
            for k in plan.keys:
                left = wanted[k] - 1
                if left:
                    wanted[k] = left
                else:
                    del wanted[k]
            plan_ahead()
            yield batch

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        start, rolled = self.position, False
        for done, batch in enumerate(self.produce(0, 1), 1):
            rolled = self._advance(done, start)
            yield batch
        if not rolled:
            self.epoch, self.position = self.epoch + 1, 0

    def dataloader(self, num_workers: int = 0, **kwargs: Any) -> TorchLoader:
        """This loader through a torch DataLoader (batch_size=None: the batches
        are this loader's), keeping state_dict() up to date as batches arrive."""
        from .torch_loader import TorchLoader

        return TorchLoader(self, num_workers, **kwargs)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None
