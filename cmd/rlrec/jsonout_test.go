package main

import (
	"bytes"
	"encoding/json"
	"strings"
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

// TestInspectEpisodeJSON: inspect --json nests an episode's final_info as
// an object. The golden file holds the episode only: the rest of the
// report (file sizes) follows the golden ROOT's layout.
func TestInspectEpisodeJSON(t *testing.T) {
	code, out, errOut := runCmd(t, "inspect", goldenRoot, "--session", "golden-all-leaves", "--episode", "ep-000002", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var rep struct {
		Sessions []struct {
			Episodes []map[string]any `json:"episodes"`
		} `json:"sessions"`
	}
	if err := dec.Decode(&rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Sessions) != 1 || len(rep.Sessions[0].Episodes) != 1 {
		t.Fatalf("want one session with one episode:\n%s", out)
	}
	ep := rep.Sessions[0].Episodes[0]
	if _, ok := ep["final_info"].(map[string]any); !ok {
		t.Errorf("final_info is %T, want a JSON object", ep["final_info"])
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(ep); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "inspect-episode-final-info.json", b.String())
}
