"""Spaces to rlmesh.spaces.v1 specs."""

import unittest

import numpy as np

from rlrec import LeafError, compile_spec, space_spec
from rlrec import spaces as S
from rlrec._pb import spaces_pb2

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

    def test_box_infinite_and_missing_bounds_as_rlmesh_writes_them(self):
        # gymnasium's Box(-inf, inf): unbounded.
        free = space_spec(GymLikeBox([-np.inf, -np.inf], [np.inf, np.inf], np.float32))
        self.assertEqual(free.box.WhichOneof("bounds"), "unbounded")
        # One side infinite: the bound is written as the dtype's inf.
        half = space_spec(GymLikeBox([-np.inf, -np.inf], [1.0, 1.0], np.float32))
        self.assertEqual(half.box.uniform.low, np.float32(-np.inf).tobytes())
        self.assertEqual(half.box.uniform.high, np.float32(1).tobytes())
        mixed = space_spec(GymLikeBox([-np.inf, 0.0], [np.inf, 1.0], np.float64))
        self.assertEqual(mixed.box.elementwise.low, np.array([-np.inf, 0], "<f8").tobytes())
        self.assertEqual(mixed.box.elementwise.high, np.array([np.inf, 1], "<f8").tobytes())

        # No bounds at all: left unset.
        class NoBounds:
            shape, dtype = (3,), np.dtype(np.float32)

        NoBounds.__name__ = "Box"
        spec = space_spec(NoBounds())
        self.assertEqual(spec.WhichOneof("spec"), "box")
        self.assertIsNone(spec.box.WhichOneof("bounds"))
        native = space_spec(NativeSpec("box", (2,), "float32", bounds_kind=None))
        self.assertEqual(native.WhichOneof("spec"), "box")
        self.assertIsNone(native.box.WhichOneof("bounds"))

    def test_multi_binary_is_uint8(self):
        class GymMultiBinary:  # gymnasium's MultiBinary declares int8
            n, shape, dtype = 3, (3,), np.dtype(np.int8)

        GymMultiBinary.__name__ = "MultiBinary"
        for space in (S.MultiBinary(3), GymMultiBinary()):
            spec = space_spec(space)
            self.assertEqual((spec.dtype, list(spec.shape)), (DT.DATA_TYPE_UINT8, [3]))

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
        self.assertEqual(
            (t.text.min_length, t.text.max_length, t.text.charset, t.dtype), (1, 64, "", DT.DATA_TYPE_UINT8)
        )
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


class NativeSpec:
    """Stands in for rlmesh's native SpaceSpec (PyO3): kind, shape, dtype and
    _details(), as an env contract served by rlmesh holds them."""

    def __init__(self, kind, shape=(), dtype="float32", **details):
        self.kind, self.shape, self.dtype, self.details = kind, list(shape), dtype, details

    def _details(self):
        return self.details


class Wrapper:
    """Stands in for an rlmesh.spaces wrapper: the native spec under .spec."""

    def __init__(self, native):
        self.spec = native

    def __getattr__(self, name):  # rlmesh's wrappers raise for unknown names
        raise AttributeError(name)


class RlmeshNative(unittest.TestCase):
    def test_native_specs(self):
        obs = NativeSpec(
            "dict",
            dtype="float32",
            spaces={
                "state": NativeSpec("box", (3,), "float32", bounds_kind="uniform", low=-1.0, high=1.0),
                "image": NativeSpec("box", (2, 2, 3), "uint8", bounds_kind="typed_uniform", low=[0], high=[255]),
                "goal": NativeSpec("box", (2,), "float64", bounds_kind="elementwise", low=[0.0, 1.0], high=[2.0, 3.0]),
                "free": NativeSpec("box", (1,), "float32", bounds_kind="unbounded"),
                "task": NativeSpec("text", (), "uint8", min_length=1, max_length=32, charset=""),
                "grid": NativeSpec("multi_discrete", (2, 2), "int64", nvec=[[2, 3], [4, 5]]),
                "bits": NativeSpec("multi_binary", (4,), "int8", size=4),
                "pair": NativeSpec("tuple", (), "float32", spaces=[NativeSpec("discrete", (), "int32", n=4, start=1)]),
            },
        )
        spec = space_spec(Wrapper(obs))
        self.assertEqual(list(spec.dict.keys), ["state", "image", "goal", "free", "task", "grid", "bits", "pair"])
        st, img, goal, free, task, grid, bits, pair = spec.dict.spaces
        self.assertEqual(st.box.uniform.low, np.float32(-1).tobytes())
        self.assertEqual((img.box.uniform.low, img.box.uniform.high, img.dtype), (b"\x00", b"\xff", DT.DATA_TYPE_UINT8))
        self.assertEqual(goal.box.elementwise.high, np.array([2, 3], "<f8").tobytes())
        self.assertTrue(free.box.unbounded)
        self.assertEqual((task.text.max_length, task.dtype), (32, DT.DATA_TYPE_UINT8))
        self.assertEqual((list(grid.shape), list(grid.multi_discrete.nvec)), ([2, 2], [2, 3, 4, 5]))
        self.assertEqual((list(bits.shape), bits.WhichOneof("spec")), ([4], "multi_binary"))
        d = pair.tuple.spaces[0]
        self.assertEqual((d.discrete.n, d.discrete.start, d.dtype), (4, 1, DT.DATA_TYPE_INT32))
        self.assertEqual(len(compile_spec(spec)), 8)


if __name__ == "__main__":
    unittest.main()
