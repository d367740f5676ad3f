package interop

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/rlrec/rlrec/internal/hive"
)

// readArrow reads a whole Parquet file with arrow-go's pqarrow into rows
// keyed by column name, with the Go types duckdb-go returns, and returns
// the Arrow schema and the file's key-value metadata too.
func readArrow(t *testing.T, path string) (*arrow.Schema, []row, map[string]string) {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatalf("arrow-go: open %s: %v", path, err)
	}
	return readArrowFile(t, path, pf)
}

// readArrowFrom is readArrow of the Parquet file r (named path in
// messages), read through arrow-go's own reader of an io.ReaderAt.
func readArrowFrom(t *testing.T, path string, r parquet.ReaderAtSeeker) (*arrow.Schema, []row, map[string]string) {
	t.Helper()
	pf, err := file.NewParquetReader(r)
	if err != nil {
		t.Fatalf("arrow-go: open %s: %v", path, err)
	}
	return readArrowFile(t, path, pf)
}

// readArrowFile is readArrow of the open file pf, which it closes.
func readArrowFile(t *testing.T, path string, pf *file.Reader) (*arrow.Schema, []row, map[string]string) {
	t.Helper()
	defer pf.Close()
	kv := map[string]string{}
	for _, e := range pf.MetaData().KeyValueMetadata() {
		if e.Value != nil {
			kv[e.Key] = *e.Value
		}
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		t.Fatalf("arrow-go: reader for %s: %v", path, err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go: read %s: %v", path, err)
	}
	defer tbl.Release()
	rows := make([]row, tbl.NumRows())
	for i := range rows {
		rows[i] = row{}
	}
	for c := 0; c < int(tbl.NumCols()); c++ {
		col := tbl.Column(c)
		n := 0
		for _, chunk := range col.Data().Chunks() {
			for i := 0; i < chunk.Len(); i++ {
				rows[n][col.Name()] = arrowValue(t, chunk, i)
				n++
			}
		}
	}
	return tbl.Schema(), rows, kv
}

// arrowValue converts element i of arr to the Go value duckdb-go gives for
// the same Parquet column.
func arrowValue(t *testing.T, arr arrow.Array, i int) any {
	t.Helper()
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return a.Value(i)
	case *array.Int16:
		return a.Value(i)
	case *array.Int32:
		return a.Value(i)
	case *array.Int64:
		return a.Value(i)
	case *array.Uint8:
		return a.Value(i)
	case *array.Uint16:
		return a.Value(i)
	case *array.Uint32:
		return a.Value(i)
	case *array.Uint64:
		return a.Value(i)
	case *array.Float32:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return append([]byte{}, a.Value(i)...)
	case *array.Timestamp:
		unit := a.DataType().(*arrow.TimestampType).Unit
		return a.Value(i).ToTime(unit)
	case *array.List:
		lo, hi := a.ValueOffsets(i)
		out := make([]any, 0, hi-lo)
		for j := lo; j < hi; j++ {
			out = append(out, arrowValue(t, a.ListValues(), int(j)))
		}
		return out
	}
	t.Fatalf("arrow type %s not handled", arr.DataType())
	return nil
}

// sameDeep compares two converted values: floats by bits, times by
// instant, lists element-wise.
func sameDeep(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameDeep(x[i], y[i]) {
				return false
			}
		}
		return true
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	case time.Time:
		y, ok := b.(time.Time)
		return ok && x.Equal(y)
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return a == b
}

// TestArrowReader opens steps and episodes files with arrow-go's Parquet
// reader and checks the Arrow column types, that the values equal what
// DuckDB reads from the same file, and that the typed columns equal the
// decoded blobs.
func TestArrowReader(t *testing.T) {
	forEachFixture(t, testArrowReader)
}

func testArrowReader(t *testing.T, fx *fixture) {
	db := openDuck(t)
	list := func(elem arrow.DataType) string { return arrow.ListOf(elem).String() }
	ts := (&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}).String()
	cases := []struct {
		name    string
		table   string
		session string
		types   map[string]string // column -> Arrow type, as DataType.String()
	}{
		{"cartpole steps", "steps", "cartpole-next", map[string]string{
			"observation": list(arrow.PrimitiveTypes.Float32), "action": "int64",
			"recorded_at": ts, "observation_blob": "binary", "action_blob": "binary",
			"reward": "float64", "is_first": "bool", "env_index": "int32", "episode_id": "utf8",
		}},
		{"all-leaves steps", "steps", "all-leaves-next", map[string]string{
			"observation.uints.0": list(arrow.PrimitiveTypes.Uint8), "observation.uints.3": list(arrow.PrimitiveTypes.Uint64),
			"observation.ints.0": list(arrow.PrimitiveTypes.Int8), "observation.flag": "bool",
			"observation.floats.half": list(arrow.PrimitiveTypes.Float32), "observation.floats.double": "float64",
			"observation.mask": list(arrow.FixedWidthTypes.Boolean), "observation.label": "utf8",
			"observation.level": "int64", "observation.dice": list(arrow.PrimitiveTypes.Uint16),
			"action.2": "utf8", "action.3": list(arrow.PrimitiveTypes.Float32), "recorded_at": ts,
		}},
		{"pick-place steps", "steps", "pick-place-next", map[string]string{
			"observation.image": "binary", "observation.state": list(arrow.PrimitiveTypes.Float32),
			"observation.instruction": "utf8", "action": list(arrow.PrimitiveTypes.Float32), "recorded_at": ts,
		}},
		{"pick-place episodes", "episodes", "pick-place-next", map[string]string{
			"episode_record_id": "utf8", "steps_file": "utf8", "episode_id": "utf8", "episode_index": "int64", "env_index": "int32", "status": "utf8",
			"step_count": "int64", "cumulative_reward": "float64", "success": "bool",
			"started_at": ts, "ended_at": ts, "final_info": "utf8", "final_observation_blob": "binary",
		}},
		{"all-leaves episodes", "episodes", "all-leaves-failing", map[string]string{
			"episode_record_id": "utf8", "steps_file": "utf8", "status": "utf8", "step_count": "int64", "started_at": ts, "final_observation_blob": "binary",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := fx.recording(t, tc.session)
			// The first episode's steps file; the episodes file that holds
			// the first episode row written.
			path := firstStepsFile(t, db, fx, rec)
			if tc.table == "episodes" {
				path = filepath.Join(recordingDir(fx.root, "episodes", rec), "part-00000.parquet")
			}
			sc, rows, kv := readArrow(t, path)
			for col, want := range tc.types {
				fs := sc.FieldIndices(col)
				if len(fs) != 1 {
					t.Errorf("column %q: %d fields in the Arrow schema %v", col, len(fs), sc)
					continue
				}
				if got := typeString(sc.Field(fs[0]).Type); got != want {
					t.Errorf("column %q: Arrow type %s, want %s", col, got, want)
				}
			}
			for _, part := range []string{"session_id", "env_id"} {
				if sc.HasField(part) {
					t.Errorf("partition column %s is stored in the file", part)
				}
			}
			checkEq(t, "rlrec.schema_version", kv["rlrec.schema_version"], "3")
			checkEq(t, "rlrec.layout", kv["rlrec.layout"], string(fx.layout))
			checkEq(t, "rlrec.session_id", kv["rlrec.session_id"], tc.session)
			checkEq(t, "rlrec.env_id", kv["rlrec.env_id"], rec.EnvID)
			switch {
			case tc.table == "steps" && fx.layout == hive.LayoutEpisode:
				if sc.HasField("episode_record_id") {
					t.Errorf("partition column episode_record_id is stored in the file")
				}
				checkEq(t, "rlrec.episode_record_id", kv["rlrec.episode_record_id"], "ep-000001")
			case tc.table == "steps":
				// Layout session: a column after recorded_at, before the
				// typed columns; no one episode in the metadata.
				at, rid := sc.FieldIndices("recorded_at"), sc.FieldIndices("episode_record_id")
				if len(at) != 1 || len(rid) != 1 || rid[0] != at[0]+1 {
					t.Errorf("episode_record_id at %v, recorded_at at %v, want it right after recorded_at: %v", rid, at, sc)
				} else if got := typeString(sc.Field(rid[0]).Type); got != "utf8" {
					t.Errorf("column episode_record_id: Arrow type %s, want utf8", got)
				}
				if v, ok := kv["rlrec.episode_record_id"]; ok {
					t.Errorf("rlrec.episode_record_id = %q in a steps file of layout session", v)
				}
			default:
				if v, ok := kv["rlrec.episode_record_id"]; ok {
					t.Errorf("rlrec.episode_record_id = %q in an episodes file", v)
				}
				// Schema version 3's six columns follow steps_file.
				if n := sc.NumFields(); n < 8 || sc.Field(0).Name != "episode_record_id" || sc.Field(n-7).Name != "steps_file" || sc.Field(n-1).Name != "step_ms" {
					t.Errorf("episodes columns %v, want episode_record_id first, steps_file last of version 2's and step_ms last", sc)
				}
			}
			specs := specsOf(t, path, kv)

			duck := query(t, db, "SELECT * EXCLUDE (file_row_number) FROM read_parquet("+lit(path)+", file_row_number=true, hive_partitioning=false) ORDER BY file_row_number")
			if len(duck) != len(rows) || len(rows) == 0 {
				t.Fatalf("arrow-go read %d rows, DuckDB %d", len(rows), len(duck))
			}
			if tc.table == "steps" && fx.layout == hive.LayoutSession {
				if !slices.ContainsFunc(rows, func(r row) bool { return r["episode_record_id"] == "ep-000001" }) {
					t.Errorf("no row of ep-000001 in the file its episodes row names")
				}
			}
			for i, ar := range rows {
				if len(ar) != len(duck[i]) {
					t.Errorf("row %d: arrow-go has %d columns, DuckDB %d", i, len(ar), len(duck[i]))
				}
				for col, dv := range duck[i] {
					if av := ar[col]; !sameDeep(av, dv) {
						t.Errorf("row %d column %q: arrow-go %v (%T), DuckDB %v (%T)", i, col, short(av), av, short(dv), dv)
					}
				}
				if tc.table == "steps" {
					where := fmt.Sprintf("arrow-go row %d", i)
					checkSide(t, where, ar, "observation", "observation_blob", specs.obs)
					checkSide(t, where, ar, "action", "action_blob", specs.act)
					continue
				}
				rid, _ := ar["episode_record_id"].(string)
				e := fx.sessions[rec].episodes[rid]
				if e == nil {
					t.Errorf("row %d: episode_record_id %q, an episode the simulator did not start in %s", i, rid, rec)
					continue
				}
				checkEq(t, fmt.Sprintf("row %d episode_id", i), ar["episode_id"], e.episodeID)
				checkEq(t, fmt.Sprintf("row %d steps_recorded", i), ar["steps_recorded"], e.actions)
				if e.actions > 0 {
					checkStepsFileName(t, fmt.Sprintf("row %d steps_file", i), fx.layout, ar["steps_file"], rec, rid)
				}
			}
		})
	}
}

// typeString renders a type without list element names or nullability, so
// that list<element: float> and list<item: float> compare equal.
func typeString(dt arrow.DataType) string {
	if l, ok := dt.(*arrow.ListType); ok {
		return arrow.ListOf(l.Elem()).String()
	}
	return dt.String()
}

// firstStepsFile is the file holding the steps of a recording's first
// episode, ep-000001: the first part of its own partition in layout
// "episode", the file its episodes row names in layout "session".
func firstStepsFile(t *testing.T, db *sql.DB, fx *fixture, rec hive.Recording) string {
	t.Helper()
	if fx.layout == hive.LayoutEpisode {
		return filepath.Join(hive.EpisodePartition("steps", rec, "ep-000001").Dir(fx.root), "part-00000.parquet")
	}
	rows := query(t, db, "SELECT steps_file FROM "+scan(recordingGlob(fx.root, "episodes", rec))+" WHERE episode_record_id = 'ep-000001'")
	if len(rows) != 1 {
		t.Fatalf("%s: %d episodes rows of ep-000001, want 1", rec, len(rows))
	}
	sf, ok := rows[0]["steps_file"].(string)
	if !ok {
		t.Fatalf("%s: ep-000001 has steps_file %v", rec, rows[0]["steps_file"])
	}
	return filepath.Join(fx.root, filepath.FromSlash(sf))
}
