package blob

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// AppendJSON appends the JSON rendering of one single-lane value (leaves in
// canonical pre-order, as Decode returns them) to dst:
//
//   - Dict: an object with its keys in declared order; Tuple: an array.
//   - Box, MultiDiscrete, MultiBinary: arrays nested by the leaf's shape;
//     shape [] renders the bare scalar.
//   - Discrete: an integer (the raw element, start not added).
//   - Box bool elements: true or false (any non-zero byte is true).
//   - MultiBinary elements: 0 or 1 (any non-zero byte is 1), the values
//     rlmesh's wire vectors and numpy give them.
//   - Integers render exactly (uint64 as unsigned). An int64 or uint64
//     outside ±(2^53-1), which a reader that parses JSON numbers as
//     doubles (JavaScript, jq, DuckDB's json) would round, renders as a
//     JSON string of its digits (see AppendJSONInt). Floats (float16 widened
//     to float32) in the shortest form that parses back to the same value
//     at their width, e.g. 1.0 renders as 1 and 1e21 as 1e+21. NaN and the
//     infinities, which JSON cannot express as numbers, render as the
//     strings "NaN", "Infinity" and "-Infinity".
//   - Text: a JSON string.
//
// It errors (wrapping ErrLeafCount, ErrLeafSize or ErrInvalidUTF8) when the
// leaves do not fit the layout; dst is then returned unextended. It
// allocates only to grow dst.
func AppendJSON(dst []byte, layout *schema.Layout, leaves [][]byte) ([]byte, error) {
	if len(leaves) != len(layout.Leaves) {
		return dst, fmt.Errorf("%w: %d leaves for a space of %d", ErrLeafCount, len(leaves), len(layout.Leaves))
	}
	for i := range layout.Leaves {
		if err := checkLeaf(&layout.Leaves[i], leaves[i]); err != nil {
			return dst, err
		}
	}
	if len(layout.Leaves) == 0 && layout.Spec.GetDict() == nil && layout.Spec.GetTuple() == nil {
		return dst, fmt.Errorf("%w: layout has no leaves and no Dict or Tuple root", ErrLeafCount)
	}
	next := 0
	return appendSpace(dst, layout.Spec, layout, leaves, &next), nil
}

func appendSpace(dst []byte, spec *spacesv1.SpaceSpec, layout *schema.Layout, leaves [][]byte, next *int) []byte {
	switch s := spec.GetSpec().(type) {
	case *spacesv1.SpaceSpec_Dict:
		dst = append(dst, '{')
		for i, k := range s.Dict.GetKeys() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendSpace(dst, s.Dict.GetSpaces()[i], layout, leaves, next)
		}
		return append(dst, '}')
	case *spacesv1.SpaceSpec_Tuple:
		dst = append(dst, '[')
		for i, child := range s.Tuple.GetSpaces() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendSpace(dst, child, layout, leaves, next)
		}
		return append(dst, ']')
	}
	lf := &layout.Leaves[*next]
	b := leaves[*next]
	*next++
	switch lf.Kind {
	case schema.KindText:
		return AppendJSONString(dst, string(b))
	case schema.KindMultiBinary:
		dst, _ = appendNested(dst, lf.Shape, multiBinaryElem, 1, b)
		return dst
	}
	dst, _ = appendNested(dst, lf.Shape, lf.DType, lf.ElemSize, b)
	return dst
}

// appendNested renders the elements of b as arrays nested by shape and
// returns the rest of b.
func appendNested(dst []byte, shape []int64, dt spacesv1.DataType, size int, b []byte) ([]byte, []byte) {
	if len(shape) == 0 {
		return appendElem(dst, dt, b[:size]), b[size:]
	}
	dst = append(dst, '[')
	for i := int64(0); i < shape[0]; i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		if len(shape) == 1 {
			dst = appendElem(dst, dt, b[:size])
			b = b[size:]
			continue
		}
		dst, b = appendNested(dst, shape[1:], dt, size, b)
	}
	return append(dst, ']'), b
}

// multiBinaryElem stands for the elements of a MultiBinary leaf in
// appendNested and appendElem: bytes rendered 0 or 1. It is no DataType
// value the protocol defines.
const multiBinaryElem spacesv1.DataType = -1

func appendElem(dst []byte, dt spacesv1.DataType, b []byte) []byte {
	le := binary.LittleEndian
	switch dt {
	case multiBinaryElem:
		if b[0] != 0 {
			return append(dst, '1')
		}
		return append(dst, '0')
	case spacesv1.DataType_DATA_TYPE_BOOL:
		if b[0] != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case spacesv1.DataType_DATA_TYPE_UINT8:
		return strconv.AppendUint(dst, uint64(b[0]), 10)
	case spacesv1.DataType_DATA_TYPE_INT8:
		return strconv.AppendInt(dst, int64(int8(b[0])), 10)
	case spacesv1.DataType_DATA_TYPE_UINT16:
		return strconv.AppendUint(dst, uint64(le.Uint16(b)), 10)
	case spacesv1.DataType_DATA_TYPE_INT16:
		return strconv.AppendInt(dst, int64(int16(le.Uint16(b))), 10)
	case spacesv1.DataType_DATA_TYPE_UINT32:
		return strconv.AppendUint(dst, uint64(le.Uint32(b)), 10)
	case spacesv1.DataType_DATA_TYPE_INT32:
		return strconv.AppendInt(dst, int64(int32(le.Uint32(b))), 10)
	case spacesv1.DataType_DATA_TYPE_UINT64:
		return AppendJSONUint(dst, le.Uint64(b))
	case spacesv1.DataType_DATA_TYPE_INT64:
		return AppendJSONInt(dst, int64(le.Uint64(b)))
	case spacesv1.DataType_DATA_TYPE_FLOAT16:
		return AppendJSONFloat(dst, float64(Float16ToFloat32(le.Uint16(b))), 32)
	case spacesv1.DataType_DATA_TYPE_FLOAT32:
		return AppendJSONFloat(dst, float64(math.Float32frombits(le.Uint32(b))), 32)
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		return AppendJSONFloat(dst, math.Float64frombits(le.Uint64(b)), 64)
	}
	return append(dst, "null"...)
}

// MaxJSONSafeInt is the largest integer that every JSON reader holds
// exactly, 2^53-1 (JavaScript's Number.MAX_SAFE_INTEGER): a reader that
// parses JSON numbers as doubles rounds a larger one.
const MaxJSONSafeInt = 1<<53 - 1

// AppendJSONInt appends v as a JSON number when it is within
// ±MaxJSONSafeInt, and otherwise as a JSON string of its decimal digits
// ("9223372036854775807"), so that no reader rounds it. It is the int64
// rendering of every JSON rlrec writes.
func AppendJSONInt(dst []byte, v int64) []byte {
	if v >= -MaxJSONSafeInt && v <= MaxJSONSafeInt {
		return strconv.AppendInt(dst, v, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, '"')
}

// AppendJSONUint is AppendJSONInt for a uint64.
func AppendJSONUint(dst []byte, v uint64) []byte {
	if v <= MaxJSONSafeInt {
		return strconv.AppendUint(dst, v, 10)
	}
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, v, 10)
	return append(dst, '"')
}

// AppendJSONFloat appends f as a JSON number in the shortest form that
// round-trips at bitSize (32 or 64), or, for NaN and the infinities, as the
// strings "NaN", "Infinity" and "-Infinity". It is the float rendering of
// every JSON rlrec writes.
func AppendJSONFloat(dst []byte, f float64, bitSize int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bitSize)
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD, everything
// else as is.
func AppendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
