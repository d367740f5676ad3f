"""The numpy decoder against the encoder and the wire vectors."""

import json
import os
import unittest

import numpy as np
from google.protobuf import json_format

from rlrec import decode, leaves
from rlrec._pb import spaces_pb2

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "testdata", "wire-vectors.json")


def _box(shape, dtype):
    return spaces_pb2.SpaceSpec(shape=shape, dtype=dtype, box=spaces_pb2.BoxSpec(unbounded=True))


DT = spaces_pb2.DataType


class DecodeTest(unittest.TestCase):
    def test_round_trip(self):
        spec = spaces_pb2.SpaceSpec(
            dict=spaces_pb2.DictSpec(
                keys=["pos.x", "image", "task", "parts"],
                spaces=[
                    _box([3], DT.DATA_TYPE_FLOAT32),
                    _box([2, 2, 3], DT.DATA_TYPE_UINT8),
                    spaces_pb2.SpaceSpec(
                        dtype=DT.DATA_TYPE_UINT8, text=spaces_pb2.TextSpec(min_length=1, max_length=64)
                    ),
                    spaces_pb2.SpaceSpec(
                        tuple=spaces_pb2.TupleSpec(
                            spaces=[
                                spaces_pb2.SpaceSpec(dtype=DT.DATA_TYPE_INT64, discrete=spaces_pb2.DiscreteSpec(n=5)),
                                spaces_pb2.SpaceSpec(shape=[4], multi_binary=spaces_pb2.MultiBinarySpec()),
                                _box([2], DT.DATA_TYPE_FLOAT16),
                            ]
                        )
                    ),
                ],
            )
        )
        value = {
            "pos.x": np.array([0.5, -1.25, 3.0], dtype="<f4"),
            "image": np.arange(12, dtype="u1").reshape(2, 2, 3),
            "task": "pick the red cube — ✓",
            "parts": (np.int64(3), np.array([1, 0, 1, 1], dtype="u1"), np.array([0.1, 65504], dtype="<f2")),
        }
        blob = leaves.encode_blob(leaves.encode_value(spec, value))
        got = decode.decode_value(spec, blob)
        self.assertEqual(list(got), ["pos.x", "image", "task", "parts"])
        np.testing.assert_array_equal(got["pos.x"], value["pos.x"])
        self.assertEqual(got["pos.x"].dtype, np.dtype("<f4"))
        np.testing.assert_array_equal(got["image"], value["image"])
        self.assertEqual(got["image"].shape, (2, 2, 3))
        self.assertEqual(got["task"], value["task"])
        self.assertEqual(got["parts"][0], 3)
        np.testing.assert_array_equal(got["parts"][1], value["parts"][1])
        self.assertEqual(got["parts"][2].tobytes(), value["parts"][2].tobytes())

    def test_spec_from_json(self):
        spec = _box([4], DT.DATA_TYPE_FLOAT32)
        text = json_format.MessageToJson(spec)
        self.assertEqual(decode.spec_from_json(text.encode()), spec)

    def test_bad_blobs(self):
        spec = _box([2], DT.DATA_TYPE_FLOAT32)
        cases = {
            "too few leaves": b"",
            "too many leaves": leaves.encode_blob([b"\0" * 8, b"\0" * 8]),
            "short leaf": leaves.encode_blob([b"\0" * 7]),
            "not a blob": b"\x12\x00",
        }
        for name, blob in cases.items():
            with self.subTest(name):
                with self.assertRaises((leaves.BlobError, leaves.LeafError)):
                    decode.decode_value(spec, blob)

    def test_wire_vectors(self):
        with open(VECTORS) as f:
            vectors = json.load(f)
        n = 0
        for v in vectors["specs"]:
            spec = json_format.ParseDict(v["spec"], spaces_pb2.SpaceSpec())
            for i, lane in enumerate(v["lanes"]):
                with self.subTest(v["name"], lane=i):
                    got = decode.decode_value(spec, bytes.fromhex(lane["blob_hex"]))
                    if "value" in lane:
                        self.assertEqual(_plain(got), lane["value"])
                    raw = [x.hex() for x in leaves.decode_blob(bytes.fromhex(lane["blob_hex"]))]
                    self.assertEqual(raw, lane["leaves_hex"])
                    n += 1
        self.assertGreater(n, 0)


def _plain(v):
    """A decoded value as the vectors write it in JSON."""
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if isinstance(v, (np.ndarray, np.generic)):
        return v.tolist()
    return v


if __name__ == "__main__":
    unittest.main()
