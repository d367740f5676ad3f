package schema

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseSpecJSON(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  error // nil: accepted
		paths []string
	}{
		{"box", `{"shape":["2","2"],"dtype":"DATA_TYPE_FLOAT32","box":{"unbounded":true}}`, nil, []string{""}},
		{"numeric shape and enum number", `{"shape":[3],"dtype":2,"box":{}}`, nil, []string{""}},
		{"dict", `{"dict":{"keys":["b","a"],"spaces":[{"text":{}},{"dtype":"DATA_TYPE_INT64","discrete":{"n":"2"}}]}}`, nil, []string{"b", "a"}},
		{"unknown field", `{"shape":["2"],"dtype":"DATA_TYPE_UINT8","box":{},"colour":"red"}`, ErrSpecJSON, nil},
		{"unknown enum name", `{"dtype":"DATA_TYPE_COMPLEX64","box":{}}`, ErrSpecJSON, nil},
		{"unknown enum number", `{"dtype":13,"box":{}}`, ErrUnknownDType, nil},
		{"two kinds", `{"dtype":"DATA_TYPE_UINT8","box":{},"text":{}}`, ErrSpecJSON, nil},
		{"not JSON", `{"dtype":`, ErrSpecJSON, nil},
		{"empty object has no kind", `{}`, ErrNoKind, nil},
		{"invalid spec", `{"dict":{"keys":["a"],"spaces":[]}}`, ErrDictKeys, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := ParseSpecJSON([]byte(tc.in))
			if tc.want != nil {
				if !errors.Is(err, tc.want) || spec != nil {
					t.Fatalf("ParseSpecJSON = %v, %v; want nil, %v", spec, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSpecJSON: %v", err)
			}
			leaves, err := Leaves(spec)
			if err != nil {
				t.Fatal(err)
			}
			if len(leaves) != len(tc.paths) {
				t.Fatalf("%d leaves, want %d", len(leaves), len(tc.paths))
			}
			for i, p := range tc.paths {
				if leaves[i].Path != p {
					t.Errorf("leaf %d path %q, want %q", i, leaves[i].Path, p)
				}
			}
		})
	}
}

func TestSpecJSONIsCompactAndStable(t *testing.T) {
	spec := dict([]string{"z", "a"}, discrete(dtI32, 1000, 0), tuple(multiDiscrete(dtU8, []int64{2}, 4, 4), text()))
	first, err := SpecJSON(spec)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"dict":{"keys":["z","a"],"spaces":[{"dtype":"DATA_TYPE_INT32","discrete":{"n":"1000"}},{"tuple":{"spaces":[{"shape":["2"],"dtype":"DATA_TYPE_UINT8","multiDiscrete":{"nvec":["4","4"]}},{"text":{"maxLength":"64"}}]}}]}}`
	if string(first) != want {
		t.Fatalf("SpecJSON =\n%s\nwant\n%s", first, want)
	}
	for range 20 {
		again, err := SpecJSON(spec)
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("SpecJSON not stable: %s vs %s (%v)", again, first, err)
		}
	}
}

func FuzzParseSpecJSON(f *testing.F) {
	for _, s := range []string{
		`{"shape":["2","2"],"dtype":"DATA_TYPE_FLOAT32","box":{"unbounded":true}}`,
		`{"dict":{"keys":["z","a"],"spaces":[{"dtype":"DATA_TYPE_INT32","discrete":{"n":"1000","start":"0"}},{"tuple":{"spaces":[{"shape":["2"],"dtype":"DATA_TYPE_UINT8","multiDiscrete":{"nvec":["4","4"]}},{"text":{"minLength":"0","maxLength":"64","charset":""}}]}}]}}`,
		`{"shape":["3"],"dtype":"DATA_TYPE_BOOL","multiBinary":{}}`,
		`{"shape":["0"],"dtype":"DATA_TYPE_FLOAT32","box":{"unbounded":true}}`,
		`{"shape":["-1"],"dtype":"DATA_TYPE_FLOAT32","box":{}}`,
		`{"shape":["4611686018427387904","4"],"dtype":"DATA_TYPE_FLOAT64","box":{}}`,
		`{"tuple":{"spaces":[{"tuple":{"spaces":[{"text":{}}]}}]}}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := ParseSpecJSON(b)
		if err != nil {
			return
		}
		layout, err := Compile(spec)
		if err != nil {
			t.Fatalf("ParseSpecJSON accepted a spec Compile rejects: %v", err)
		}
		for _, l := range layout.Leaves {
			if l.Kind != KindText && (l.Stride < 0 || l.Stride > MaxLeafBytes || l.Stride != l.Numel*int64(l.ElemSize)) {
				t.Fatalf("leaf %q: bad stride %d (numel %d size %d)", l.Path, l.Stride, l.Numel, l.ElemSize)
			}
			_ = l.String()
		}
		out, err := SpecJSON(spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSpecJSON(out); err != nil {
			t.Fatalf("SpecJSON output %s does not parse back: %v", out, err)
		}
	})
}
