"""A StepLoader through ``torch.utils.data.DataLoader`` worker processes.

``TorchLoader`` makes a DataLoader over an IterableDataset view of the
loader, with ``batch_size=None`` (the batches are the loader's own) and
``num_workers`` worker processes; worker w of K runs ``produce(w, K)``.
The DataLoader takes its workers' batches round robin, worker 0 first,
so the batches come in the loader's global order (see ``order``). Each
worker gets ``budget_bytes / K`` of the budget and its own read threads.

Workers send a batch's small arrays (under SHARED_MIN_BYTES) as numpy
arrays, pickled through the DataLoader's queue, and the training process
turns them into tensors (``torch.from_numpy``, no copy): for batches of
small steps this is about 4x the throughput of tensors in shared memory,
which cost a file descriptor and a mapping each. Large arrays (images)
go as tensors in shared memory, which saves their copy through the pipe. A ``collate_fn`` given to ``dataloader()`` runs in
the workers instead, on the numpy batch, and its output is yielded as is
(``pin_memory`` needs tensors: pass ``collate_fn=default_convert``).

As batches reach the training process, the StepLoader's position moves,
so ``loader.state_dict()`` taken between two batches resumes after the
last one received. Batches a worker had produced that were not received
are produced again after a resume, by design.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset, get_worker_info

__all__ = ["TorchLoader"]


# Arrays at least this large go as tensors in shared memory; smaller
# ones pickled through the queue.
SHARED_MIN_BYTES = 64 << 10


def _as_is(batch):
    return {
        k: torch.from_numpy(v) if v.dtype != object and v.nbytes >= SHARED_MIN_BYTES else v for k, v in batch.items()
    }


def _tensor(v):
    if isinstance(v, np.ndarray) and v.dtype != object:
        return torch.from_numpy(v)
    return v


class _Batches(IterableDataset):
    def __init__(self, loader):
        super().__init__()
        self.loader = loader

    def __iter__(self) -> Iterator[dict[str, Any]]:
        info = get_worker_info()
        if info is None:
            return self.loader.produce(0, 1)
        return self.loader.produce(info.id, info.num_workers)


class TorchLoader:
    """Iterates a DataLoader over a StepLoader, one epoch per ``iter()``."""

    def __init__(self, loader, num_workers: int = 0, **kwargs: Any):
        for bad in ("batch_size", "shuffle", "sampler", "batch_sampler", "drop_last"):
            if bad in kwargs:
                raise TypeError(f"loader: {bad} belongs to the StepLoader, not to the DataLoader")
        self.loader = loader
        self.num_workers = int(num_workers)
        self.kwargs = kwargs

    def __len__(self) -> int:
        return self.loader.batches()

    def state_dict(self) -> dict[str, Any]:
        return self.loader.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.loader.load_state_dict(state)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        ld = self.loader
        start = ld.position
        kwargs = dict(self.kwargs)
        convert = "collate_fn" not in kwargs
        if convert:
            kwargs["collate_fn"] = _as_is
        dl = DataLoader(_Batches(ld), batch_size=None, num_workers=self.num_workers, **kwargs)
        rolled = False
        for done, batch in enumerate(dl, 1):
            rolled = ld._advance(done, start)
            yield {k: _tensor(v) for k, v in batch.items()} if convert else batch
        if not rolled:
            ld.epoch, ld.position = ld.epoch + 1, 0
