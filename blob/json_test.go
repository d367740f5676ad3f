package blob

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func dictSpec(keys []string, spaces ...*spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	return &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{Keys: keys, Spaces: spaces}}}
}

func TestAppendJSON(t *testing.T) {
	f32 := spacesv1.DataType_DATA_TYPE_FLOAT32
	tests := []struct {
		name   string
		spec   *spacesv1.SpaceSpec
		leaves [][]byte
		want   string
	}{
		{"cartpole obs", boxSpec(f32, 4), [][]byte{f32bits(0.1, -1, 0.03125, 1e21)}, `[0.1,-1,0.03125,1e+21]`},
		{"scalar", boxSpec(f32), [][]byte{f32bits(2.5)}, `2.5`},
		{"non-finite floats", boxSpec(f32, 3), [][]byte{f32bits(float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)))}, `["NaN","Infinity","-Infinity"]`},
		{"float64 shortest", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT64, 2), [][]byte{le64(math.Float64bits(0.1), math.Float64bits(math.Copysign(0, -1)))}, `[0.1,-0]`},
		{"float16 widened", boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT16, 2), [][]byte{le16(0x3555, 0x7e00)}, `[0.33325195,"NaN"]`},
		{"nested 2x0", boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 2, 0), [][]byte{{}}, `[[],[]]`},
		{"nested 2x1x2 int8", boxSpec(spacesv1.DataType_DATA_TYPE_INT8, 2, 1, 2), [][]byte{{1, 0xff, 0x80, 0x7f}}, `[[[1,-1]],[[-128,127]]]`},
		{"uint64 max", boxSpec(spacesv1.DataType_DATA_TYPE_UINT64), [][]byte{le64(math.MaxUint64)}, `"18446744073709551615"`},
		{"uint64 safe", boxSpec(spacesv1.DataType_DATA_TYPE_UINT64, 2), [][]byte{le64(1<<53-1, 1<<53)}, `[9007199254740991,"9007199254740992"]`},
		{"int64 bounds", boxSpec(spacesv1.DataType_DATA_TYPE_INT64, 5), [][]byte{le64(uint64(1<<53-1), uint64(1<<53), negU64(1<<53-1), negU64(1<<53), 1<<63)},
			`[9007199254740991,"9007199254740992",-9007199254740991,"-9007199254740992","-9223372036854775808"]`},
		{"int64 discrete", discreteSpec(spacesv1.DataType_DATA_TYPE_INT64, 5, 0), [][]byte{le64(3)}, `3`},
		{"bool box", boxSpec(spacesv1.DataType_DATA_TYPE_BOOL, 2), [][]byte{{0, 3}}, `[false,true]`},
		{"bool scalar", boxSpec(spacesv1.DataType_DATA_TYPE_BOOL), [][]byte{{1}}, `true`},
		{"multibinary 2x2", multiBinarySpec(2, 2), [][]byte{{1, 0, 0, 1}}, `[[1,0],[0,1]]`},
		{"discrete", discreteSpec(spacesv1.DataType_DATA_TYPE_INT16, 5, -2), [][]byte{le16(0xfffe)}, `-2`},
		{"text escapes", textSpec(), [][]byte{[]byte("a\"b\\c\n\x01é\u2028")}, `"a\"b\\c\n\u0001é` + "\u2028" + `"`},
		{
			"dict in declared order",
			dictSpec([]string{"z", "a\"q"}, discreteSpec(spacesv1.DataType_DATA_TYPE_INT32, 9, 0), tupleSpec(multiDiscreteSpec(spacesv1.DataType_DATA_TYPE_UINT8, 4, 4), textSpec())),
			[][]byte{le32(7), {3, 1}, []byte("hi")},
			`{"z":7,"a\"q":[[3,1],"hi"]}`,
		},
		{"empty dict", dictSpec(nil), nil, `{}`},
		{"empty tuple", tupleSpec(), nil, `[]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layout := compile(t, tc.spec)
			got, err := AppendJSON([]byte("x"), layout, tc.leaves)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			if string(got) != "x"+tc.want {
				t.Fatalf("AppendJSON = %s, want x%s", got, tc.want)
			}
			if !json.Valid(got[1:]) {
				t.Fatalf("output %s is not valid JSON", got[1:])
			}
		})
	}
}

func TestAppendJSONErrors(t *testing.T) {
	layout := compile(t, tupleSpec(boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 2), textSpec()))
	tests := []struct {
		name   string
		leaves [][]byte
		want   error
	}{
		{"missing leaf", [][]byte{f32bits(1, 2)}, ErrLeafCount},
		{"short leaf", [][]byte{f32bits(1), {}}, ErrLeafSize},
		{"bad text", [][]byte{f32bits(1, 2), {0xff}}, ErrInvalidUTF8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AppendJSON([]byte("keep"), layout, tc.leaves)
			if !errors.Is(err, tc.want) || string(got) != "keep" {
				t.Fatalf("AppendJSON = %q, %v; want \"keep\", %v", got, err, tc.want)
			}
		})
	}
}

func TestAppendJSONNoAllocs(t *testing.T) {
	layout := compile(t, boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 4))
	leaves := [][]byte{f32bits(0.1, -1, 0.03125, 3)}
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(50, func() { _, _ = AppendJSON(buf, layout, leaves) }); n != 0 {
		t.Fatalf("AppendJSON with capacity: %v allocations", n)
	}
}

func jsonValid(b []byte) bool { return json.Valid(b) }

// negU64 is the two's complement bits of -v.
func negU64(v int64) uint64 { return uint64(-v) }
