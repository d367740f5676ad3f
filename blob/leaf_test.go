package blob

import (
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func TestFloat16ToFloat32(t *testing.T) {
	tests := []struct {
		name string
		h    uint16
		want float32
	}{
		{"zero", 0x0000, 0},
		{"one", 0x3c00, 1},
		{"minus two", 0xc000, -2},
		{"third", 0x3555, 0.333251953125},
		{"max", 0x7bff, 65504},
		{"smallest normal", 0x0400, 1.0 / (1 << 14)},
		{"smallest subnormal", 0x0001, 1.0 / (1 << 24)},
		{"negative subnormal", 0x8001, -1.0 / (1 << 24)},
		{"largest subnormal", 0x03ff, 1023.0 / (1 << 24)},
		{"inf", 0x7c00, float32(math.Inf(1))},
		{"minus inf", 0xfc00, float32(math.Inf(-1))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Float16ToFloat32(tc.h); math.Float32bits(got) != math.Float32bits(tc.want) {
				t.Fatalf("Float16ToFloat32(%#04x) = %v, want %v", tc.h, got, tc.want)
			}
		})
	}
	if got := Float16ToFloat32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("negative zero = %v (signbit %v)", got, math.Signbit(float64(got)))
	}
	for _, h := range []uint16{0x7e00, 0x7c01, 0xfe00, 0x7fff} {
		if got := Float16ToFloat32(h); !math.IsNaN(float64(got)) {
			t.Errorf("Float16ToFloat32(%#04x) = %v, want NaN", h, got)
		}
	}
}

// TestFloat16Exhaustive compares every half value with the textbook
// formula, evaluated in float64.
func TestFloat16Exhaustive(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		sign, exp, mant := h>>15, int(h>>10)&0x1f, float64(h&0x3ff)
		var want float64
		switch exp {
		case 0x1f:
			want = math.Inf(1)
			if mant != 0 {
				want = math.NaN()
			}
		case 0:
			want = math.Ldexp(mant, -24)
		default:
			want = math.Ldexp(1+mant/1024, exp-15)
		}
		if sign == 1 {
			want = -want
		}
		got := Float16ToFloat32(h)
		if math.IsNaN(want) {
			if !math.IsNaN(float64(got)) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(float32(want)) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
	}
}

func le16(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

func le32(vs ...uint32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	return b
}

func f32bits(fs ...float32) []byte {
	var b []byte
	for _, f := range fs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func discreteSpec(dt spacesv1.DataType, n, start int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: n, Start: start}}}
}

func multiBinarySpec(shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: spacesv1.DataType_DATA_TYPE_BOOL, Spec: &spacesv1.SpaceSpec_MultiBinary{MultiBinary: &spacesv1.MultiBinarySpec{}}}
}

func multiDiscreteSpec(dt spacesv1.DataType, nvec ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiDiscrete{MultiDiscrete: &spacesv1.MultiDiscreteSpec{Nvec: nvec}}}
}

func TestDecodeLeaf(t *testing.T) {
	const (
		dBool = spacesv1.DataType_DATA_TYPE_BOOL
		dU8   = spacesv1.DataType_DATA_TYPE_UINT8
		dU16  = spacesv1.DataType_DATA_TYPE_UINT16
		dU32  = spacesv1.DataType_DATA_TYPE_UINT32
		dU64  = spacesv1.DataType_DATA_TYPE_UINT64
		dI8   = spacesv1.DataType_DATA_TYPE_INT8
		dI16  = spacesv1.DataType_DATA_TYPE_INT16
		dI32  = spacesv1.DataType_DATA_TYPE_INT32
		dI64  = spacesv1.DataType_DATA_TYPE_INT64
		dF16  = spacesv1.DataType_DATA_TYPE_FLOAT16
		dF32  = spacesv1.DataType_DATA_TYPE_FLOAT32
		dF64  = spacesv1.DataType_DATA_TYPE_FLOAT64
	)
	tests := []struct {
		name string
		spec *spacesv1.SpaceSpec
		b    []byte
		want any
	}{
		{"scalar bool", boxSpec(dBool), []byte{2}, true},
		{"scalar uint8", boxSpec(dU8), []byte{200}, uint8(200)},
		{"scalar uint16", boxSpec(dU16), le16(65535), uint16(65535)},
		{"scalar uint32", boxSpec(dU32), le32(1 << 31), uint32(1 << 31)},
		{"scalar uint64", boxSpec(dU64), le64(math.MaxUint64), uint64(math.MaxUint64)},
		{"scalar int8", boxSpec(dI8), []byte{0xff}, int8(-1)},
		{"scalar int16", boxSpec(dI16), le16(0x8000), int16(math.MinInt16)},
		{"scalar int32", boxSpec(dI32), le32(0xfffffffe), int32(-2)},
		{"scalar int64", boxSpec(dI64), le64(1 << 40), int64(1 << 40)},
		{"scalar float16", boxSpec(dF16), le16(0xc000), float32(-2)},
		{"scalar float32", boxSpec(dF32), f32bits(1.5), float32(1.5)},
		{"scalar float64", boxSpec(dF64), le64(math.Float64bits(-0.25)), float64(-0.25)},
		{"box uint8 2x2", boxSpec(dU8, 2, 2), []byte{1, 2, 3, 4}, []uint8{1, 2, 3, 4}},
		{"box int16", boxSpec(dI16, 2), le16(1, 0xffff), []int16{1, -1}},
		{"box float16", boxSpec(dF16, 3), le16(0x3c00, 0x0001, 0x7c00), []float32{1, 1.0 / (1 << 24), float32(math.Inf(1))}},
		{"box float32", boxSpec(dF32, 2), f32bits(1, -2.5), []float32{1, -2.5}},
		{"box bool", boxSpec(dBool, 3), []byte{0, 1, 7}, []bool{false, true, true}},
		{"box zero numel", boxSpec(dF64, 0), []byte{}, []float64{}},
		{"discrete int64", discreteSpec(dI64, 5, -2), le64(uint64(0xfffffffffffffffe)), int64(-2)},
		{"discrete int8 sign-extends", discreteSpec(dI8, 5, -3), []byte{0xfd}, int64(-3)},
		{"discrete uint8 zero-extends", discreteSpec(dU8, 256, 0), []byte{0xff}, int64(255)},
		{"discrete uint64 wraps", discreteSpec(dU64, 2, 0), le64(math.MaxUint64), int64(-1)},
		{"multidiscrete", multiDiscreteSpec(dI32, 4, 4, 2), le32(3, 0, 1), []int32{3, 0, 1}},
		{"multibinary", multiBinarySpec(3), []byte{1, 0, 1}, []bool{true, false, true}},
		{"text", textSpec(), []byte("héllo"), "héllo"},
		{"empty text", textSpec(), []byte{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := compile(t, tc.spec)
			got, err := DecodeLeaf(&l.Leaves[0], tc.b)
			if err != nil {
				t.Fatalf("DecodeLeaf: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("DecodeLeaf = %#v (%T), want %#v (%T)", got, got, tc.want, tc.want)
			}
		})
	}
}

func TestDecodeLeafErrors(t *testing.T) {
	tests := []struct {
		name string
		spec *spacesv1.SpaceSpec
		b    []byte
		want error
	}{
		{"short box", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 2), make([]byte, 7), ErrLeafSize},
		{"long discrete", discreteSpec(spacesv1.DataType_DATA_TYPE_INT64, 2, 0), make([]byte, 9), ErrLeafSize},
		{"empty scalar", boxSpec(spacesv1.DataType_DATA_TYPE_UINT8), nil, ErrLeafSize},
		{"bad text", textSpec(), []byte{0xc3, 0x28}, ErrInvalidUTF8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := compile(t, tc.spec)
			got, err := DecodeLeaf(&l.Leaves[0], tc.b)
			if !errors.Is(err, tc.want) || got != nil {
				t.Fatalf("DecodeLeaf = %v, %v; want nil, %v", got, err, tc.want)
			}
		})
	}
}

func TestAppendElems(t *testing.T) {
	got, err := AppendElems([]float64{9}, spacesv1.DataType_DATA_TYPE_INT16, le16(1, 0xfffe))
	if err != nil || !reflect.DeepEqual(got, []float64{9, 1, -2}) {
		t.Fatalf("AppendElems[float64] int16 = %v, %v", got, err)
	}
	got32, err := AppendElems([]int64(nil), spacesv1.DataType_DATA_TYPE_FLOAT32, f32bits(2.75, -1.5))
	if err != nil || !reflect.DeepEqual(got32, []int64{2, -1}) {
		t.Fatalf("AppendElems[int64] float32 = %v, %v", got32, err)
	}
	gotB, err := AppendElems([]uint8(nil), spacesv1.DataType_DATA_TYPE_BOOL, []byte{0, 5})
	if err != nil || !reflect.DeepEqual(gotB, []uint8{0, 1}) {
		t.Fatalf("AppendElems[uint8] bool = %v, %v", gotB, err)
	}
	if _, err := AppendElems([]float32(nil), spacesv1.DataType_DATA_TYPE_FLOAT32, make([]byte, 6)); !errors.Is(err, ErrLeafSize) {
		t.Fatalf("ragged bytes: %v, want ErrLeafSize", err)
	}
	for _, dt := range []spacesv1.DataType{0, 13} {
		if _, err := AppendElems([]float32(nil), dt, nil); !errors.Is(err, ErrDType) {
			t.Fatalf("dtype %d: %v, want ErrDType", dt, err)
		}
	}
	dst := make([]float32, 0, 64)
	b := f32bits(make([]float32, 64)...)
	if n := testing.AllocsPerRun(50, func() { _, _ = AppendElems(dst, spacesv1.DataType_DATA_TYPE_FLOAT32, b) }); n != 0 {
		t.Fatalf("AppendElems with capacity: %v allocations", n)
	}
}
