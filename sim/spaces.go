package sim

import (
	"encoding/binary"
	"math"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Space spec constructors for the built-in environments.

func boxSpec(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{
		Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
}

func boxUniform(dt spacesv1.DataType, low, high []byte, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{
		Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Uniform{Uniform: &spacesv1.UniformBounds{Low: low, High: high}}}}}
}

func boxElementwise(dt spacesv1.DataType, low, high []byte, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_Box{
		Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Elementwise{Elementwise: &spacesv1.ElementwiseBounds{Low: low, High: high}}}}}
}

func discreteSpec(dt spacesv1.DataType, n, start int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Dtype: dt, Spec: &spacesv1.SpaceSpec_Discrete{
		Discrete: &spacesv1.DiscreteSpec{N: n, Start: start}}}
}

func multiBinarySpec(dt spacesv1.DataType, shape ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: shape, Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiBinary{
		MultiBinary: &spacesv1.MultiBinarySpec{}}}
}

func multiDiscreteSpec(dt spacesv1.DataType, nvec ...int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Shape: []int64{int64(len(nvec))}, Dtype: dt, Spec: &spacesv1.SpaceSpec_MultiDiscrete{
		MultiDiscrete: &spacesv1.MultiDiscreteSpec{Nvec: nvec}}}
}

func textSpec(minLen, maxLen int64) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Text{
		Text: &spacesv1.TextSpec{MinLength: minLen, MaxLength: maxLen}}}
}

func dictSpec(keys []string, spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{
		Dict: &spacesv1.DictSpec{Keys: keys, Spaces: spaces}}}
}

func tupleSpec(spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Tuple{
		Tuple: &spacesv1.TupleSpec{Spaces: spaces}}}
}

// f32s returns vs as little-endian float32 bytes.
func f32s(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// putF32 stores v little-endian at b[off:].
func putF32(b []byte, off int, v float32) {
	binary.LittleEndian.PutUint32(b[off:], math.Float32bits(v))
}

func getF32(b []byte, off int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
}

// appendTextSlab appends the batch slab of a Text leaf:
// [u64 count][u64 byte_len x count][UTF-8 bodies], little-endian.
func appendTextSlab(dst []byte, texts []string) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(len(texts)))
	for _, s := range texts {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(s)))
	}
	for _, s := range texts {
		dst = append(dst, s...)
	}
	return dst
}

// float16 converts f to IEEE 754 binary16 bits, rounding to nearest even;
// values beyond the half range become infinities.
func float16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case (b>>23)&0xff == 0xff: // inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp >= 0x1f:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := uint32(1) << (shift - 1)
		r := mant >> shift
		if rem := mant & (1<<shift - 1); rem > half || rem == half && r&1 == 1 {
			r++
		}
		return sign | uint16(r)
	}
	r := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || rem == 0x1000 && r&1 == 1 {
		r++ // may carry into the exponent, which is the correct rounding
	}
	return sign | uint16(r)
}
