package main

import (
	"encoding/json"
	"testing"
)

func TestFinalInfoJSON(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name string
		in   *string
		want string
	}{
		{"null", nil, `null`},
		{"object", str(`{"b":1,"a":{"x":[true,null,"t"]}}`), `{"a":{"x":[true,null,"t"]},"b":1}`},
		{"floats stay numbers", str(`{"f":2.5,"e":1e+21,"n":"NaN"}`), `{"e":1e+21,"f":2.5,"n":"NaN"}`},
		{"safe integers stay numbers", str(`{"max":9007199254740991,"min":-9007199254740991}`), `{"max":9007199254740991,"min":-9007199254740991}`},
		{"big integers become strings", str(`{"big":9007199254740992,"l":[-9223372036854775808,18446744073709551615]}`),
			`{"big":"9007199254740992","l":["-9223372036854775808","18446744073709551615"]}`},
		{"not JSON stays a string", str(`{"a":`), `"{\"a\":"`},
		{"not an object stays a string", str(`[1,2]`), `"[1,2]"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := json.Marshal(struct {
				F json.RawMessage `json:"f"`
			}{finalInfoJSON(tc.in)})
			if err != nil {
				t.Fatal(err)
			}
			if want := `{"f":` + tc.want + `}`; string(got) != want {
				t.Fatalf("got %s, want %s", got, want)
			}
		})
	}
}

func TestJSONInt(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		want string
	}{{0, `0`}, {-5, `-5`}, {1<<53 - 1, `9007199254740991`}, {1 << 53, `"9007199254740992"`}, {-(1 << 53), `"-9007199254740992"`}} {
		got, err := json.Marshal(jsonInt(tc.v))
		if err != nil || string(got) != tc.want {
			t.Errorf("jsonInt(%d) = %s, %v; want %s", tc.v, got, err, tc.want)
		}
	}
}
