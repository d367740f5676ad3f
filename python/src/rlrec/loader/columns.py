"""Which steps columns a loader reads, and their values as numpy arrays.

A loader names what it wants by steps column (docs/format/steps.md):

- the fixed columns ``reward`` (float64), ``is_first``, ``is_last``,
  ``terminated``, ``truncated`` (bool), ``step``, ``session_step``,
  ``episode_index`` (int64), ``env_index`` (int32) and ``recorded_at``
  (int64 microseconds since the epoch, UTC);
- observation and action leaves by their typed column, ``observation``
  (a space whose root is a leaf) or ``observation.<path>``, and any
  prefix of leaves: ``observation`` of a Dict space means all its leaves,
  ``observation.arm`` every leaf under the key ``arm``.

Only the named columns' chunks are fetched: the blob columns never are, the
typed columns hold the same values. A leaf comes back at its space's dtype
and shape, exactly the recorded value (float16, which the typed column
widens to float32, is narrowed back without loss; MultiBinary as uint8 0/1,
as ``rlrec.decode``), an image leaf stored as binary as its raw array,
a Text leaf as str (numpy object arrays). A step without an observation
(null: none was seen) gives zeros of the leaf's shape.

All selected episodes must have the same spaces for the leaves asked for;
a ROOT of several envs is loaded one env at a time (``where`` on
``env_component_id``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..decode import spec_from_json
from ..leaves import Leaf, compile_spec

__all__ = ["DEFAULT_COLUMNS", "FIXED", "Column", "resolve"]

# Fixed steps columns and the numpy dtype a loader gives them.
FIXED: dict[str, np.dtype] = {
    "reward": np.dtype("f8"),
    "is_first": np.dtype("?"),
    "is_last": np.dtype("?"),
    "terminated": np.dtype("?"),
    "truncated": np.dtype("?"),
    "step": np.dtype("i8"),
    "session_step": np.dtype("i8"),
    "episode_index": np.dtype("i8"),
    "env_index": np.dtype("i4"),
    "recorded_at": np.dtype("i8"),
}

DEFAULT_COLUMNS = ("observation", "action", "reward", "is_first", "is_last", "terminated", "truncated")


@dataclass(frozen=True)
class Column:
    """One steps column as a loader gives it."""

    name: str
    dtype: np.dtype  # object for Text
    shape: tuple[int, ...]  # per step
    leaf: Leaf | None = None  # None: a fixed column

    def zeros(self, lead: tuple[int, ...]) -> np.ndarray:
        if self.dtype == np.dtype(object):
            out = np.empty(lead + self.shape, dtype=object)
            out.fill("")
            return out
        return np.zeros(lead + self.shape, dtype=self.dtype)

    def decode(self, arr: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """The column's values of one read (a row group) as numpy."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        n = len(arr)
        if self.leaf is None:
            if pa.types.is_timestamp(arr.type):
                arr = arr.cast(pa.int64())
            return arr.to_numpy(zero_copy_only=False).astype(self.dtype, copy=False)
        lf = self.leaf
        if lf.kind == "text":
            return np.array([("" if v is None else v) for v in arr.to_pylist()], dtype=object)
        numel = int(np.prod(self.shape)) if self.shape else 1
        if arr.null_count:
            return self._decode_slow(arr, n)
        if pa.types.is_binary(arr.type) or pa.types.is_large_binary(arr.type):
            off = np.frombuffer(arr.buffers()[1], dtype=np.int32 if pa.types.is_binary(arr.type) else np.int64)
            off = off[arr.offset : arr.offset + n + 1]
            width = numel * self.dtype.itemsize
            data = np.frombuffer(arr.buffers()[2], dtype=np.uint8)[off[0] : off[-1]]
            if len(data) != n * width or (n and not np.all(np.diff(off) == width)):
                return self._decode_slow(arr, n)
            return data.view(self.dtype).reshape((n,) + self.shape).copy()
        if pa.types.is_list(arr.type) or pa.types.is_large_list(arr.type) or pa.types.is_fixed_size_list(arr.type):
            vals = pc.list_flatten(arr).to_numpy(zero_copy_only=False)
            if len(vals) != n * numel:
                raise ValueError(f"loader: column {self.name}: {len(vals)} values for {n} steps of shape {self.shape}")
            return vals.astype(self.dtype).reshape((n,) + self.shape)
        return arr.to_numpy(zero_copy_only=False).astype(self.dtype).reshape((n,) + self.shape)

    def _decode_slow(self, arr: pa.Array, n: int) -> np.ndarray:
        out = self.zeros((n,))
        for i, v in enumerate(arr.to_pylist()):
            if v is None:
                continue
            if isinstance(v, bytes):
                out[i] = np.frombuffer(v, dtype=self.dtype).reshape(self.shape)
            else:
                out[i] = np.asarray(v).astype(self.dtype).reshape(self.shape)
        return out


def _leaf_columns(prefix: str, space_json: bytes) -> dict[str, Leaf]:
    if not space_json:
        return {}
    leaves = compile_spec(spec_from_json(space_json))
    return {(prefix if lf.path == "" else f"{prefix}.{lf.path}"): lf for lf in leaves}


def resolve(
    names: list[str] | tuple[str, ...], observation_space: bytes, action_space: bytes, available: list[str]
) -> list[Column]:
    """The columns that names ask for, in the order asked, each leaf once."""
    leaves = {**_leaf_columns("observation", observation_space), **_leaf_columns("action", action_space)}
    out: list[Column] = []
    seen: set[str] = set()

    def add(c: Column) -> None:
        if c.name not in seen:
            seen.add(c.name)
            out.append(c)

    for name in names:
        if name in FIXED:
            add(Column(name, FIXED[name], ()))
            continue
        matched = [c for c in leaves if c == name or c.startswith(name + ".")]
        if not matched:
            known = ", ".join(list(FIXED) + list(leaves))
            raise ValueError(f"loader: no steps column {name!r}; the columns a loader reads here: {known}")
        for c in matched:
            lf = leaves[c]
            if c not in available:
                raise ValueError(f"loader: the steps files have no typed column {c!r} for leaf {lf.path!r}")
            dtype = np.dtype(object) if lf.kind == "text" else lf.numpy_dtype
            add(Column(c, dtype, tuple(lf.shape), lf))
    return out
