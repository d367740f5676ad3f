package parquetout

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

func ptr[T any](v T) *T { return &v }

// readTable reads a committed file back into rows of T.
func readTable[T any](t *testing.T, path string) ([]T, *parquet.File) {
	t.Helper()
	pf := openParquet(t, path)
	rows, err := parquet.ReadFile[T](path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return rows, pf
}

func checkMeta(t *testing.T, pf *parquet.File, want map[string]string, absent ...string) {
	t.Helper()
	for k, v := range want {
		if got, ok := pf.Lookup(k); !ok || got != v {
			t.Errorf("metadata %s = %q, %v; want %q", k, got, ok, v)
		}
	}
	for _, k := range absent {
		if got, ok := pf.Lookup(k); ok {
			t.Errorf("metadata %s = %q, want absent", k, got)
		}
	}
}

func TestEpisodesTable(t *testing.T) {
	fsys, root := osFS(t)
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)
	rows := []schema.EpisodeRow{
		{
			EpisodeID: "0190c0de-7a3b-7c2d-8e9f-0123456789ab", EpisodeIndex: 1, EnvIndex: 2,
			EnvComponentID: "env", ModelComponentID: "model",
			StartedFromAutoReset: true, Status: schema.EpisodeCompleted,
			StepCount: ptr(int64(10)), CumulativeReward: ptr(9.5), StepsRecorded: 10, RewardSum: 9.5,
			Terminated: true, Success: ptr(true), DurationMs: ptr(int64(1234)),
			StartedAt: t0, EndedAt: ptr(t0.Add(time.Second)),
			FinalInfo: ptr(`{"is_success":true}`), FinalObservationBlob: []byte{0x0a, 0x01, 0x07},
		},
		{EpisodeID: "x", Status: schema.EpisodeIncomplete, StartedAt: t0},
	}
	spec := sBox(dtF32, 4)
	rows[0].EpisodeRecordID, rows[1].EpisodeRecordID = "ep-000001", "ep-000002"
	rows[0].StepsFile = ptr("steps/session_id=s%2F1/env_id=r/episode_record_id=ep-000001/part-00000.parquet")
	dir := hive.RecordingPartition(schema.TableEpisodes, hive.Recording{SessionID: "s/1", EnvID: "r"}).Dir(root)
	path, err := writeTable(fsys, dir, Metadata{SessionID: "s/1", EnvID: "r", ObservationSpace: spec, ActionSpace: sDiscrete(dtI64, 2)}, Config{}, rows)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "episodes", "session_id=s%2F1", "env_id=r", "part-00000.parquet"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	got, pf := readTable[schema.EpisodeRow](t, path)
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("rows differ:\n got %+v\nwant %+v", got, rows)
	}
	checkMeta(t, pf, map[string]string{
		schema.MetaSchemaVersion: schema.SchemaVersion, schema.MetaLayout: "episode", schema.MetaSessionID: "s/1", schema.MetaEnvID: "r",
	}, schema.MetaEpisodeRecordID)
	js, _ := pf.Lookup(schema.MetaActionSpace)
	if spec, err := schema.ParseSpecJSON([]byte(js)); err != nil || spec.GetDiscrete().GetN() != 2 {
		t.Errorf("action space metadata %q: %v", js, err)
	}
	// A second file reuses the writer: its metadata and rows are its own.
	dir2 := hive.RecordingPartition(schema.TableEpisodes, hive.Recording{SessionID: "s2", EnvID: "r2"}).Dir(root)
	path2, err := writeTable(fsys, dir2, Metadata{Layout: hive.LayoutSession, SessionID: "s2", EnvID: "r2", ObservationSpace: spec, ActionSpace: spec}, Config{}, rows[1:])
	if err != nil {
		t.Fatal(err)
	}
	got2, pf2 := readTable[schema.EpisodeRow](t, path2)
	if !reflect.DeepEqual(got2, rows[1:]) {
		t.Fatalf("second file rows differ:\n got %+v\nwant %+v", got2, rows[1:])
	}
	checkMeta(t, pf2, map[string]string{schema.MetaSessionID: "s2", schema.MetaEnvID: "r2", schema.MetaLayout: "session"}, schema.MetaEpisodeRecordID)
	if js, _ := pf2.Lookup(schema.MetaActionSpace); !strings.Contains(js, "box") {
		t.Errorf("second file action space %q", js)
	}
	for _, name := range []string{schema.ColStepCount, schema.ColSuccess, schema.ColEndedAt, schema.ColFinalInfo, schema.ColFinalObservationBlob, schema.ColStepsFile} {
		c, ok := pf.Schema().Lookup(name)
		if !ok || !c.Node.Optional() {
			t.Errorf("%s: found %v, optional %v", name, ok, ok && c.Node.Optional())
		}
	}
}

func TestSessionTables(t *testing.T) {
	fsys, root := osFS(t)
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 8000, time.UTC)
	meta := Metadata{SessionID: "sess", EnvID: "r", EpisodeRecordID: "ignored", ObservationSpace: sBox(dtF32, 1)}
	absent := []string{schema.MetaEpisodeRecordID, schema.MetaObservationSpace, schema.MetaActionSpace}
	wantMeta := map[string]string{schema.MetaSchemaVersion: schema.SchemaVersion, schema.MetaSessionID: "sess", schema.MetaEnvID: "r"}
	rec := hive.Recording{SessionID: "sess", EnvID: "r"}

	t.Run("sessions", func(t *testing.T) {
		rows := []schema.SessionRow{{
			EnvComponentID: "ec", ModelComponentID: "mc", Status: schema.SessionEnded,
			Reason: ptr("max episodes"), TotalSteps: ptr(int64(100)), TotalEpisodes: ptr(int64(3)),
			StartedAt: t0, EndedAt: ptr(t0.Add(time.Minute)), EpisodesRecorded: 3, StepsRecorded: 99, DroppedSteps: 1,
		}, {Status: schema.SessionOpen, StartedAt: t0}}
		path, err := writeTable(fsys, hive.RecordingPartition(schema.TableSessions, rec).Dir(root), meta, Config{}, rows)
		if err != nil {
			t.Fatal(err)
		}
		got, pf := readTable[schema.SessionRow](t, path)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("rows differ:\n got %+v\nwant %+v", got, rows)
		}
		checkMeta(t, pf, wantMeta, absent...)
	})
	t.Run("logs", func(t *testing.T) {
		rows := []schema.LogRow{{Time: t0, Level: "info", Message: "env reset complete", Source: ptr("driver")}, {Time: t0, Level: "warn", Message: "m"}}
		path, err := writeTable(fsys, hive.RecordingPartition(schema.TableLogs, rec).Dir(root), meta, Config{}, rows)
		if err != nil {
			t.Fatal(err)
		}
		got, pf := readTable[schema.LogRow](t, path)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("rows differ:\n got %+v\nwant %+v", got, rows)
		}
		checkMeta(t, pf, wantMeta, absent...)
	})
	t.Run("telemetry in row groups", func(t *testing.T) {
		var rows []schema.TelemetryRow
		for i := 0; i < 25; i++ {
			rows = append(rows, schema.TelemetryRow{Time: t0, Horizon: "window", Op: "step", Component: "env", Metric: "latency",
				Kind: "duration_ms", Count: int64(i), Avg: 1.5, P50: 1, P95: 2, P99: 3})
		}
		w, err := createTableFile[schema.TelemetryRow](fsys, hive.RecordingPartition(schema.TableTelemetry, rec).Dir(root), meta, Config{RowGroupRows: 10})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rows[:7]); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(rows[7:]); err != nil {
			t.Fatal(err)
		}
		path, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		got, pf := readTable[schema.TelemetryRow](t, path)
		if !reflect.DeepEqual(got, rows) {
			t.Fatalf("rows differ:\n got %+v\nwant %+v", got, rows)
		}
		if n := len(pf.RowGroups()); n != 3 {
			t.Errorf("%d row groups, want 3", n)
		}
		checkMeta(t, pf, wantMeta, absent...)
		if err := w.Write(rows); !errors.Is(err, ErrClosed) {
			t.Errorf("Write after Commit = %v", err)
		}
	})
}

func TestConfig(t *testing.T) {
	for _, codec := range []string{CompressionZstd, CompressionSnappy, CompressionNone, ""} {
		t.Run("codec "+codec, func(t *testing.T) {
			mem := vfs.NewMem()
			w := cartpoleWriter(t, mem, "/d", Config{Compression: codec})
			writeCartpole(t, w, 300)
			path, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			pf := openMem(t, mem, path)
			want := map[string]string{CompressionZstd: "ZSTD", "": "ZSTD", CompressionSnappy: "SNAPPY", CompressionNone: "UNCOMPRESSED"}[codec]
			for _, cc := range pf.Metadata().RowGroups[0].Columns {
				if got := cc.MetaData.Codec.String(); got != want {
					t.Fatalf("column %v codec %s, want %s", cc.MetaData.PathInSchema, got, want)
				}
			}
			if n := len(readRows(t, pf)); n != 300 {
				t.Fatalf("%d rows", n)
			}
		})
	}
	if _, err := NewStepsFormat(nil, nil, Config{Compression: "lz4"}); !errors.Is(err, ErrCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
	if _, err := createTableFile[schema.LogRow](vfs.NewMem(), "/d", Metadata{}, Config{Compression: "gzip"}); !errors.Is(err, ErrCodec) {
		t.Fatalf("unknown codec: %v", err)
	}
}

func TestRowGroupByteBound(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cfg      Config
		set      int64 // SetRowGroupBytes before the first row; 0: not called
		min, max int   // expected row groups
	}{
		{"config bound", Config{RowGroupBytes: 10_000}, 0, 5, 1000},
		{"default bound", Config{}, 0, 1, 1},
		{"set per writer", Config{}, 10_000, 5, 1000},
		{"set then restored", Config{}, -1, 1, 1},
		{"small write buffer", Config{RowGroupBytes: 10_000, WriteBufferSize: 512, PageBufferSize: 4096}, 0, 5, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			w := cartpoleWriter(t, mem, "/d", tc.cfg)
			if tc.set != 0 {
				w.SetRowGroupBytes(10_000)
				if tc.set < 0 {
					w.SetRowGroupBytes(0)
				}
			}
			writeCartpole(t, w, 1000)
			path, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			pf := openMem(t, mem, path)
			groups := pf.RowGroups()
			if len(groups) < tc.min || len(groups) > tc.max {
				t.Fatalf("%d row groups for ~%d bytes, want %d-%d", len(groups), 1000*(fixedRowBytes+58), tc.min, tc.max)
			}
			var n int64
			for _, g := range groups {
				n += g.NumRows()
			}
			if n != 1000 || len(readRows(t, pf)) != 1000 {
				t.Fatalf("%d rows", n)
			}
		})
	}
}
