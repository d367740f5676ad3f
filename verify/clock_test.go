package verify

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// TestVerifySessionsClock: the clock column must hold a known value, and
// a sessions file written before the column existed still verifies.
func TestVerifySessionsClock(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(rows []parquet.Row) (*parquet.Schema, []parquet.Row)
		problem string
	}{
		{"as written", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) { return schema.SessionsSchema, rows }, ""},
		{"before the clock column", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) {
			out := make([]parquet.Row, len(rows))
			for i, r := range rows {
				out[i] = r[:len(r)-1]
			}
			return schema.SessionsSchemaBeforeClock, out
		}, ""},
		{"unknown clock", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) {
			for _, r := range rows {
				last := len(r) - 1
				r[last] = parquet.ByteArrayValue([]byte("sundial")).Level(0, 0, r[last].Column())
			}
			return schema.SessionsSchema, rows
		}, `clock "sundial" is none of`},
		{"empty clock", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) {
			for _, r := range rows {
				last := len(r) - 1
				r[last] = parquet.ByteArrayValue(nil).Level(0, 0, r[last].Column())
			}
			return schema.SessionsSchema, rows
		}, "clock is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := sharedRoot(t)
			files, err := filepath.Glob(filepath.Join(root, "sessions", "*", "*", "*.parquet"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no sessions files: %v", err)
			}
			for _, f := range files {
				s, rows, kv := readAll(t, f)
				if !parquet.EqualNodes(s, schema.SessionsSchema) {
					t.Fatalf("%s: not the sessions schema", f)
				}
				s, rows = tc.edit(rows)
				writeAll(t, f, s, rows, kv)
			}
			rep, out := verifyRoot(t, root)
			if tc.problem == "" {
				if len(rep.Problems) != 0 {
					t.Fatalf("problems:\n%s", out)
				}
				return
			}
			if !strings.Contains(out, tc.problem) {
				t.Fatalf("output does not say %q:\n%s", tc.problem, out)
			}
		})
	}
}
