"""Recorded values back as numpy arrays, without Go.

A steps row's ``observation_blob`` and ``action_blob`` (and an episodes
row's ``final_observation_blob``) hold one value of the file's observation
or action space as a blob of single-lane leaves (see ``leaves``). The
file's key-value metadata carries the spaces as protojson SpaceSpecs
(``rlrec.observation_space``, ``rlrec.action_space``), so one file alone
decodes::

    spec = spec_from_json(metadata[b"rlrec.observation_space"])
    value = decode_value(spec, row["observation_blob"])

``decode_value`` mirrors the space: a Dict gives a dict in its declared
key order, a Tuple a tuple, a Box a numpy array of its shape and dtype
(exactly the recorded bytes: float16 stays float16), Discrete a numpy
scalar of its dtype, MultiBinary a uint8 array of 0 and 1, MultiDiscrete
an array of its shape, Text a str. A blob that does not fit the space
raises BlobError or LeafError.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from google.protobuf import json_format

from ._pb import spaces_pb2
from .leaves import BlobError, Leaf, LeafError, compile_spec, decode_blob

__all__ = ["decode_leaves", "decode_value", "spec_from_json"]


def spec_from_json(text: str | bytes) -> spaces_pb2.SpaceSpec:
    """The SpaceSpec of a file's rlrec.observation_space or rlrec.action_space."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    return json_format.Parse(text, spaces_pb2.SpaceSpec())


def _leaf_value(leaf: Leaf, b: bytes) -> Any:
    where = leaf.path or "<root>"
    if leaf.kind == "text":
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LeafError(f"{where}: Text leaf is not UTF-8") from exc
    if len(b) != leaf.stride:
        raise LeafError(f"{where}: leaf of {len(b)} bytes, the space's is {leaf.stride}")
    arr = np.frombuffer(b, dtype=leaf.numpy_dtype).copy()
    if leaf.kind == "discrete":
        return arr[0]
    return arr.reshape(leaf.shape)


def decode_leaves(spec: spaces_pb2.SpaceSpec, blob: bytes) -> list[Any]:
    """The leaves of blob as values (arrays, scalars, str), in canonical order."""
    leaves = compile_spec(spec)
    raw = decode_blob(blob)
    if len(raw) != len(leaves):
        raise BlobError(f"blob holds {len(raw)} leaves, the space {len(leaves)}")
    return [_leaf_value(lf, b) for lf, b in zip(leaves, raw)]


def decode_value(spec: spaces_pb2.SpaceSpec, blob: bytes) -> Any:
    """blob decoded into the structure of spec (see the module doc)."""
    values = iter(decode_leaves(spec, blob))
    return _build(spec, values)


def _build(spec: spaces_pb2.SpaceSpec, values: Any) -> Any:
    kind = spec.WhichOneof("spec")
    if kind == "dict":
        return {k: _build(child, values) for k, child in zip(spec.dict.keys, spec.dict.spaces)}
    if kind == "tuple":
        return tuple(_build(child, values) for child in spec.tuple.spaces)
    return next(values)
