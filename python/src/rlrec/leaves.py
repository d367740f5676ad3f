"""Values as rlmesh leaves, and leaves as blobs.

A value of a space is one byte string per fundamental leaf (Box, Discrete,
MultiBinary, MultiDiscrete, Text) in canonical pre-order: Dict children in
their declared key order, Tuple children by index. A leaf holds raw
little-endian elements at the dtype's width; MultiBinary one byte (0/1) per
element; Text the bare UTF-8. A batch of N lanes holds, per leaf, the N
lanes' bytes concatenated, and for Text the slab
``[u64 count][u64 byte_len x count][UTF-8 bodies]``. Events carry batches,
even of one lane.

The blob of leaves is the protobuf encoding of ``SpaceValue{leaves}``: for
every leaf, ``0x0a``, the length as a varint, the bytes.

This module is the Python twin of the Go ``blob`` and ``schema`` packages;
``testdata/wire-vectors.json`` pins both to the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._pb import spaces_pb2

__all__ = [
    "BlobError",
    "Leaf",
    "LeafError",
    "SlabError",
    "compile_spec",
    "decode_blob",
    "encode_batch",
    "encode_blob",
    "encode_value",
    "join_lanes",
    "split_lanes",
]

DT = spaces_pb2.DataType

# DataType -> little-endian numpy dtype. Part of the wire format.
NUMPY_DTYPES: dict[int, np.dtype] = {
    DT.DATA_TYPE_BOOL: np.dtype("?"),
    DT.DATA_TYPE_UINT8: np.dtype("u1"),
    DT.DATA_TYPE_UINT16: np.dtype("<u2"),
    DT.DATA_TYPE_UINT32: np.dtype("<u4"),
    DT.DATA_TYPE_UINT64: np.dtype("<u8"),
    DT.DATA_TYPE_INT8: np.dtype("i1"),
    DT.DATA_TYPE_INT16: np.dtype("<i2"),
    DT.DATA_TYPE_INT32: np.dtype("<i4"),
    DT.DATA_TYPE_INT64: np.dtype("<i8"),
    DT.DATA_TYPE_FLOAT16: np.dtype("<f2"),
    DT.DATA_TYPE_FLOAT32: np.dtype("<f4"),
    DT.DATA_TYPE_FLOAT64: np.dtype("<f8"),
}

_INTEGER = {
    DT.DATA_TYPE_UINT8,
    DT.DATA_TYPE_UINT16,
    DT.DATA_TYPE_UINT32,
    DT.DATA_TYPE_UINT64,
    DT.DATA_TYPE_INT8,
    DT.DATA_TYPE_INT16,
    DT.DATA_TYPE_INT32,
    DT.DATA_TYPE_INT64,
}

_LEAF_TAG = 0x0A  # SpaceValue.leaves: field 1, length-delimited
_U64 = struct.Struct("<Q")


class LeafError(ValueError):
    """A spec rlrec cannot carry, or a value that does not fit its space."""


class BlobError(ValueError):
    """Bytes that are no blob of leaves."""


class SlabError(ValueError):
    """Batch slabs that do not split into the given number of lanes."""


@dataclass(frozen=True)
class Leaf:
    """One fundamental leaf of a space: where it is and how its bytes look."""

    path: str  # dict keys and tuple indices joined by "." ("" at the root)
    kind: str  # "box", "discrete", "multi_binary", "multi_discrete", "text"
    dtype: int  # spaces_pb2.DataType
    shape: tuple[int, ...]  # () for Discrete and Text
    numel: int
    stride: int  # bytes per lane; -1 for Text

    @property
    def numpy_dtype(self) -> np.dtype:
        if self.kind == "multi_binary":
            return np.dtype("u1")
        return NUMPY_DTYPES[self.dtype]


def _escape_key(key: str) -> str:
    return key.replace("%", "%25").replace(".", "%2E")


def _join(path: str, part: str) -> str:
    return part if path == "" else path + "." + part


def compile_spec(spec: spaces_pb2.SpaceSpec) -> list[Leaf]:
    """The leaves of spec in canonical pre-order; LeafError if spec is invalid.

    The rules are the Go schema.Validate rules, so that a spec accepted here
    is accepted by the recorder.
    """
    leaves: list[Leaf] = []
    _walk(spec, "", 0, leaves)
    return leaves


def _walk(spec: spaces_pb2.SpaceSpec, path: str, depth: int, out: list[Leaf]) -> None:
    where = path or "<root>"
    if depth > 32:
        raise LeafError(f"{where}: nested more than 32 levels")
    if spec.dtype not in NUMPY_DTYPES and spec.dtype != DT.DATA_TYPE_UNSPECIFIED:
        raise LeafError(f"{where}: unknown dtype value {spec.dtype}")
    kind = spec.WhichOneof("spec")
    if kind == "dict":
        keys, spaces = list(spec.dict.keys), list(spec.dict.spaces)
        if len(keys) != len(spaces):
            raise LeafError(f"{where}: Dict has {len(keys)} keys and {len(spaces)} spaces")
        if any(k == "" for k in keys):
            raise LeafError(f"{where}: Dict has an empty key")
        if len(set(keys)) != len(keys):
            raise LeafError(f"{where}: Dict has a duplicate key")
        for k, child in zip(keys, spaces):
            _walk(child, _join(path, _escape_key(k)), depth + 1, out)
        return
    if kind == "tuple":
        for i, child in enumerate(spec.tuple.spaces):
            _walk(child, _join(path, str(i)), depth + 1, out)
        return
    if kind is None:
        raise LeafError(f"{where}: space has no kind")
    if kind == "text":
        out.append(Leaf(path, "text", spec.dtype, (), 0, -1))
        return
    shape = tuple(int(d) for d in spec.shape)
    if kind == "box":
        if spec.dtype not in NUMPY_DTYPES:
            raise LeafError(f"{where}: Box has no dtype")
        size = NUMPY_DTYPES[spec.dtype].itemsize
    elif kind == "discrete":
        if spec.dtype not in _INTEGER:
            raise LeafError(f"{where}: Discrete needs an integer dtype")
        if shape:
            raise LeafError(f"{where}: Discrete has shape {list(shape)}, want none")
        size = NUMPY_DTYPES[spec.dtype].itemsize
    elif kind == "multi_discrete":
        if spec.dtype not in _INTEGER:
            raise LeafError(f"{where}: MultiDiscrete needs an integer dtype")
        n = len(spec.multi_discrete.nvec)
        if not shape:
            shape = (n,)
        elif _numel(shape, where) != n:
            raise LeafError(f"{where}: MultiDiscrete shape {list(shape)} does not hold {n} elements")
        size = NUMPY_DTYPES[spec.dtype].itemsize
    elif kind == "multi_binary":
        size = 1
    else:  # pragma: no cover - the oneof has no other members
        raise LeafError(f"{where}: unknown space kind {kind}")
    numel = _numel(shape, where)
    out.append(Leaf(path, kind, spec.dtype, shape, numel, numel * size))


def _numel(shape: tuple[int, ...], where: str) -> int:
    n = 1
    for d in shape:
        if d < 0:
            raise LeafError(f"{where}: negative dimension in shape {list(shape)}")
        n *= d
    if n * 8 > 2**31 - 1:
        raise LeafError(f"{where}: shape {list(shape)} is too large for one leaf")
    return n


# Values -> leaves.


def _leaf_values(spec: spaces_pb2.SpaceSpec, value: Any, path: str, out: list[Any]) -> None:
    """Append value's leaf values in canonical pre-order."""
    kind = spec.WhichOneof("spec")
    where = path or "<root>"
    if kind == "dict":
        if not isinstance(value, Mapping):
            raise LeafError(f"{where}: a Dict space needs a mapping, got {type(value).__name__}")
        keys = list(spec.dict.keys)
        known = set(keys)
        extra = [k for k in value.keys() if k not in known]
        if extra:
            raise LeafError(f"{where}: keys {extra!r} are not in the Dict space")
        for k, child in zip(keys, spec.dict.spaces):
            if k not in value:
                raise LeafError(f"{where}: key {k!r} is missing")
            _leaf_values(child, value[k], _join(path, _escape_key(k)), out)
        return
    if kind == "tuple":
        if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
            raise LeafError(f"{where}: a Tuple space needs a sequence, got {type(value).__name__}")
        if len(value) != len(spec.tuple.spaces):
            raise LeafError(f"{where}: {len(value)} items for a Tuple of {len(spec.tuple.spaces)}")
        for i, (child, v) in enumerate(zip(spec.tuple.spaces, value)):
            _leaf_values(child, v, _join(path, str(i)), out)
        return
    out.append(value)


def _as_array(value: Any) -> np.ndarray:
    # rlmesh's Tensor exposes its bytes as .buffer with .shape and .dtype.
    if not isinstance(value, (np.ndarray, np.generic)) and hasattr(value, "buffer") and hasattr(value, "dtype"):
        arr = np.frombuffer(value.buffer, dtype=np.dtype(str(value.dtype)))
        return arr.reshape(tuple(value.shape))
    return np.asarray(value)


def _leaf_bytes(leaf: Leaf, value: Any) -> bytes:
    where = leaf.path or "<root>"
    if leaf.kind == "text":
        if isinstance(value, bytes):
            try:
                value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise LeafError(f"{where}: Text bytes are not UTF-8") from exc
            return value
        if not isinstance(value, str):
            raise LeafError(f"{where}: a Text space needs a str, got {type(value).__name__}")
        try:
            return value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LeafError(f"{where}: Text is not encodable as UTF-8") from exc
    if isinstance(value, (str, bytes)):
        raise LeafError(f"{where}: a {leaf.kind} space needs numbers, got {type(value).__name__}")
    arr = _as_array(value)
    if arr.dtype == object:
        raise LeafError(f"{where}: value is not numeric")
    if arr.shape != leaf.shape:
        raise LeafError(f"{where}: value has shape {list(arr.shape)}, the space {list(leaf.shape)}")
    if leaf.kind == "multi_binary":
        return (arr != 0).astype("u1").tobytes(order="C")
    want = leaf.numpy_dtype
    if arr.dtype != want:
        if leaf.dtype == DT.DATA_TYPE_BOOL:
            if arr.dtype.kind not in "biu":
                raise LeafError(f"{where}: {arr.dtype} value for a bool space")
            if np.any((arr != 0) & (arr != 1)):
                raise LeafError(f"{where}: a bool space holds only 0 and 1")
            arr = arr.astype(want)
        elif leaf.dtype in _INTEGER and arr.dtype.kind not in "biu":
            raise LeafError(f"{where}: {arr.dtype} value for an integer space")
        else:
            if leaf.dtype in _INTEGER:
                info = np.iinfo(want)
                if arr.size and (arr.min() < info.min or arr.max() > info.max):
                    raise LeafError(f"{where}: value out of the range of {want}")
            arr = arr.astype(want)
    return arr.tobytes(order="C")


def encode_value(spec: spaces_pb2.SpaceSpec, value: Any, leaves: list[Leaf] | None = None) -> list[bytes]:
    """The single-value leaves of value: Text as bare UTF-8, no header.

    leaves is compile_spec(spec), when the caller keeps it.
    """
    if leaves is None:
        leaves = compile_spec(spec)
    values: list[Any] = []
    _leaf_values(spec, value, "", values)
    return [_leaf_bytes(lf, v) for lf, v in zip(leaves, values)]


def encode_batch(spec: spaces_pb2.SpaceSpec, values: Sequence[Any], leaves: list[Leaf] | None = None) -> list[bytes]:
    """The N-lane batch slabs of values (one per lane), as events carry them."""
    if leaves is None:
        leaves = compile_spec(spec)
    return join_lanes(leaves, [encode_value(spec, v, leaves) for v in values])


def join_lanes(leaves: list[Leaf], lanes: Sequence[Sequence[bytes]]) -> list[bytes]:
    """Per-lane leaves, indexed [lane][leaf], to batch slabs, one per leaf."""
    n = len(lanes)
    if n < 1 or n > 1 << 16:
        raise SlabError(f"{n} lanes, want 1 to 65536")
    slabs = []
    for li, lf in enumerate(leaves):
        parts = []
        for i, lane in enumerate(lanes):
            if len(lane) != len(leaves):
                raise SlabError(f"lane {i} has {len(lane)} leaves, the space {len(leaves)}")
            b = lane[li]
            if lf.kind != "text" and len(b) != lf.stride:
                raise SlabError(f"{lf.path or '<root>'}: lane {i} leaf has {len(b)} bytes, want {lf.stride}")
            parts.append(bytes(b))
        if lf.kind == "text":
            header = _U64.pack(n) + b"".join(_U64.pack(len(p)) for p in parts)
            slabs.append(header + b"".join(parts))
        else:
            slabs.append(b"".join(parts))
    return slabs


def split_lanes(leaves: list[Leaf], slabs: Sequence[bytes], n: int) -> list[list[bytes]]:
    """Batch slabs to n lanes of single-value leaves, indexed [lane][leaf].

    n comes from the carrying event, never from the slab sizes; a slab that
    does not fit n lanes is a SlabError.
    """
    if n < 1 or n > 1 << 16:
        raise SlabError(f"{n} lanes, want 1 to 65536")
    if len(slabs) != len(leaves):
        raise SlabError(f"{len(slabs)} slabs for a space of {len(leaves)} leaves")
    lanes: list[list[bytes]] = [[b""] * len(leaves) for _ in range(n)]
    for li, lf in enumerate(leaves):
        slab = bytes(slabs[li])
        where = lf.path or "<root>"
        if lf.kind != "text":
            if len(slab) != n * lf.stride:
                raise SlabError(f"{where}: slab has {len(slab)} bytes, {n} lanes x {lf.stride} is {n * lf.stride}")
            for i in range(n):
                lanes[i][li] = slab[i * lf.stride : (i + 1) * lf.stride]
            continue
        if len(slab) < 8:
            raise SlabError(f"{where}: Text slab has no room for its count")
        (count,) = _U64.unpack_from(slab, 0)
        if count != n:
            raise SlabError(f"{where}: Text header count {count}, {n} lanes")
        off = 8 + 8 * n
        if len(slab) < off:
            raise SlabError(f"{where}: Text slab has no room for {n} lengths")
        for i in range(n):
            (length,) = _U64.unpack_from(slab, 8 + 8 * i)
            if length > len(slab) - off:
                raise SlabError(f"{where}: lane {i} length {length}, {len(slab) - off} bytes left")
            body = slab[off : off + length]
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise SlabError(f"{where}: lane {i} is not UTF-8") from exc
            lanes[i][li] = body
            off += length
        if off != len(slab):
            raise SlabError(f"{where}: {len(slab) - off} bytes after the last Text body")
    return lanes


# Blobs.


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def encode_blob(leaves: Sequence[bytes]) -> bytes:
    """The blob of leaves: the protobuf encoding of SpaceValue{leaves}."""
    return b"".join(bytes([_LEAF_TAG]) + _varint(len(lf)) + bytes(lf) for lf in leaves)


def _uvarint(b: bytes, off: int) -> tuple[int, int]:
    v = 0
    for i in range(10):
        if off + i >= len(b):
            raise BlobError(f"offset {off}: truncated varint")
        c = b[off + i]
        if i == 9 and c > 1:
            raise BlobError(f"offset {off}: varint overflows 64 bits")
        v |= (c & 0x7F) << (7 * i)
        if c < 0x80:
            return v, off + i + 1
    raise BlobError(f"offset {off}: varint overflows 64 bits")  # pragma: no cover


def decode_blob(blob: bytes) -> list[bytes]:
    """The leaves of a blob; BlobError for anything but field-1 byte strings."""
    blob = bytes(blob)
    leaves: list[bytes] = []
    off = 0
    while off < len(blob):
        tag, p = _uvarint(blob, off)
        if tag != _LEAF_TAG:
            raise BlobError(f"offset {off}: field {tag >> 3} wire type {tag & 7}, want field 1 wire type 2")
        length, p = _uvarint(blob, p)
        if length > len(blob) - p:
            raise BlobError(f"offset {off}: leaf length {length}, {len(blob) - p} bytes left")
        leaves.append(blob[p : p + length])
        off = p + length
    return leaves
