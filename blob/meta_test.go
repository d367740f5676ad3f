package blob

import (
	"math"
	"testing"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func metaMap(kv map[string]*spacesv1.MetaValue) *spacesv1.MetaMap {
	return &spacesv1.MetaMap{Entries: kv}
}

func TestSuccess(t *testing.T) {
	b := func(v bool) *spacesv1.MetaValue { return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{Bool: v}} }
	i := func(v int64) *spacesv1.MetaValue {
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: v}}
	}
	n := func(v float64) *spacesv1.MetaValue {
		return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: v}}
	}
	text := &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: "yes"}}
	for _, tc := range []struct {
		name      string
		info      *spacesv1.MetaMap
		value, ok bool
	}{
		{"nil", nil, false, false},
		{"empty", metaMap(nil), false, false},
		{"is_success-bool", metaMap(map[string]*spacesv1.MetaValue{"is_success": b(true)}), true, true},
		{"is_success-first", metaMap(map[string]*spacesv1.MetaValue{"is_success": b(false), "success": b(true)}), false, true},
		{"success-integer", metaMap(map[string]*spacesv1.MetaValue{"success": i(2)}), true, true},
		{"success-zero-number", metaMap(map[string]*spacesv1.MetaValue{"success": n(0)}), false, true},
		{"text-skipped", metaMap(map[string]*spacesv1.MetaValue{"is_success": text, "success": i(1)}), true, true},
		{"text-only", metaMap(map[string]*spacesv1.MetaValue{"is_success": text}), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, ok := Success(tc.info)
			if v != tc.value || ok != tc.ok {
				t.Errorf("Success = %v, %v; want %v, %v", v, ok, tc.value, tc.ok)
			}
		})
	}
}

func TestMetaJSON(t *testing.T) {
	v := func(k any) *spacesv1.MetaValue {
		switch k := k.(type) {
		case int64:
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{Integer: k}}
		case float64:
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Number{Number: k}}
		case string:
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Text{Text: k}}
		case bool:
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bool{Bool: k}}
		case []byte:
			return &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Bytes{Bytes: k}}
		}
		return &spacesv1.MetaValue{}
	}
	for _, tc := range []struct {
		name string
		m    *spacesv1.MetaMap
		want string
	}{
		{"nil", nil, ""},
		{"empty", metaMap(nil), "{}"},
		{"sorted-scalars", metaMap(map[string]*spacesv1.MetaValue{"b": v(int64(-3)), "a": v(1.5), "c": v("x\"y"), "d": v(true), "e": v([]byte{0xff, 0})}),
			`{"a":1.5,"b":-3,"c":"x\"y","d":true,"e":"/wA="}`},
		// One entry takes a path of its own (no keys to sort).
		{"one-entry", metaMap(map[string]*spacesv1.MetaValue{
			"elapsed_steps": {Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: []*spacesv1.MetaValue{v(int64(3)), v(int64(12))}}}},
		}), `{"elapsed_steps":[3,12]}`},
		{"non-finite", metaMap(map[string]*spacesv1.MetaValue{"n": v(math.NaN()), "p": v(math.Inf(1)), "m": v(math.Inf(-1))}),
			`{"m":"-Infinity","n":"NaN","p":"Infinity"}`},
		{"nested", metaMap(map[string]*spacesv1.MetaValue{
			"l": {Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: []*spacesv1.MetaValue{v(int64(1)), v("a")}}}},
			"m": {Kind: &spacesv1.MetaValue_Map{Map: metaMap(map[string]*spacesv1.MetaValue{"z": v(false)})}},
			"u": v(nil),
		}), `{"l":[1,"a"],"m":{"z":false},"u":null}`},
		// rlmesh 0.1's explicit null (MetaValue.null, field 8), alone and
		// inside a list and a map, writes null as an unset kind does.
		{"explicit-null", metaMap(map[string]*spacesv1.MetaValue{
			"n": {Kind: &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}},
			"l": {Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: []*spacesv1.MetaValue{
				{Kind: &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}}, v(int64(2))}}}},
			"m": {Kind: &spacesv1.MetaValue_Map{Map: metaMap(map[string]*spacesv1.MetaValue{
				"x": {Kind: &spacesv1.MetaValue_Null{}}})}},
		}), `{"l":[null,2],"m":{"x":null},"n":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MetaJSON(tc.m); got != tc.want {
				t.Errorf("MetaJSON = %s, want %s", got, tc.want)
			}
		})
	}
}
