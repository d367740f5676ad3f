package interop

import (
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// binaryThreshold is the recorder's default: leaves above it per lane are
// stored as raw bytes.
const binaryThreshold = 4096

// fileSpecs is the observation and action layout stored in one file's
// key-value metadata.
type fileSpecs struct {
	obs, act *schema.Layout
}

// kvMetadata reads the key-value metadata of every file matching glob
// through DuckDB's parquet_kv_metadata: file -> key -> value.
func kvMetadata(t *testing.T, db *sql.DB, glob string) map[string]map[string]string {
	t.Helper()
	rows := query(t, db, "SELECT file_name, key, value FROM parquet_kv_metadata("+lit(glob)+")")
	out := make(map[string]map[string]string)
	for _, r := range rows {
		f := r["file_name"].(string)
		if out[f] == nil {
			out[f] = make(map[string]string)
		}
		out[f][string(r["key"].([]byte))] = string(r["value"].([]byte))
	}
	return out
}

// specsOf parses the space specs of a steps or episodes file's metadata.
func specsOf(t *testing.T, file string, kv map[string]string) fileSpecs {
	t.Helper()
	var fs fileSpecs
	for _, side := range []struct {
		key string
		dst **schema.Layout
	}{{"rlrec.observation_space", &fs.obs}, {"rlrec.action_space", &fs.act}} {
		raw, ok := kv[side.key]
		if !ok {
			t.Fatalf("%s: no %s in the key-value metadata (keys %v)", file, side.key, sortedKeys(kv))
		}
		spec, err := schema.ParseSpecJSON([]byte(raw))
		if err != nil {
			t.Fatalf("%s: %s does not parse: %v\n%s", file, side.key, err, raw)
		}
		if *side.dst, err = schema.Compile(spec); err != nil {
			t.Fatalf("%s: %s does not compile: %v", file, side.key, err)
		}
	}
	return fs
}

// columnName is the typed column of a leaf: the prefix for a root leaf,
// prefix.path otherwise (docs/format/steps.md).
func columnName(prefix string, leaf *schema.Leaf) string {
	if leaf.Path == "" {
		return prefix
	}
	return prefix + "." + leaf.Path
}

// duckType is the DuckDB type a leaf's typed column must have, derived
// from docs/format/steps.md's rules rather than from the recorder's schema code.
func duckType(leaf *schema.Leaf) string {
	switch {
	case leaf.Kind == schema.KindText:
		return "VARCHAR"
	case leaf.Stride > binaryThreshold:
		return "BLOB"
	case leaf.Kind == schema.KindDiscrete:
		return "BIGINT"
	case leaf.Kind == schema.KindMultiBinary:
		return "BOOLEAN[]"
	}
	elem := map[spacesv1.DataType]string{
		spacesv1.DataType_DATA_TYPE_BOOL:    "BOOLEAN",
		spacesv1.DataType_DATA_TYPE_UINT8:   "UTINYINT",
		spacesv1.DataType_DATA_TYPE_UINT16:  "USMALLINT",
		spacesv1.DataType_DATA_TYPE_UINT32:  "UINTEGER",
		spacesv1.DataType_DATA_TYPE_UINT64:  "UBIGINT",
		spacesv1.DataType_DATA_TYPE_INT8:    "TINYINT",
		spacesv1.DataType_DATA_TYPE_INT16:   "SMALLINT",
		spacesv1.DataType_DATA_TYPE_INT32:   "INTEGER",
		spacesv1.DataType_DATA_TYPE_INT64:   "BIGINT",
		spacesv1.DataType_DATA_TYPE_FLOAT16: "FLOAT",
		spacesv1.DataType_DATA_TYPE_FLOAT32: "FLOAT",
		spacesv1.DataType_DATA_TYPE_FLOAT64: "DOUBLE",
	}[leaf.DType]
	if leaf.Kind == schema.KindBox && len(leaf.Shape) == 0 {
		return elem
	}
	return elem + "[]"
}

// expectedValue is what a leaf's typed column must hold for lane bytes b.
func expectedValue(t *testing.T, leaf *schema.Leaf, b []byte) any {
	t.Helper()
	switch {
	case leaf.Kind == schema.KindText:
		return string(b)
	case leaf.Stride > binaryThreshold:
		return b
	}
	v, err := blob.DecodeLeaf(leaf, b)
	if err != nil {
		t.Fatalf("decode leaf %q (%v) of %d bytes: %v", leaf.Path, leaf, len(b), err)
	}
	return v
}

// sameValue compares a DuckDB value with a decoded one: lists element by
// element (DuckDB returns []any), floats by bits so -0 and NaN count.
func sameValue(got, want any) bool {
	if gb, ok := got.([]byte); ok {
		wb, ok := want.([]byte)
		return ok && string(gb) == string(wb)
	}
	gl, gIsList := got.([]any)
	wv := reflect.ValueOf(want)
	if gIsList {
		if wv.Kind() != reflect.Slice || wv.Len() != len(gl) {
			return false
		}
		for i := range gl {
			if !sameScalar(gl[i], wv.Index(i).Interface()) {
				return false
			}
		}
		return true
	}
	if wv.Kind() == reflect.Slice {
		return false
	}
	return sameScalar(got, want)
}

func sameScalar(got, want any) bool {
	switch w := want.(type) {
	case float32:
		g, ok := got.(float32)
		return ok && math.Float32bits(g) == math.Float32bits(w)
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(g) == math.Float64bits(w)
	}
	return reflect.TypeOf(got) == reflect.TypeOf(want) && got == want
}

// TestTypedColumnsEqualBlobs checks, for every steps row of every session,
// that each typed column holds exactly what the row's blob decodes to with
// the spec from the file's own metadata, and that the column types follow
// docs/format/steps.md (unsigned ints, float16 widened to FLOAT, bool lists, text,
// images as BLOB).
func TestTypedColumnsEqualBlobs(t *testing.T) {
	forEachFixture(t, testTypedColumnsEqualBlobs)
}

func testTypedColumnsEqualBlobs(t *testing.T, fx *fixture) {
	db := openDuck(t)
	for _, rec := range sortedRecordings(fx.sessions) {
		t.Run(rec.SessionID, func(t *testing.T) {
			glob := recordingGlob(fx.root, "steps", rec)
			kv := kvMetadata(t, db, glob)
			if len(kv) == 0 {
				t.Fatalf("no steps files under %s", glob)
			}
			specs := make(map[string]fileSpecs, len(kv))
			for f, m := range kv {
				specs[f] = specsOf(t, f, m)
			}
			// Column types, from the first file's spec (all files of a
			// session share it: checked by the plain scan below).
			var any0 fileSpecs
			for _, s := range specs {
				any0 = s
				break
			}
			types := map[string]string{}
			for _, r := range query(t, db, "DESCRIBE SELECT * FROM "+scan(glob)) {
				types[r["column_name"].(string)] = r["column_type"].(string)
			}
			want := map[string]string{
				"episode_id": "VARCHAR", "episode_index": "BIGINT", "env_index": "INTEGER", "step": "BIGINT",
				"session_step": "BIGINT", "observation_blob": "BLOB", "action_blob": "BLOB", "reward": "DOUBLE",
				"is_first": "BOOLEAN", "is_last": "BOOLEAN", "terminated": "BOOLEAN", "truncated": "BOOLEAN",
				"recorded_at": "TIMESTAMP WITH TIME ZONE", "session_id": "VARCHAR", "env_id": "VARCHAR", "episode_record_id": "VARCHAR",
				// schema version 3
				"lane": "BIGINT", "infos": "VARCHAR", "raw_observation_blob": "BLOB", "raw_action_blob": "BLOB",
				"predict_ms": "DOUBLE", "step_ms": "DOUBLE", "observation_infos": "VARCHAR",
			}
			for _, side := range []struct {
				prefix string
				l      *schema.Layout
			}{{"observation", any0.obs}, {"action", any0.act}} {
				for i := range side.l.Leaves {
					leaf := &side.l.Leaves[i]
					want[columnName(side.prefix, leaf)] = duckType(leaf)
				}
			}
			for col, typ := range want {
				if types[col] != typ {
					t.Errorf("column %q has type %q, want %q", col, types[col], typ)
				}
			}
			for col := range types {
				if _, ok := want[col]; !ok {
					t.Errorf("unexpected column %q (%s)", col, types[col])
				}
			}

			rows := query(t, db, "SELECT * FROM "+scan(glob, "filename=true")+" ORDER BY episode_record_id, step")
			var checked int
			for _, r := range rows {
				fs, ok := specs[r["filename"].(string)]
				if !ok {
					t.Fatalf("row from %v, a file parquet_kv_metadata did not list", r["filename"])
				}
				where := fmt.Sprintf("%s step %v", r["episode_record_id"], r["step"])
				if ts, ok := r["recorded_at"].(time.Time); !ok || ts.IsZero() {
					t.Errorf("%s: recorded_at = %v (%T), want a time", where, r["recorded_at"], r["recorded_at"])
				}
				checked += checkSide(t, where, r, "observation", "observation_blob", fs.obs)
				checked += checkSide(t, where, r, "action", "action_blob", fs.act)
			}
			if checked == 0 {
				t.Fatalf("no typed values checked in %d rows", len(rows))
			}
		})
	}
}

// checkSide decodes one row's blob of one side and compares every typed
// column of that side with it; it returns the number of values compared.
func checkSide(t *testing.T, where string, r row, prefix, blobCol string, l *schema.Layout) int {
	t.Helper()
	raw, ok := r[blobCol].([]byte)
	if !ok {
		t.Errorf("%s: %s = %v (%T), want bytes (the simulator always sends one)", where, blobCol, r[blobCol], r[blobCol])
		return 0
	}
	leaves, err := blob.Decode(raw)
	if err != nil {
		t.Errorf("%s: %s does not decode: %v", where, blobCol, err)
		return 0
	}
	if len(leaves) != len(l.Leaves) {
		t.Errorf("%s: %s has %d leaves, the spec in the file metadata has %d", where, blobCol, len(leaves), len(l.Leaves))
		return 0
	}
	for i := range l.Leaves {
		leaf := &l.Leaves[i]
		col := columnName(prefix, leaf)
		want := expectedValue(t, leaf, leaves[i])
		if got := r[col]; !sameValue(got, want) {
			t.Errorf("%s: column %q (%v) = %v (%T), blob decodes to %v (%T)", where, col, leaf, short(got), got, short(want), want)
		}
	}
	return len(l.Leaves)
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// TestFileMetadata checks the key-value metadata of every file under ROOT
// against its path (docs/format/layout.md), the shape of every path,
// that no partition column is stored inside a file, and that a clean Close
// left no temporary files.
func TestFileMetadata(t *testing.T) {
	forEachFixture(t, testFileMetadata)
}

func testFileMetadata(t *testing.T, fx *fixture) {
	db := openDuck(t)
	files := walkFiles(t, fx.root)
	kv := kvMetadata(t, db, filepath.Join(fx.root, "**", "*.parquet"))
	partFile := regexp.MustCompile(`^part-[0-9]{5}\.parquet$`)
	var parquetFiles int
	for _, rel := range files {
		parts := strings.Split(rel, string(filepath.Separator))
		if parts[0] == "_rlrec" {
			continue
		}
		if !strings.HasSuffix(rel, ".parquet") || strings.HasPrefix(parts[len(parts)-1], ".") {
			t.Errorf("%s: a file other than a finished .parquet outside _rlrec", rel)
			continue
		}
		parquetFiles++
		t.Run(rel, func(t *testing.T) {
			m, ok := kv[filepath.Join(fx.root, rel)]
			if !ok {
				t.Fatalf("parquet_kv_metadata did not list %s", rel)
			}
			if !partFile.MatchString(parts[len(parts)-1]) {
				t.Errorf("file name %q is not part-NNNNN.parquet", parts[len(parts)-1])
			}
			table := parts[0]
			var keys []string
			part := map[string]string{}
			for _, seg := range parts[1 : len(parts)-1] {
				k, v, ok := strings.Cut(seg, "=")
				if !ok {
					t.Fatalf("path segment %q is not key=value", seg)
				}
				keys = append(keys, k)
				part[k] = unescape(t, v)
			}
			checkEq(t, "rlrec.schema_version", m["rlrec.schema_version"], "3")
			checkEq(t, "rlrec.layout", m["rlrec.layout"], string(fx.layout))
			checkEq(t, "rlrec.session_id vs the path", m["rlrec.session_id"], part["session_id"])
			checkEq(t, "rlrec.env_id vs the path", m["rlrec.env_id"], part["env_id"])
			rec := hive.Recording{SessionID: m["rlrec.session_id"], EnvID: m["rlrec.env_id"]}
			s := fx.sessions[rec]
			if s == nil {
				t.Errorf("file of %s, a recording the simulator did not run", rec)
			}
			want := []string{"session_id", "env_id"}
			switch table {
			case "steps":
				want = stepsKeys(fx.layout)
				if fx.layout == hive.LayoutEpisode {
					checkEq(t, "rlrec.episode_record_id vs the path", m["rlrec.episode_record_id"], part["episode_record_id"])
					if s != nil && s.episodes[part["episode_record_id"]] == nil {
						t.Errorf("steps file of episode %q, which the simulator never started", part["episode_record_id"])
					}
				} else if v, ok := m["rlrec.episode_record_id"]; ok {
					// A packed file holds many episodes; one of a long
					// episode alone is a part file like the others.
					t.Errorf("rlrec.episode_record_id = %q on a steps file of layout session", v)
				}
				specsOf(t, rel, m)
			case "episodes":
				if v, ok := m["rlrec.episode_record_id"]; ok {
					t.Errorf("rlrec.episode_record_id = %q on an episodes file, which holds many episodes", v)
				}
				specsOf(t, rel, m)
			case "sessions", "logs", "telemetry":
				if v, ok := m["rlrec.episode_record_id"]; ok {
					t.Errorf("rlrec.episode_record_id = %q on a %s file", v, table)
				}
			default:
				t.Errorf("file in unknown table directory %q", table)
			}
			if !slices.Equal(keys, want) {
				t.Errorf("partitions %v, want %v", keys, want)
			}
		})
	}
	if parquetFiles != len(kv) {
		t.Errorf("%d .parquet files on disk, DuckDB's glob found %d", parquetFiles, len(kv))
	}
	t.Run("no partition column inside a file", func(t *testing.T) {
		rows := query(t, db, "SELECT file_name, name FROM parquet_schema("+lit(filepath.Join(fx.root, "**", "*.parquet"))+") WHERE name IN ('session_id', 'env_id', 'episode_record_id')")
		for _, r := range rows {
			f := r["file_name"].(string)
			if r["name"] == "episode_record_id" && strings.HasPrefix(f, filepath.Join(fx.root, "episodes")+string(filepath.Separator)) {
				continue // a column of the episodes table, not a partition of it
			}
			if r["name"] == "episode_record_id" && fx.layout == hive.LayoutSession && strings.HasPrefix(f, filepath.Join(fx.root, "steps")+string(filepath.Separator)) {
				continue // a column of the packed steps files, not a partition of them
			}
			t.Errorf("%s stores partition column %s", f, r["name"])
		}
	})
	t.Run("steps columns", func(t *testing.T) { checkStepsColumns(t, db, fx) })
	t.Run("episodes columns", func(t *testing.T) {
		// episode_record_id is the episodes table's first column, steps_file
		// its last, in every file.
		var n int
		for _, rel := range files {
			if !strings.HasPrefix(rel, "episodes"+string(filepath.Separator)) {
				continue
			}
			n++
			var cols []string
			for _, r := range query(t, db, "DESCRIBE SELECT * FROM read_parquet("+lit(filepath.Join(fx.root, rel))+", hive_partitioning=false)") {
				cols = append(cols, r["column_name"].(string))
			}
			// Schema version 3's six columns follow steps_file.
			if len(cols) < 8 || cols[0] != "episode_record_id" || cols[len(cols)-7] != "steps_file" || cols[len(cols)-1] != "step_ms" {
				t.Errorf("%s: columns %v, want episode_record_id first, steps_file last of version 2's and step_ms last", rel, cols)
			}
		}
		if n == 0 {
			t.Fatalf("no episodes files")
		}
	})
}

// stepsFixedColumns are the fixed columns of a steps file in order
// (docs/format/steps.md); layout "session" adds episode_record_id after them.
var stepsFixedColumns = []string{
	"episode_id", "episode_index", "env_index", "step", "session_step", "observation_blob", "action_blob",
	"reward", "is_first", "is_last", "terminated", "truncated", "recorded_at",
}

// checkStepsColumns checks the columns of every steps file of a fixture as
// stored (no partition columns): the fixed ones in order, in layout
// "session" then episode_record_id, then only typed columns; and that every
// episode a packed file holds is one the simulator started.
func checkStepsColumns(t *testing.T, db *sql.DB, fx *fixture) {
	t.Helper()
	want := slices.Clone(stepsFixedColumns)
	if fx.layout == hive.LayoutSession {
		want = append(want, "episode_record_id")
	}
	var n int
	for _, rel := range walkFiles(t, filepath.Join(fx.root, "steps")) {
		n++
		file := filepath.Join(fx.root, "steps", rel)
		var cols []string
		for _, r := range query(t, db, "DESCRIBE SELECT * FROM read_parquet("+lit(file)+", hive_partitioning=false)") {
			cols = append(cols, r["column_name"].(string))
		}
		if len(cols) < len(want) || !slices.Equal(cols[:len(want)], want) {
			t.Errorf("steps/%s: columns %v, want %v first", rel, cols, want)
			continue
		}
		// Then the typed columns, then schema version 3's.
		v3 := []string{"lane", "infos", "raw_observation_blob", "raw_action_blob", "predict_ms", "step_ms", "observation_infos"}
		if len(cols) < len(want)+len(v3) || !slices.Equal(cols[len(cols)-len(v3):], v3) {
			t.Errorf("steps/%s: columns %v, want %v last", rel, cols, v3)
			continue
		}
		for _, c := range cols[len(want) : len(cols)-len(v3)] {
			if c != "observation" && c != "action" && !strings.HasPrefix(c, "observation.") && !strings.HasPrefix(c, "action.") {
				t.Errorf("steps/%s: column %q after the fixed ones is no typed column", rel, c)
			}
		}
		if fx.layout != hive.LayoutSession {
			continue
		}
		kv := kvMetadata(t, db, file)[file]
		s := fx.sessions[hive.Recording{SessionID: kv["rlrec.session_id"], EnvID: kv["rlrec.env_id"]}]
		if s == nil {
			t.Errorf("steps/%s: a file of no recording the simulator ran (metadata %v)", rel, kv)
			continue
		}
		for _, r := range query(t, db, "SELECT DISTINCT episode_record_id FROM read_parquet("+lit(file)+", hive_partitioning=false)") {
			if rid, _ := r["episode_record_id"].(string); s.episodes[rid] == nil {
				t.Errorf("steps/%s: rows of episode %v, which the simulator never started", rel, r["episode_record_id"])
			}
		}
	}
	if n == 0 {
		t.Fatalf("no steps files under %s", fx.root)
	}
}
