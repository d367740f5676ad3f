package verify

import (
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Typed values are compared as 64-bit words: booleans 0/1, signed integers
// sign-extended, unsigned ones zero-extended, floats by their bits (so NaN
// payloads compare exactly; float16 is widened to float32 on both sides).

// words appends the elements of a blob.DecodeLeaf result as words.
func words(dst []uint64, v any) []uint64 {
	switch x := v.(type) {
	case float32:
		return append(dst, uint64(math.Float32bits(x)))
	case []float32:
		for _, f := range x {
			dst = append(dst, uint64(math.Float32bits(f)))
		}
		return dst
	case float64:
		return append(dst, math.Float64bits(x))
	case []float64:
		for _, f := range x {
			dst = append(dst, math.Float64bits(f))
		}
		return dst
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice {
		for i := range rv.Len() {
			dst = append(dst, scalarWord(rv.Index(i)))
		}
		return dst
	}
	return append(dst, scalarWord(rv))
}

func scalarWord(rv reflect.Value) uint64 {
	switch rv.Kind() {
	case reflect.Bool:
		if rv.Bool() {
			return 1
		}
		return 0
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint()
	}
	return 0
}

// valueWord turns one column value into a word; unsigned says whether an
// INT32 column holds an unsigned dtype (UINT_8 .. UINT_32).
func valueWord(v parquet.Value, unsigned bool) uint64 {
	switch v.Kind() {
	case parquet.Boolean:
		if v.Boolean() {
			return 1
		}
		return 0
	case parquet.Int32:
		if unsigned {
			return uint64(uint32(v.Int32()))
		}
		return uint64(int64(v.Int32()))
	case parquet.Int64:
		return uint64(v.Int64())
	case parquet.Float:
		return uint64(math.Float32bits(v.Float()))
	case parquet.Double:
		return math.Float64bits(v.Double())
	}
	return 0
}

// formatWord renders a word as a value of the column's element type.
func formatWord(w uint64, tc *typedCol) string {
	switch tc.Kind {
	case parquet.Boolean:
		return strconv.FormatBool(w != 0)
	case parquet.Float:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(w))), 'g', -1, 32)
	case parquet.Double:
		return strconv.FormatFloat(math.Float64frombits(w), 'g', -1, 64)
	}
	if tc.Leaf.Kind != schema.KindDiscrete && !schema.IsSigned(tc.Leaf.DType) && tc.Leaf.DType != spacesv1.DataType_DATA_TYPE_BOOL {
		return strconv.FormatUint(w, 10)
	}
	return strconv.FormatInt(int64(w), 10)
}

func validUTF8(b []byte) bool { return utf8.Valid(b) }
