package schema

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEscapeKey(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"plain key unchanged", "pos", "pos"},
		{"digits unchanged", "0", "0"},
		{"dot", "pos.x", "pos%2Ex"},
		{"percent", "50%", "50%25"},
		{"several dots", "a.b.c", "a%2Eb%2Ec"},
		{"only dots", "..", "%2E%2E"},
		{"percent before hex digits", "%2E", "%252E"},
		{"percent and dot", "%.", "%25%2E"},
		{"other punctuation unchanged", "a/b c=d:e", "a/b c=d:e"},
		{"utf-8 unchanged", "höhe.m", "höhe%2Em"},
		{"control bytes unchanged", "a\x00\n", "a\x00\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := EscapeKey(tc.key)
			if got != tc.want {
				t.Fatalf("EscapeKey(%q) = %q, want %q", tc.key, got, tc.want)
			}
			back, err := UnescapeKey(got)
			if err != nil || back != tc.key {
				t.Fatalf("UnescapeKey(%q) = %q, %v; want %q", got, back, err, tc.key)
			}
		})
	}
}

func TestEscapeKeyPlainDoesNotAllocate(t *testing.T) {
	key := "observation_key"
	if n := testing.AllocsPerRun(100, func() { _ = EscapeKey(key) }); n != 0 {
		t.Fatalf("EscapeKey of a plain key allocates %v times", n)
	}
}

func TestSplitPath(t *testing.T) {
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"root", "", nil},
		{"one key", "pos", []string{"pos"}},
		{"nested", "obs.0.image", []string{"obs", "0", "image"}},
		{"escaped dot", "pos%2Ex", []string{"pos.x"}},
		{"escaped percent", "50%25", []string{"50%"}},
		{"escaped inside nesting", "obs.a%2Eb%2Ec.1", []string{"obs", "a.b.c", "1"}},
		{"escaped percent before hex", "%252E", []string{"%2E"}},
		{"only escapes", "%2E%2E.%25", []string{"..", "%"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitPath(tc.path)
			if err != nil {
				t.Fatalf("SplitPath(%q): %v", tc.path, err)
			}
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Fatalf("SplitPath(%q) = %q, want %q", tc.path, got, tc.want)
			}
			if back := JoinPath(got...); back != tc.path {
				t.Fatalf("JoinPath(%q) = %q, want %q", got, back, tc.path)
			}
		})
	}
}

func TestSplitPathErrors(t *testing.T) {
	tests := []struct {
		name string
		path string
	}{
		{"leading dot", ".a"},
		{"trailing dot", "a."},
		{"doubled dot", "a..b"},
		{"only a dot", "."},
		{"bare percent", "50%"},
		{"percent at the end of a segment", "a%.b"},
		{"short escape", "a%2"},
		{"lower-case escape", "pos%2ex"},
		{"other escape", "a%41"},
		{"escaped slash", "a%2F"},
		{"non-hex escape", "a%zz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SplitPath(tc.path)
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("SplitPath(%q) = %q, %v; want ErrBadPath", tc.path, got, err)
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the path %q", err, tc.path)
			}
		})
	}
}

func TestUnescapeKeyErrors(t *testing.T) {
	tests := []struct {
		name, seg string
	}{
		{"unescaped dot", "a.b"},
		{"bare percent", "%"},
		{"one hex digit", "%2"},
		{"lower-case hex", "%2e"},
		{"other byte", "%20"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := UnescapeKey(tc.seg); !errors.Is(err, ErrBadPath) {
				t.Fatalf("UnescapeKey(%q) = %q, %v; want ErrBadPath", tc.seg, got, err)
			}
		})
	}
}

func TestColumnName(t *testing.T) {
	tests := []struct {
		name string
		side string
		keys []string
		want string
	}{
		{"single-leaf observation", ColObservation, nil, "observation"},
		{"single-leaf action", ColAction, nil, "action"},
		{"plain keys", ColObservation, []string{"obs", "0", "image"}, "observation.obs.0.image"},
		{"dotted key", ColObservation, []string{"pos.x"}, "observation.pos%2Ex"},
		{"percent key", ColAction, []string{"50%"}, "action.50%25"},
		{"nested dotted keys", ColObservation, []string{"a.b.c", "1", "%2E"}, "observation.a%2Eb%2Ec.1.%252E"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ColumnName(tc.side, JoinPath(tc.keys...))
			if got != tc.want {
				t.Fatalf("ColumnName = %q, want %q", got, tc.want)
			}
			side, keys, err := SplitColumnName(got)
			if err != nil || side != tc.side || !slices.Equal(keys, tc.keys) {
				t.Fatalf("SplitColumnName(%q) = %q, %q, %v; want %q, %q", got, side, keys, err, tc.side, tc.keys)
			}
		})
	}
}

func TestSplitColumnNameErrors(t *testing.T) {
	tests := []struct {
		name, column string
	}{
		{"fixed column", ColReward},
		{"blob column", ColObservationBlob},
		{"empty", ""},
		{"side and separator only", "observation."},
		{"unknown side", "state.pos"},
		{"side without separator", "observationpos"},
		{"bad escape", "action.a%2e"},
		{"empty segment", "observation.a..b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if side, keys, err := SplitColumnName(tc.column); !errors.Is(err, ErrBadPath) {
				t.Fatalf("SplitColumnName(%q) = %q, %q, %v; want ErrBadPath", tc.column, side, keys, err)
			}
		})
	}
}

// TestDottedKeysCompile checks that Dict keys holding "." and "%" compile
// to leaf paths that name one leaf each and split back into the keys.
func TestDottedKeysCompile(t *testing.T) {
	spec := dict([]string{"pos.x", "50%", "a.b.c", "a", "n"},
		box(dtF32, 2), discrete(dtI64, 3, 0), text(),
		dict([]string{"b.c"}, box(dtU8)), // "a" then "b.c": must not collide with "a.b.c"
		tuple(box(dtBool), dict([]string{"%2E"}, box(dtI32)), multiBinary(dtBool, 2)),
	)
	layout, err := Compile(spec)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	want := []struct {
		path string
		keys []string
	}{
		{"pos%2Ex", []string{"pos.x"}},
		{"50%25", []string{"50%"}},
		{"a%2Eb%2Ec", []string{"a.b.c"}},
		{"a.b%2Ec", []string{"a", "b.c"}},
		{"n.0", []string{"n", "0"}},
		{"n.1.%252E", []string{"n", "1", "%2E"}},
		{"n.2", []string{"n", "2"}},
	}
	if len(layout.Leaves) != len(want) {
		t.Fatalf("%d leaves, want %d", len(layout.Leaves), len(want))
	}
	for i, w := range want {
		lf := layout.Leaves[i]
		if lf.Path != w.path {
			t.Errorf("leaf %d path %q, want %q", i, lf.Path, w.path)
		}
		keys, err := SplitPath(lf.Path)
		if err != nil || !slices.Equal(keys, w.keys) {
			t.Errorf("SplitPath(%q) = %q, %v; want %q", lf.Path, keys, err, w.keys)
		}
	}
}

// vectorLeafPaths returns the leaf paths of the shared wire vectors.
func vectorLeafPaths(tb testing.TB) []string {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "wire-vectors.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var v struct {
		Specs []struct {
			LeafPaths []string `json:"leaf_paths"`
		} `json:"specs"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	var paths []string
	for _, s := range v.Specs {
		paths = append(paths, s.LeafPaths...)
	}
	return paths
}

// FuzzSplitPath checks the leaf path codec both ways. s taken as a path:
// SplitPath never panics, fails only with ErrBadPath, and what it accepts
// joins back to s byte for byte (one spelling per key list). s taken as a
// list of keys separated by NUL: the joined path splits back into the
// same keys, and so does its typed column name.
func FuzzSplitPath(f *testing.F) {
	for _, p := range vectorLeafPaths(f) {
		f.Add(p)
	}
	for _, s := range []string{
		"pos%2Ex", "50%25", "a%2Eb%2Ec", "obs.0.image", "%252E", "%2e", "%", "%2", "a..b", ".", "a.",
		"pos.x\x0050%\x00a.b.c", "a\x00b.c", "%2E\x00..\x00%", "\x00", "observation.a",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		segs, err := SplitPath(s)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("SplitPath(%q) error %v, want ErrBadPath", s, err)
			}
		} else {
			if back := JoinPath(segs...); back != s {
				t.Fatalf("JoinPath(SplitPath(%q)) = %q", s, back)
			}
			for _, seg := range segs {
				if seg == "" {
					t.Fatalf("SplitPath(%q) gave an empty segment: %q", s, segs)
				}
			}
		}

		var keys []string
		for _, k := range strings.Split(s, "\x00") {
			if k != "" { // Dict keys are non-empty
				keys = append(keys, k)
			}
		}
		path := JoinPath(keys...)
		got, err := SplitPath(path)
		if err != nil || !slices.Equal(got, keys) {
			t.Fatalf("SplitPath(JoinPath(%q)) = %q, %v (path %q)", keys, got, err, path)
		}
		for _, k := range keys {
			if seg := EscapeKey(k); strings.Contains(seg, PathSep) {
				t.Fatalf("EscapeKey(%q) = %q holds the separator", k, seg)
			}
		}
		side, got, err := SplitColumnName(ColumnName(ColAction, path))
		if err != nil || side != ColAction || !slices.Equal(got, keys) {
			t.Fatalf("SplitColumnName(ColumnName(action, %q)) = %q, %q, %v; want %q", path, side, got, err, keys)
		}
	})
}
