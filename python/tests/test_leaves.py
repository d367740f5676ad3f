"""The Python leaf and blob codec against testdata/wire-vectors.json, the
golden vectors the Go codec is tested against."""

import json
import os
import unittest

import numpy as np
from google.protobuf import json_format

from rlrec import (
    BlobError,
    LeafError,
    SlabError,
    compile_spec,
    decode_blob,
    encode_batch,
    encode_blob,
    encode_value,
    split_lanes,
)
from rlrec._pb import spaces_pb2

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VECTORS = os.path.join(REPO, "testdata", "wire-vectors.json")


def load():
    with open(VECTORS, encoding="utf-8") as f:
        return json.load(f)


def spec_of(d):
    return json_format.ParseDict(d, spaces_pb2.SpaceSpec())


def hexes(bs):
    return [bytes(b).hex() for b in bs]


class WireVectors(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.v = load()

    def test_every_section_is_present(self):
        for k in ("blobs", "bad_blobs", "specs", "bad_slabs"):
            self.assertTrue(self.v[k], k)

    def test_blobs(self):
        for vec in self.v["blobs"]:
            with self.subTest(vec["name"]):
                leaves = [bytes.fromhex(h) for h in vec["leaves_hex"]]
                blob = encode_blob(leaves)
                self.assertEqual(blob.hex(), vec["blob_hex"])
                # The blob is the protobuf encoding of SpaceValue{leaves}.
                self.assertEqual(spaces_pb2.SpaceValue(leaves=leaves).SerializeToString(), blob)
                self.assertEqual(decode_blob(blob), leaves)

    def test_bad_blobs(self):
        for vec in self.v["bad_blobs"]:
            with self.subTest(vec["name"]):
                with self.assertRaises(BlobError):
                    decode_blob(bytes.fromhex(vec["blob_hex"]))

    def test_specs(self):
        for vec in self.v["specs"]:
            with self.subTest(vec["name"]):
                spec = spec_of(vec["spec"])
                leaves = compile_spec(spec)
                self.assertEqual([lf.path for lf in leaves], vec["leaf_paths"])
                n = vec["num_lanes"]
                values = [lane["value"] for lane in vec["lanes"]]
                self.assertEqual(len(values), n)
                # One value: the per-leaf bytes without any header.
                for lane in vec["lanes"]:
                    got = encode_value(spec, lane["value"])
                    self.assertEqual(hexes(got), lane["leaves_hex"])
                    self.assertEqual(encode_blob(got).hex(), lane["blob_hex"])
                # N lanes: the batch slabs events carry.
                slabs = encode_batch(spec, values)
                self.assertEqual(hexes(slabs), vec["batch_leaves_hex"])
                self.assertEqual(encode_blob(slabs).hex(), vec["batch_blob_hex"])
                # And back: the slabs split into the lanes, N from the carrier.
                split = split_lanes(leaves, [bytes.fromhex(h) for h in vec["batch_leaves_hex"]], n)
                self.assertEqual([hexes(lane) for lane in split], [lane["leaves_hex"] for lane in vec["lanes"]])

    def test_bad_slabs(self):
        for vec in self.v["bad_slabs"]:
            with self.subTest(vec["name"]):
                leaves = compile_spec(spec_of(vec["spec"]))
                with self.assertRaises(SlabError):
                    split_lanes(leaves, [bytes.fromhex(h) for h in vec["batch_leaves_hex"]], vec["num_lanes"])


class Values(unittest.TestCase):
    def box(self, dtype, shape):
        return spaces_pb2.SpaceSpec(shape=shape, dtype=dtype, box=spaces_pb2.BoxSpec(unbounded=True))

    def test_numpy_arrays_and_lists_give_the_same_bytes(self):
        spec = self.box(spaces_pb2.DATA_TYPE_FLOAT32, [3])
        a = np.array([1.5, -2.0, 3.25], dtype=np.float32)
        self.assertEqual(encode_value(spec, a), encode_value(spec, [1.5, -2.0, 3.25]))
        self.assertEqual(encode_value(spec, a), [a.astype("<f4").tobytes()])

    def test_big_endian_input_is_written_little_endian(self):
        spec = self.box(spaces_pb2.DATA_TYPE_INT32, [2])
        self.assertEqual(encode_value(spec, np.array([1, 2], dtype=">i4")), [bytes.fromhex("0100000002000000")])

    def test_shape_mismatch_is_refused(self):
        spec = self.box(spaces_pb2.DATA_TYPE_FLOAT32, [2, 2])
        with self.assertRaises(LeafError):
            encode_value(spec, np.zeros(4, dtype=np.float32))

    def test_float_for_integer_space_is_refused(self):
        spec = self.box(spaces_pb2.DATA_TYPE_INT32, [1])
        with self.assertRaises(LeafError):
            encode_value(spec, [1.5])
        with self.assertRaises(LeafError):
            encode_value(spec, [1 << 40])

    def test_dict_in_declared_order_and_exact_keys(self):
        spec = spaces_pb2.SpaceSpec(
            dict=spaces_pb2.DictSpec(
                keys=["z", "a"],
                spaces=[
                    spaces_pb2.SpaceSpec(dtype=spaces_pb2.DATA_TYPE_UINT8, discrete=spaces_pb2.DiscreteSpec(n=9)),
                    spaces_pb2.SpaceSpec(text=spaces_pb2.TextSpec(max_length=8)),
                ],
            )
        )
        self.assertEqual(encode_value(spec, {"a": "hi", "z": 7}), [b"\x07", b"hi"])
        with self.assertRaises(LeafError):
            encode_value(spec, {"a": "hi"})
        with self.assertRaises(LeafError):
            encode_value(spec, {"a": "hi", "z": 1, "y": 2})
        # One lane in a batch: Text gets the u64 count and length header.
        self.assertEqual(
            encode_batch(spec, [{"a": "hi", "z": 7}]),
            [b"\x07", (1).to_bytes(8, "little") + (2).to_bytes(8, "little") + b"hi"],
        )

    def test_multibinary_is_one_byte_per_element(self):
        spec = spaces_pb2.SpaceSpec(
            shape=[4], dtype=spaces_pb2.DATA_TYPE_INT8, multi_binary=spaces_pb2.MultiBinarySpec()
        )
        self.assertEqual(encode_value(spec, np.array([1, 0, 5, 1], dtype=np.int8)), [b"\x01\x00\x01\x01"])

    def test_float16(self):
        spec = self.box(spaces_pb2.DATA_TYPE_FLOAT16, [2])
        self.assertEqual(encode_value(spec, [1.0, -2.0]), [bytes.fromhex("003c00c0")])


if __name__ == "__main__":
    unittest.main()
