"""Row groups fetched and decoded under a byte budget, ahead of use.

The unit of reading is one row group of one steps file, restricted to the
columns asked for: pyarrow reads just those column chunks, by ranged reads
(``pre_buffer`` coalesces them), from the footer the index already holds.
``RowGroupCache`` keeps decoded row groups (numpy arrays per column) and
reads the ones the next batches need on ``io_threads`` threads at once,
which, on object storage, is that many range requests in flight.

Budget: the bytes of the decoded row groups held, plus, for every read in
flight, the uncompressed size of its column chunks as the footer gives
them, stay under ``budget_bytes``. A read is started only when it fits
(evicting the least recently used row groups that no batch being built
needs); the one exception is a row group that the batch being built
needs and that alone is over the budget, which is read anyway, so what
the cache holds stays under the budget plus the largest row group asked
for. Bookkeeping happens on the caller's thread; the threads only read and
decode.

The process's RSS grows past its size before the first batch by at most
the budget, the largest row group, two batches (the one being built and
the one returned) and a fixed overhead, stated as 96 MiB: each read
thread's Arrow table and pre-buffered column chunks next to the arrays
decoded from them, and what the allocators (Arrow's mimalloc pool,
glibc's per-thread arenas) keep after freeing. Measured on pick-place
images with io_threads=4: 56-75 MiB over budgets of 8 to 128 MiB, the
same for a ROOT three times larger (``python/tests/loader/test_loader_memory.py``
asserts the bound).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pyarrow.parquet as pq

from .columns import Column
from .index import Index

__all__ = ["RowGroupCache"]

Key = tuple[int, int]  # (file, row group)


class RowGroupCache:
    def __init__(self, index: Index, columns: list[Column], budget_bytes: int, io_threads: int = 8):
        if budget_bytes < 1:
            raise ValueError(f"loader: budget_bytes {budget_bytes}: want a positive number of bytes")
        self.index = index
        self.columns = columns
        self.names = [c.name for c in columns]
        self.budget = int(budget_bytes)
        self.io_threads = max(1, int(io_threads))
        self._pool: ThreadPoolExecutor | None = None
        self._files: dict[int, object] = {}
        self._cached: OrderedDict[Key, tuple[dict[str, np.ndarray], int]] = OrderedDict()
        self._inflight: dict[Key, tuple[Future, int]] = {}
        self.used = 0  # decoded bytes held
        self.peak = 0  # most bytes held + reserved at once
        self.reads = 0  # row groups read

    def __getstate__(self):
        raise TypeError("RowGroupCache belongs to one process")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._files.clear()
        self._cached.clear()
        self._inflight.clear()
        self.used = 0

    def estimate(self, key: Key) -> int:
        f, rg = key
        md = self.index.files[f].metadata.row_group(rg)
        want = set(self.names)
        size = 0
        for i in range(md.num_columns):
            c = md.column(i)
            if c.path_in_schema.split(".list.")[0] in want or c.path_in_schema in want:
                size += c.total_uncompressed_size
        return size

    def _source(self, f: int):
        src = self._files.get(f)
        if src is None:
            sf = self.index.files[f]
            src = self.index.root.fs.open_input_file(sf.path)
            self._files[f] = src
        return src

    def _read(self, key: Key, src) -> tuple[dict[str, np.ndarray], int]:
        f, rg = key
        sf = self.index.files[f]
        pf = pq.ParquetFile(src, metadata=sf.metadata, pre_buffer=True)
        t = pf.read_row_group(rg, columns=self.names)
        arrays = {c.name: c.decode(t.column(c.name)) for c in self.columns}
        nbytes = 0
        for a in arrays.values():
            nbytes += a.nbytes if a.dtype != object else sum(len(s) + 50 for s in a.ravel())
        return arrays, nbytes

    def _submit(self, key: Key, est: int) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.io_threads, thread_name_prefix="rlrec-loader")
        src = self._source(key[0])
        self._inflight[key] = (self._pool.submit(self._read, key, src), est)
        self.reads += 1
        self._note()

    def _note(self) -> None:
        held = self.used + sum(e for _, e in self._inflight.values())
        self.peak = max(self.peak, held)

    def _evict(self, need: int, protect: AbstractSet[Key]) -> bool:
        """Drops LRU row groups outside protect until need more bytes fit."""
        reserved = sum(e for _, e in self._inflight.values())
        for k in list(self._cached):
            if self.used + reserved + need <= self.budget:
                break
            if k in protect:
                continue
            _, n = self._cached.pop(k)
            self.used -= n
        return self.used + reserved + need <= self.budget

    def prefetch(self, keys: Iterable[Key], protect: AbstractSet[Key]) -> None:
        """Starts reads of keys, in order, while they fit the budget."""
        for k in keys:
            if k in self._cached or k in self._inflight:
                continue
            est = self.estimate(k)
            if not self._evict(est, protect):
                return
            self._submit(k, est)

    def get(self, key: Key, protect: AbstractSet[Key]) -> dict[str, np.ndarray]:
        """The decoded row group, read now if it is not held or in flight."""
        hit = self._cached.get(key)
        if hit is not None:
            self._cached.move_to_end(key)
            return hit[0]
        if key not in self._inflight:
            est = self.estimate(key)
            self._evict(est, protect)
            self._submit(key, est)
        fut, _ = self._inflight[key]
        arrays, nbytes = fut.result()
        del self._inflight[key]
        self._evict(nbytes, protect | {key})
        self._cached[key] = (arrays, nbytes)
        self.used += nbytes
        self._note()
        return arrays
