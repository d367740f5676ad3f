package filedeps

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck builds small packages and checks the cycles and stale
// allowlist entries Check reports.
func TestCheck(t *testing.T) {
	cases := []struct {
		name    string
		files   map[string]string
		allowed []Allowed
		want    []string // substrings, one per problem, in order
	}{
		{
			name: "layered",
			files: map[string]string{
				"a.go": "package p\nfunc A() int { return B() }\n",
				"b.go": "package p\nfunc B() int { return 1 }\n",
			},
		},
		{
			name: "mutual pair via method and field",
			files: map[string]string{
				"a.go": "package p\ntype T struct{ n int }\nfunc (t T) A() int { return t.B() }\n",
				"b.go": "package p\nfunc (t T) B() int { return t.n }\n",
			},
			want: []string{"cycle among a.go, b.go: a.go -> b.go -> a.go"},
		},
		{
			name: "three-file cycle",
			files: map[string]string{
				"a.go": "package p\nfunc A() int { return B() }\n",
				"b.go": "package p\nfunc B() int { return C() }\n",
				"c.go": "package p\nvar x = 0\nfunc C() int { if x > 0 { return A() }; return 0 }\n",
			},
			want: []string{"cycle among a.go, b.go, c.go: a.go -> b.go -> c.go -> a.go"},
		},
		{
			name: "allowlisted pair",
			files: map[string]string{
				"a.go": "package p\nfunc A() int { return B() }\n",
				"b.go": "package p\nvar x = 0\nfunc B() int { if x > 0 { return A() }; return 0 }\n",
			},
			allowed: []Allowed{{Pair{"b.go", "a.go"}, "mutual recursion"}},
		},
		{
			name: "stale allowlist entry",
			files: map[string]string{
				"a.go": "package p\nfunc A() int { return B() }\n",
				"b.go": "package p\nfunc B() int { return 1 }\n",
			},
			allowed: []Allowed{{Pair{"a.go", "b.go"}, ""}},
			want:    []string{"has no reason", "no longer depends both ways"},
		},
		{
			name: "test files and locals do not count",
			files: map[string]string{
				"a.go":      "package p\nfunc A() int { x := 1; return x }\n",
				"b.go":      "package p\nfunc B() int { return A() }\n",
				"a_test.go": "package p\nvar _ = B\n",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/p\n\ngo 1.22\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for name, src := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, problems, err := Check(dir, tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != len(tc.want) {
				t.Fatalf("problems = %q, want %d matching %q", problems, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(problems[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i], w)
				}
			}
		})
	}
}
