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
				out[i] = r[:clockCol()] // and without version 3's surplus_steps, which follows it
			}
			return schema.SessionsSchemaBeforeClock, out
		}, ""},
		{"unknown clock", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) {
			for _, r := range rows {
				last := clockCol()
				r[last] = parquet.ByteArrayValue([]byte("sundial")).Level(0, 0, r[last].Column())
			}
			return schema.SessionsSchema, rows
		}, `clock "sundial" is none of`},
		{"empty clock", func(rows []parquet.Row) (*parquet.Schema, []parquet.Row) {
			for _, r := range rows {
				last := clockCol()
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

// TestVerifyEventLogRows: a logs row of source rlrec/event must hold an
// event, since replay re-emits it as one.
func TestVerifyEventLogRows(t *testing.T) {
	for _, tc := range []struct{ name, message, problem string }{
		{"an event", `ModelConnected {}`, ""},
		{"no event", `ModelConnected {`, "holds no event"},
		{"unknown kind", `Teleported {}`, "holds no event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := sharedRoot(t)
			files, err := filepath.Glob(filepath.Join(root, "logs", "*", "*", "*.parquet"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no logs files: %v", err)
			}
			s, rows, kv := readAll(t, files[0])
			r := rows[0]
			r[2] = parquet.ByteArrayValue([]byte(tc.message)).Level(0, 0, 2)
			r[3] = parquet.ByteArrayValue([]byte(schema.SourceEvent)).Level(0, 1, 3)
			writeAll(t, files[0], s, rows, kv)
			rep, out := verifyRoot(t, root)
			switch {
			case tc.problem == "" && len(rep.Problems) != 0:
				t.Fatalf("problems:\n%s", out)
			case tc.problem != "" && !strings.Contains(out, tc.problem):
				t.Fatalf("output does not say %q:\n%s", tc.problem, out)
			}
		})
	}
}

// clockCol is the column index of the sessions table's clock column.
func clockCol() int {
	c, _ := schema.SessionsSchema.Lookup(schema.ColClock)
	return c.ColumnIndex
}
