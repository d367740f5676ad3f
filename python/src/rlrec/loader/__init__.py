"""Train straight from a ROOT: an exactly-once, resumable, shuffled loader.

    from rlrec.loader import StepLoader

    loader = StepLoader("s3://datasets/pick-place", ["observation.state", "action", "reward"],
                        batch_size=64, history=2, future=8, order="block", seed=7,
                        where="status = 'completed'", split="train=0.9,val=0.1", split_name="train")
    for epoch in range(10):
        for batch in loader.dataloader(num_workers=4):   # or: for batch in loader (numpy)
            ...
            save(loader.state_dict())                     # small JSON; load_state_dict resumes

The modules, each with its contract: ``index`` (what is read to find the
steps: the episodes table and the steps files' footers), ``order`` (the
epoch's sequence, who delivers which batch, and the proof that it is
exactly once and the same for any number of workers and ranks),
``fetch`` (row groups read ahead under a byte budget), ``columns`` (which
columns, as which arrays), ``where`` and ``split`` (the episode selection
of ``rlrec copy --where`` and ``--split``), ``loader`` (batches, windows,
state) and ``torch_loader`` (the torch DataLoader form).

Needs numpy and pyarrow; torch only for ``dataloader()``.
"""

from .index import IndexError_, open_root
from .loader import STATE_FORMAT, StateError, StepLoader
from .order import ORDERS, FeistelPermutation, Order
from .split import SplitError, parse_splits, split_point
from .where import FilterError, parse

__all__ = [
    "ORDERS",
    "STATE_FORMAT",
    "FeistelPermutation",
    "FilterError",
    "IndexError_",
    "Order",
    "SplitError",
    "StateError",
    "StepLoader",
    "open_root",
    "parse",
    "parse_splits",
    "split_point",
]
