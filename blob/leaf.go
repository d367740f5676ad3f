package blob

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Number is the set of Go element types AppendElems converts to.
type Number interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~int |
		~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uint |
		~float32 | ~float64
}

// DecodeLeaf decodes the bytes b of one single-lane leaf into a Go value:
//
//	Box, shape []         the scalar of its dtype: bool, uint8, uint16, uint32,
//	                      uint64, int8, int16, int32, int64, float32 (float16
//	                      is widened to float32), float32, float64
//	Box, other shapes     a flat slice of that Go type in row-major order
//	                      ([]float32 for float16; []bool for bool)
//	Discrete              int64: the raw element, sign-extended for signed
//	                      dtypes, zero-extended for unsigned ones (a uint64
//	                      above MaxInt64 wraps to a negative int64); start is
//	                      not added, the wire value already is the action
//	MultiDiscrete         a flat slice of its dtype's Go type
//	MultiBinary           []bool (a byte is true when non-zero)
//	Text                  string (must be valid UTF-8)
//
// A bool element is true when its byte is non-zero. Every result is freshly
// allocated and does not alias b. b must be exactly leaf.Stride bytes for
// fixed leaves (errors wrap ErrLeafSize) and valid UTF-8 for Text (errors
// wrap ErrInvalidUTF8).
func DecodeLeaf(leaf *schema.Leaf, b []byte) (any, error) {
	if err := checkLeaf(leaf, b); err != nil {
		return nil, err
	}
	switch leaf.Kind {
	case schema.KindText:
		return string(b), nil
	case schema.KindMultiBinary:
		return AppendBools(make([]bool, 0, len(b)), b), nil
	case schema.KindDiscrete:
		out, err := AppendElems([]int64(nil), leaf.DType, b)
		if err != nil {
			return nil, err
		}
		return out[0], nil
	}
	scalar := leaf.Kind == schema.KindBox && len(leaf.Shape) == 0
	n := int(leaf.Numel)
	switch leaf.DType {
	case spacesv1.DataType_DATA_TYPE_BOOL:
		out := AppendBools(make([]bool, 0, n), b)
		if scalar {
			return out[0], nil
		}
		return out, nil
	case spacesv1.DataType_DATA_TYPE_UINT8:
		return decodeAs[uint8](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_UINT16:
		return decodeAs[uint16](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_UINT32:
		return decodeAs[uint32](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_UINT64:
		return decodeAs[uint64](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_INT8:
		return decodeAs[int8](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_INT16:
		return decodeAs[int16](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_INT32:
		return decodeAs[int32](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_INT64:
		return decodeAs[int64](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_FLOAT16, spacesv1.DataType_DATA_TYPE_FLOAT32:
		return decodeAs[float32](leaf.DType, b, n, scalar)
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		return decodeAs[float64](leaf.DType, b, n, scalar)
	}
	return nil, fmt.Errorf("%w %s (leaf %q)", ErrDType, schema.DTypeName(leaf.DType), leaf.Path)
}

func decodeAs[T Number](dt spacesv1.DataType, b []byte, n int, scalar bool) (any, error) {
	out, err := AppendElems(make([]T, 0, n), dt, b)
	if err != nil {
		return nil, err
	}
	if scalar {
		return out[0], nil
	}
	return out, nil
}

// checkLeaf checks that b fits leaf: its stride for fixed leaves, valid
// UTF-8 for Text.
func checkLeaf(leaf *schema.Leaf, b []byte) error {
	if leaf.Kind == schema.KindText {
		if !utf8.Valid(b) {
			return fmt.Errorf("%w (leaf %q)", ErrInvalidUTF8, leaf.Path)
		}
		return nil
	}
	if int64(len(b)) != leaf.Stride {
		return fmt.Errorf("%w: %d bytes, %s needs %d (leaf %q)", ErrLeafSize, len(b), leaf, leaf.Stride, leaf.Path)
	}
	return nil
}

// AppendBools appends one bool per byte of b (true when non-zero): the
// elements of a MultiBinary leaf or a bool Box.
func AppendBools(dst []bool, b []byte) []bool {
	for _, c := range b {
		dst = append(dst, c != 0)
	}
	return dst
}

// AppendElems appends the elements of b, little-endian values of dtype dt,
// converted to T with Go conversion rules: integers are sign- or
// zero-extended (or truncated), float16 is widened exactly, floats
// converted to an integer type truncate toward zero (NaN and out-of-range
// results are implementation-defined, as in Go), bool is 0 or 1. It does
// not allocate when dst has room. len(b) must be a multiple of the dtype
// width (else ErrLeafSize); dt must be in the enum and specified (else
// ErrDType).
func AppendElems[T Number](dst []T, dt spacesv1.DataType, b []byte) ([]T, error) {
	size, ok := schema.DTypeSize(dt)
	if !ok {
		return dst, fmt.Errorf("%w %s", ErrDType, schema.DTypeName(dt))
	}
	if len(b)%size != 0 {
		return dst, fmt.Errorf("%w: %d bytes is not a whole number of %s elements", ErrLeafSize, len(b), schema.DTypeName(dt))
	}
	le := binary.LittleEndian
	switch dt {
	case spacesv1.DataType_DATA_TYPE_BOOL:
		for _, c := range b {
			var v T
			if c != 0 {
				v = 1
			}
			dst = append(dst, v)
		}
	case spacesv1.DataType_DATA_TYPE_UINT8:
		for _, c := range b {
			dst = append(dst, T(c))
		}
	case spacesv1.DataType_DATA_TYPE_INT8:
		for _, c := range b {
			dst = append(dst, T(int8(c)))
		}
	case spacesv1.DataType_DATA_TYPE_UINT16:
		for i := 0; i < len(b); i += 2 {
			dst = append(dst, T(le.Uint16(b[i:])))
		}
	case spacesv1.DataType_DATA_TYPE_INT16:
		for i := 0; i < len(b); i += 2 {
			dst = append(dst, T(int16(le.Uint16(b[i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT16:
		for i := 0; i < len(b); i += 2 {
			dst = append(dst, T(Float16ToFloat32(le.Uint16(b[i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_UINT32:
		for i := 0; i < len(b); i += 4 {
			dst = append(dst, T(le.Uint32(b[i:])))
		}
	case spacesv1.DataType_DATA_TYPE_INT32:
		for i := 0; i < len(b); i += 4 {
			dst = append(dst, T(int32(le.Uint32(b[i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT32:
		for i := 0; i < len(b); i += 4 {
			dst = append(dst, T(math.Float32frombits(le.Uint32(b[i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_UINT64:
		for i := 0; i < len(b); i += 8 {
			dst = append(dst, T(le.Uint64(b[i:])))
		}
	case spacesv1.DataType_DATA_TYPE_INT64:
		for i := 0; i < len(b); i += 8 {
			dst = append(dst, T(int64(le.Uint64(b[i:]))))
		}
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		for i := 0; i < len(b); i += 8 {
			dst = append(dst, T(math.Float64frombits(le.Uint64(b[i:]))))
		}
	}
	return dst, nil
}
