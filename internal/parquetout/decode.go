package parquetout

import (
	"encoding/binary"
	"math"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Leaf bytes are little-endian elements at the dtype's width (docs/rlmesh-wire.md §2);
// the callers have checked len(b) == numel * width.

// decodeInt64 reads one integer element of dtype dt (a Discrete value),
// sign- or zero-extended; uint64 keeps its bits.
func decodeInt64(dt spacesv1.DataType, b []byte) int64 {
	switch dt {
	case spacesv1.DataType_DATA_TYPE_UINT8, spacesv1.DataType_DATA_TYPE_BOOL:
		return int64(b[0])
	case spacesv1.DataType_DATA_TYPE_INT8:
		return int64(int8(b[0]))
	case spacesv1.DataType_DATA_TYPE_UINT16:
		return int64(binary.LittleEndian.Uint16(b))
	case spacesv1.DataType_DATA_TYPE_INT16:
		return int64(int16(binary.LittleEndian.Uint16(b)))
	case spacesv1.DataType_DATA_TYPE_UINT32:
		return int64(binary.LittleEndian.Uint32(b))
	case spacesv1.DataType_DATA_TYPE_INT32:
		return int64(int32(binary.LittleEndian.Uint32(b)))
	case spacesv1.DataType_DATA_TYPE_UINT64, spacesv1.DataType_DATA_TYPE_INT64:
		return int64(binary.LittleEndian.Uint64(b))
	}
	return 0
}

// appendElems appends the elements of leaf bytes b as values of column c.
// For a list (rep == 1) the first element has repetition level 0 and the
// others 1; def is the definition level of a present element. Values carry
// no column index: parquet-go's column writers do not read it.
func appendElems(dst []parquet.Value, c *schema.TypedColumn, b []byte, rep, def int) []parquet.Value {
	start := len(dst)
	dst = appendElemValues(dst, c, b)
	vals := dst[start:]
	for i := range vals {
		vals[i].SetRepetitionLevel(rep)
		vals[i].SetDefinitionLevel(def)
	}
	if len(vals) > 0 {
		vals[0].SetRepetitionLevel(0)
	}
	return dst
}

// appendElemValues appends the elements of b, without levels. Each value
// is stored straight into the slice (see stepsbatch.go: appending a Value
// built in a local costs a store forwarding stall).
func appendElemValues(dst []parquet.Value, c *schema.TypedColumn, b []byte) []parquet.Value {
	var out []parquet.Value
	if c.Leaf.Kind == schema.KindMultiBinary {
		dst, out = extend(dst, len(b))
		boolBytesValues(out, b)
		return dst
	}
	switch c.Leaf.DType {
	case spacesv1.DataType_DATA_TYPE_BOOL:
		dst, out = extend(dst, len(b))
		boolBytesValues(out, b)
	case spacesv1.DataType_DATA_TYPE_UINT8:
		dst, out = extend(dst, len(b))
		for i := range out {
			out[i] = parquet.Int32Value(int32(b[i]))
		}
	case spacesv1.DataType_DATA_TYPE_INT8:
		dst, out = extend(dst, len(b))
		for i := range out {
			out[i] = parquet.Int32Value(int32(int8(b[i])))
		}
	case spacesv1.DataType_DATA_TYPE_UINT16:
		dst, out = extend(dst, len(b)/2)
		for i := range out {
			out[i] = parquet.Int32Value(int32(binary.LittleEndian.Uint16(b[2*i:])))
		}
	case spacesv1.DataType_DATA_TYPE_INT16:
		dst, out = extend(dst, len(b)/2)
		for i := range out {
			out[i] = parquet.Int32Value(int32(int16(binary.LittleEndian.Uint16(b[2*i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_UINT32, spacesv1.DataType_DATA_TYPE_INT32:
		// UINT_32 is stored in INT32 with the same bits.
		dst, out = extend(dst, len(b)/4)
		for i := range out {
			out[i] = parquet.Int32Value(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case spacesv1.DataType_DATA_TYPE_UINT64, spacesv1.DataType_DATA_TYPE_INT64:
		dst, out = extend(dst, len(b)/8)
		for i := range out {
			out[i] = parquet.Int64Value(int64(binary.LittleEndian.Uint64(b[8*i:])))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT16:
		dst, out = extend(dst, len(b)/2)
		for i := range out {
			out[i] = parquet.FloatValue(halfToFloat32(binary.LittleEndian.Uint16(b[2*i:])))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT32:
		dst, out = extend(dst, len(b)/4)
		for i := range out {
			out[i] = parquet.FloatValue(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		dst, out = extend(dst, len(b)/8)
		for i := range out {
			out[i] = parquet.DoubleValue(math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
	return dst
}

// boolBytesValues fills out with a boolean value per byte of b (not 0:
// true), copied from two values made before the loop.
func boolBytesValues(out []parquet.Value, b []byte) {
	vals := [2]parquet.Value{parquet.BooleanValue(false), parquet.BooleanValue(true)}
	b = b[:len(out)]
	for i := range b {
		out[i] = vals[b2i(b[i] != 0)]
	}
}

// halfToFloat32 widens an IEEE 754 half-precision value exactly, keeping
// signed zeros, subnormals, infinities and NaN payloads.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0:
		// Subnormal: normalise.
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		frac &= 0x3ff
		return math.Float32frombits(sign | e<<23 | frac<<13)
	case exp == 0x1f:
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
