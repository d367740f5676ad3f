"""Gymnasium-like spaces as ``rlmesh.spaces.v1.SpaceSpec`` messages.

``space_spec`` maps a space object to the spec the runtime would publish
for it (docs/rlmesh-wire.md §1). It reads spaces by duck typing, so it takes
gymnasium's and gym's spaces, rlmesh's own (the native ``SpaceSpec`` an env
contract holds, read through its ``kind``/``shape``/``dtype`` and
``_details()``, and the ``rlmesh.spaces`` wrappers around it), the small
classes below (for code and tests that have neither), and a ready
``SpaceSpec`` message, which it copies.

- Box: dtype and shape as declared. Bounds, as rlmesh converts gymnasium's
  Box: ``unbounded`` when every low is -inf and every high +inf (a float
  ``Box(-inf, inf)``); ``uniform`` (one scalar each, at the dtype,
  little-endian; an infinite float bound is written as the dtype's ±inf)
  when all lows are equal and all highs are equal; ``elementwise`` (numel
  scalars each) otherwise. A Box that has no bounds (no ``low``/``high``,
  or a native spec whose ``bounds_kind`` is None) leaves the bounds oneof
  unset, as rlmesh does.
- Discrete: ``n``, ``start`` and the dtype (int64 unless declared).
- MultiBinary: its shape, dtype UINT8 (rlmesh's MultiBinary dtype,
  whatever the space declares: gymnasium's is int8); one byte per element.
- MultiDiscrete: ``nvec`` flattened row-major, the shape of ``nvec``.
- Text: ``min_length``, ``max_length``, the charset as a string of its
  characters (gymnasium's default alphanumeric set is sent as "", generic
  text, as rlmesh converts it), dtype UINT8.
- Dict: children in the space's own key order, which is the declared
  order values are encoded in. Tuple: children by index.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._pb import spaces_pb2
from .leaves import NUMPY_DTYPES, LeafError

__all__ = [
    "Box",
    "Dict",
    "Discrete",
    "MultiBinary",
    "MultiDiscrete",
    "Text",
    "Tuple",
    "dtype_of",
    "space_spec",
]

DT = spaces_pb2.DataType

_BY_NAME = {
    "bool": DT.DATA_TYPE_BOOL,
    "uint8": DT.DATA_TYPE_UINT8,
    "uint16": DT.DATA_TYPE_UINT16,
    "uint32": DT.DATA_TYPE_UINT32,
    "uint64": DT.DATA_TYPE_UINT64,
    "int8": DT.DATA_TYPE_INT8,
    "int16": DT.DATA_TYPE_INT16,
    "int32": DT.DATA_TYPE_INT32,
    "int64": DT.DATA_TYPE_INT64,
    "float16": DT.DATA_TYPE_FLOAT16,
    "float32": DT.DATA_TYPE_FLOAT32,
    "float64": DT.DATA_TYPE_FLOAT64,
}

_KINDS = {
    "Box": "box",
    "Discrete": "discrete",
    "MultiBinary": "multi_binary",
    "MultiDiscrete": "multi_discrete",
    "Text": "text",
    "Dict": "dict",
    "Tuple": "tuple",
}

_GYMNASIUM_DEFAULT_CHARSET = frozenset(string.ascii_letters + string.digits)


def dtype_of(dtype: Any) -> int:
    """The DataType of a numpy dtype, a numpy scalar type or a dtype name."""
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]  # "torch.float32" -> "float32"
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = str(dtype).rsplit(".", 1)[-1]
    name = {"bool_": "bool", "half": "float16", "float": "float32", "double": "float64"}.get(name, name)
    if name not in _BY_NAME:
        raise LeafError(f"dtype {dtype!r} has no rlmesh DataType")
    return _BY_NAME[name]


def _kind(space: Any) -> str:
    kind = getattr(space, "kind", None)  # rlmesh spaces say what they are
    if isinstance(kind, str) and kind in _KINDS.values():
        return kind
    for cls in type(space).__mro__:
        if cls.__name__ in _KINDS:
            return _KINDS[cls.__name__]
    raise LeafError(
        f"{type(space).__module__}.{type(space).__name__} is no space rlrec knows "
        "(Box, Discrete, MultiBinary, MultiDiscrete, Text, Dict, Tuple)"
    )


def space_spec(space: Any) -> spaces_pb2.SpaceSpec:
    """The rlmesh.spaces.v1.SpaceSpec of space (see the module doc)."""
    return _spec(space, "", 0)


def _spec(space: Any, path: str, depth: int) -> spaces_pb2.SpaceSpec:
    where = path or "<root>"
    if depth > 32:
        raise LeafError(f"{where}: spaces nested more than 32 levels")
    if isinstance(space, spaces_pb2.SpaceSpec):
        out = spaces_pb2.SpaceSpec()
        out.CopyFrom(space)
        return out
    native = _rlmesh_native(space)
    if native is not None:
        return _from_rlmesh(native, path, depth)
    kind = _kind(space)
    spec = spaces_pb2.SpaceSpec()
    if kind == "dict":
        children = space.spaces
        if not isinstance(children, Mapping):
            raise LeafError(f"{where}: Dict space without a mapping of spaces")
        spec.dict.SetInParent()
        for key, child in children.items():
            if not isinstance(key, str) or key == "":
                raise LeafError(f"{where}: Dict key {key!r} must be a non-empty str")
            spec.dict.keys.append(key)
            spec.dict.spaces.append(_spec(child, f"{path}.{key}" if path else key, depth + 1))
        return spec
    if kind == "tuple":
        spec.tuple.SetInParent()
        for i, child in enumerate(space.spaces):
            spec.tuple.spaces.append(_spec(child, f"{path}.{i}" if path else str(i), depth + 1))
        return spec
    if kind == "text":
        spec.dtype = DT.DATA_TYPE_UINT8
        spec.text.min_length = int(getattr(space, "min_length", 1))
        spec.text.max_length = int(space.max_length)
        spec.text.charset = _charset(space)
        return spec
    if kind == "discrete":
        spec.dtype = dtype_of(getattr(space, "dtype", None) or "int64")
        spec.discrete.n = int(space.n)
        spec.discrete.start = int(getattr(space, "start", 0))
        return spec
    if kind == "multi_discrete":
        nvec = np.asarray(space.nvec, dtype=np.int64)
        spec.dtype = dtype_of(getattr(space, "dtype", None) or "int64")
        spec.shape.extend(int(d) for d in nvec.shape)
        spec.multi_discrete.nvec.extend(int(v) for v in nvec.reshape(-1))
        return spec
    if kind == "multi_binary":
        # rlmesh's MultiBinaryBuilder ignores the space's dtype: uint8.
        spec.dtype = DT.DATA_TYPE_UINT8
        spec.shape.extend(_shape(space))
        spec.multi_binary.SetInParent()
        return spec
    # Box
    spec.dtype = dtype_of(getattr(space, "dtype", None) or "float32")
    shape = _shape(space)
    spec.shape.extend(shape)
    _box_bounds(spec, space, shape)
    return spec


def _rlmesh_native(space: Any) -> Any:
    """rlmesh's native SpaceSpec behind space (itself, or a rlmesh.spaces
    wrapper's .spec), or None. An env contract served by rlmesh holds these:
    kind, shape and dtype properties and a _details() dict."""
    for cand in (space, getattr(space, "spec", None)):
        if cand is None:
            continue
        try:
            kind, details = getattr(cand, "kind", None), getattr(cand, "_details", None)
        except Exception:
            continue
        if isinstance(kind, str) and callable(details):
            return cand
    return None


def _from_rlmesh(native: Any, path: str, depth: int) -> spaces_pb2.SpaceSpec:
    where = path or "<root>"
    kind, details = native.kind, native._details()
    spec = spaces_pb2.SpaceSpec()
    dtype = str(native.dtype or "")
    if kind in ("dict", "tuple"):
        children = details.get("spaces") or ({} if kind == "dict" else [])
        if kind == "dict":
            spec.dict.SetInParent()
            for key, child in children.items():
                spec.dict.keys.append(str(key))
                spec.dict.spaces.append(_spec(child, f"{path}.{key}" if path else str(key), depth + 1))
        else:
            spec.tuple.SetInParent()
            for i, child in enumerate(children):
                spec.tuple.spaces.append(_spec(child, f"{path}.{i}" if path else str(i), depth + 1))
        return spec
    if kind not in _KINDS.values():
        raise LeafError(f"{where}: rlmesh space of kind {kind!r}")
    if kind == "text":
        spec.dtype = dtype_of(dtype) if dtype in _BY_NAME else DT.DATA_TYPE_UINT8
        spec.text.min_length = int(details.get("min_length", 1))
        spec.text.max_length = int(details["max_length"])
        spec.text.charset = str(details.get("charset") or "")
        return spec
    spec.dtype = dtype_of(dtype)
    shape = [int(d) for d in native.shape]
    if kind == "discrete":
        spec.discrete.n, spec.discrete.start = int(details["n"]), int(details.get("start", 0))
    elif kind == "multi_binary":
        spec.shape.extend(shape)
        spec.multi_binary.SetInParent()
    elif kind == "multi_discrete":
        nvec = np.asarray(details["nvec"], dtype=np.int64).reshape(-1)
        spec.shape.extend(shape or [len(nvec)])
        spec.multi_discrete.nvec.extend(int(v) for v in nvec)
    else:  # box
        spec.shape.extend(shape)
        bounds = details.get("bounds_kind")
        if bounds is None:
            spec.box.SetInParent()  # no bounds: the oneof stays unset
        elif bounds == "unbounded":
            spec.box.unbounded = True
        else:
            dt = NUMPY_DTYPES[spec.dtype]
            lo = _typed_bound(np.asarray(details["low"]).reshape(-1), dt)
            hi = _typed_bound(np.asarray(details["high"]).reshape(-1), dt)
            if bounds in ("uniform", "typed_uniform"):
                spec.box.uniform.low, spec.box.uniform.high = lo[:1].tobytes(), hi[:1].tobytes()
            else:
                spec.box.elementwise.low, spec.box.elementwise.high = lo.tobytes(), hi.tobytes()
    return spec


def _shape(space: Any) -> list[int]:
    shape = getattr(space, "shape", None)
    if shape is None:
        n = getattr(space, "n", None)
        shape = (n,) if isinstance(n, int) else n
    if shape is None:
        raise LeafError(f"{type(space).__name__} space without a shape")
    return [int(d) for d in shape]


def _box_bounds(spec: spaces_pb2.SpaceSpec, space: Any, shape: list[int]) -> None:
    if getattr(space, "bounds_kind", None) == "unbounded":
        spec.box.unbounded = True
        return
    low, high = getattr(space, "low", None), getattr(space, "high", None)
    if low is None or high is None:
        spec.box.SetInParent()  # no bounds: the oneof stays unset
        return
    dt = NUMPY_DTYPES[spec.dtype]
    lo = np.broadcast_to(np.asarray(low), shape)
    hi = np.broadcast_to(np.asarray(high), shape)
    if lo.size == 0:
        spec.box.unbounded = True
        return
    if dt.kind == "f" and np.all(np.isneginf(lo)) and np.all(np.isposinf(hi)):
        spec.box.unbounded = True
        return
    lo, hi = _typed_bound(lo, dt), _typed_bound(hi, dt)
    flat_lo, flat_hi = lo.reshape(-1), hi.reshape(-1)
    if np.all(flat_lo == flat_lo[0]) and np.all(flat_hi == flat_hi[0]):
        spec.box.uniform.low = flat_lo[:1].tobytes()
        spec.box.uniform.high = flat_hi[:1].tobytes()
    else:
        spec.box.elementwise.low = np.ascontiguousarray(lo).tobytes()
        spec.box.elementwise.high = np.ascontiguousarray(hi).tobytes()


def _typed_bound(a: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Bounds at the space's dtype; an infinite bound of an integer or bool
    Box is its dtype's extreme."""
    if dt.kind == "f" or a.dtype.kind != "f":
        return a.astype(dt)
    if np.any(np.isnan(a)):
        raise LeafError("Box bound is NaN")
    lo, hi = (0, 1) if dt.kind == "b" else (np.iinfo(dt).min, np.iinfo(dt).max)
    out = np.empty(a.shape, dtype=dt)
    flat, src = out.reshape(-1), a.reshape(-1)
    for i, v in enumerate(src):
        flat[i] = lo if v <= lo else hi if v >= hi else int(v)
    return out


def _charset(space: Any) -> str:
    chars: Any = None
    for attr in ("charset", "characters", "character_list", "character_set"):
        chars = getattr(space, attr, None)
        if chars is not None:
            break
    if chars is None:
        return ""
    if isinstance(chars, str):
        text = chars
    elif isinstance(chars, (set, frozenset)):
        text = "".join(sorted(str(c) for c in chars))
    else:
        text = "".join(str(c) for c in chars)
    if frozenset(text) == _GYMNASIUM_DEFAULT_CHARSET:
        return ""
    return text


# Small space classes with gymnasium's attribute names, for programs and
# tests without gymnasium. They describe; they do not sample or check.


class Box:
    def __init__(
        self, low: Any = -np.inf, high: Any = np.inf, shape: Sequence[int] | None = None, dtype: Any = np.float32
    ):
        self.dtype = np.dtype(dtype)
        if shape is None:
            shape = np.shape(low) if np.ndim(low) else np.shape(high)
        self.shape = tuple(int(d) for d in shape)
        self.low = np.broadcast_to(np.asarray(low), self.shape)
        self.high = np.broadcast_to(np.asarray(high), self.shape)


class Discrete:
    def __init__(self, n: int, start: int = 0, dtype: Any = np.int64):
        self.n, self.start, self.dtype = int(n), int(start), np.dtype(dtype)
        self.shape = ()


class MultiBinary:
    def __init__(self, n: int | Sequence[int]):
        self.n = n
        self.shape = (int(n),) if isinstance(n, int) else tuple(int(d) for d in n)
        self.dtype = np.dtype(np.uint8)


class MultiDiscrete:
    def __init__(self, nvec: Any, dtype: Any = np.int64):
        self.nvec = np.asarray(nvec, dtype=np.int64)
        self.shape = self.nvec.shape
        self.dtype = np.dtype(dtype)


class Text:
    def __init__(self, max_length: int, min_length: int = 1, charset: str | None = None):
        self.max_length, self.min_length = int(max_length), int(min_length)
        self.charset = charset


class Dict:
    def __init__(self, spaces: Mapping[str, Any] | None = None, **kwargs: Any):
        self.spaces = dict(spaces or {}, **kwargs)  # declared order, not sorted


class Tuple:
    def __init__(self, spaces: Sequence[Any]):
        self.spaces = tuple(spaces)
