package interop

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/rlrec/rlrec/internal/hive"
)

// openDuck opens an in-memory DuckDB database for one test.
func openDuck(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatalf("open duckdb: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// row is one result row by column name.
type row map[string]any

// query runs q and returns every row, failing the test on any error.
func query(t *testing.T, db *sql.DB, q string, args ...any) []row {
	t.Helper()
	out, err := tryQuery(db, q, args...)
	if err != nil {
		t.Fatalf("duckdb: %v\nquery: %s\nargs: %q", err, q, args)
	}
	return out
}

func tryQuery(db *sql.DB, q string, args ...any) ([]row, error) {
	rows, err := db.Query(q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []row
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make(row, len(cols))
		for i, c := range cols {
			r[c] = vals[i]
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// lit quotes s as a SQL string literal. DuckDB's parser ends a query at a
// NUL byte, so ids that may hold one are passed as parameters instead.
func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// ident quotes s as a SQL identifier (typed column names contain dots).
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// scan is the read_parquet call over a glob of one table, with partition
// columns taken from the path.
func scan(glob string, extra ...string) string {
	args := append([]string{lit(glob), "hive_partitioning=true"}, extra...)
	return "read_parquet(" + strings.Join(args, ", ") + ")"
}

// tableGlob is ROOT/<table>/**/*.parquet.
func tableGlob(root, table string) string {
	return filepath.Join(root, table, "**", "*.parquet")
}

// recordingDir is the partition directory of one recording in a table,
// ROOT/<table>/session_id=S/env_id=R, named with the project's encoding.
func recordingDir(root, table string, rec hive.Recording) string {
	return hive.RecordingPartition(table, rec).Dir(root)
}

// recordingGlob is the glob of one recording's files of a table.
func recordingGlob(root, table string, rec hive.Recording) string {
	return filepath.Join(recordingDir(root, table, rec), "**", "*.parquet")
}

// sortedRecordings returns the keys of m by session id, then env id.
func sortedRecordings[V any](m map[hive.Recording]V) []hive.Recording {
	keys := make([]hive.Recording, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	return keys
}

// escape percent-encodes a partition value as docs/format/layout.md specifies: every
// byte outside A-Za-z0-9-_.~ becomes %XX (uppercase). It is written here
// from the contract, not taken from the recorder, so the layout is checked
// independently.
func escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '~':
			b.WriteByte(c)
		case c == '.' && s != "." && s != "..":
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// maxValueLen and hashDigits are the limits of a partition value's
// directory form (docs/format/layout.md, long ids).
const (
	maxValueLen = 200
	hashDigits  = 16
)

// encodeValue is the directory form of a partition value, written from the
// contract like escape: the escaped value, or when that is longer than
// maxValueLen bytes its first bytes (cut before a %XX it would split), "~"
// and the first hashDigits hex digits of the SHA-256 of the whole value.
func encodeValue(s string) string {
	e := escape(s)
	if len(e) <= maxValueLen {
		return e
	}
	cut := maxValueLen
	for i := cut - 1; i >= cut-2; i-- {
		if e[i] == '%' {
			cut = i
			break
		}
	}
	sum := sha256.Sum256([]byte(s))
	return e[:cut] + "~" + hex.EncodeToString(sum[:])[:hashDigits]
}

// scanValue is the value a dataset scan shows for partition value s: s
// itself, or for a cut one the decoded cut name.
func scanValue(t *testing.T, s string) string {
	t.Helper()
	return unescape(t, encodeValue(s))
}

// asInt64 converts a DuckDB integer result (or nil) for comparisons.
func asInt64(t *testing.T, v any) int64 {
	t.Helper()
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int16:
		return int64(x)
	case int8:
		return int64(x)
	case uint64:
		return int64(x)
	case uint32:
		return int64(x)
	}
	t.Fatalf("value %v (%T) is not an integer", v, v)
	return 0
}
