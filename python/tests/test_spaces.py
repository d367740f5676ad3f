"""Spaces to rlmesh.spaces.v1 specs."""

import unittest

import numpy as np

from rlrec_capture import LeafError, compile_spec, space_spec
from rlrec_capture import spaces as S
from rlrec_capture._pb import spaces_pb2

DT = spaces_pb2.DataType


class GymLikeBox:
    """A space from elsewhere: read by its class name and attributes only."""

    def __init__(self, low, high, dtype):
        self.low, self.high = np.asarray(low, dtype=dtype), np.asarray(high, dtype=dtype)
        self.shape, self.dtype = self.low.shape, np.dtype(dtype)


GymLikeBox.__name__ = "Box"


class RlmeshLikeText:
    kind = "text"
    min_length, max_length, charset = 1, 32, "abc"


class Spaces(unittest.TestCase):
    def test_box_bounds(self):
        unb = space_spec(S.Box(shape=(4,), dtype=np.float32))
        self.assertEqual(unb.WhichOneof("spec"), "box")
        self.assertTrue(unb.box.unbounded)
        self.assertEqual(list(unb.shape), [4])
        self.assertEqual(unb.dtype, DT.DATA_TYPE_FLOAT32)

        uni = space_spec(S.Box(-1.0, 1.0, (2, 3), np.float32))
        self.assertEqual(uni.box.uniform.low, np.float32(-1).tobytes())
        self.assertEqual(uni.box.uniform.high, np.float32(1).tobytes())

        img = space_spec(S.Box(0, 255, (2, 2, 3), np.uint8))
        self.assertEqual((img.box.uniform.low, img.box.uniform.high), (b"\x00", b"\xff"))

        ew = space_spec(GymLikeBox([0, -1], [1, 2], np.float64))
        self.assertEqual(ew.box.elementwise.low, np.array([0, -1], "<f8").tobytes())
        self.assertEqual(ew.box.elementwise.high, np.array([1, 2], "<f8").tobytes())

    def test_integer_box_with_infinite_bounds_uses_the_dtype_extremes(self):
        spec = space_spec(S.Box(shape=(2,), dtype=np.int16))
        self.assertEqual(spec.box.uniform.low, np.int16(-32768).tobytes())
        self.assertEqual(spec.box.uniform.high, np.int16(32767).tobytes())

    def test_discrete_multi_text(self):
        d = space_spec(S.Discrete(5, start=-2))
        self.assertEqual((d.discrete.n, d.discrete.start, d.dtype), (5, -2, DT.DATA_TYPE_INT64))
        self.assertEqual(list(d.shape), [])
        md = space_spec(S.MultiDiscrete([[2, 3], [4, 5]], dtype=np.int32))
        self.assertEqual(list(md.multi_discrete.nvec), [2, 3, 4, 5])
        self.assertEqual(list(md.shape), [2, 2])
        mb = space_spec(S.MultiBinary(3))
        self.assertEqual(mb.WhichOneof("spec"), "multi_binary")
        self.assertEqual(list(mb.shape), [3])
        t = space_spec(S.Text(64, min_length=1))
        self.assertEqual((t.text.min_length, t.text.max_length, t.text.charset, t.dtype), (1, 64, "", DT.DATA_TYPE_UINT8))
        r = space_spec(RlmeshLikeText())
        self.assertEqual(r.text.charset, "abc")

    def test_dict_keeps_declared_order_and_tuple_its_index(self):
        spec = space_spec(S.Dict({"z": S.Discrete(3), "a": S.Tuple([S.Box(shape=(2,)), S.Text(8)])}))
        self.assertEqual(list(spec.dict.keys), ["z", "a"])
        self.assertEqual([lf.path for lf in compile_spec(spec)], ["z", "a.0", "a.1"])

    def test_dotted_keys_are_escaped_in_paths(self):
        spec = space_spec(S.Dict({"pos.x": S.Box(shape=(1,)), "100%": S.Discrete(2)}))
        self.assertEqual([lf.path for lf in compile_spec(spec)], ["pos%2Ex", "100%25"])

    def test_a_spec_is_copied(self):
        spec = space_spec(S.Discrete(2))
        self.assertEqual(space_spec(spec), spec)

    def test_unknown_space_is_refused(self):
        with self.assertRaises(LeafError):
            space_spec(object())


if __name__ == "__main__":
    unittest.main()
