package parquetout

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// checkPaths fails unless every column chunk of pf names its schema leaf
// in path_in_schema.
func checkPaths(t *testing.T, name string, pf *parquet.File) {
	t.Helper()
	leaves := pf.Schema().Columns()
	for i, rg := range pf.Metadata().RowGroups {
		if len(rg.Columns) != len(leaves) {
			t.Fatalf("%s: row group %d has %d column chunks, the schema %d leaves", name, i, len(rg.Columns), len(leaves))
		}
		for j, cc := range rg.Columns {
			if got := []string(cc.MetaData.PathInSchema); !slices.Equal(got, leaves[j]) {
				t.Errorf("%s: row group %d column %d: path_in_schema %q, want %q", name, i, j, got, leaves[j])
				return
			}
		}
	}
}

// TestFootersAfterFirstFile writes files one after another through one
// steps format and one table configuration, which is where writers are
// recycled, and checks every file's footer, not only the first's.
func TestFootersAfterFirstFile(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const files = 3
	tests := []struct {
		name  string
		write func(t *testing.T, fsys vfs.FS, root string, i int) string
	}{
		{"steps", func() func(*testing.T, vfs.FS, string, int) string {
			var f *StepsFormat
			return func(t *testing.T, fsys vfs.FS, root string, i int) string {
				if f == nil {
					var err error
					if f, err = NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{RowGroupRows: 4}); err != nil {
						t.Fatal(err)
					}
				}
				erid := fmt.Sprintf("ep-%06d", i)
				w, err := f.Create(fsys, hive.Dir(root, schema.TableSteps, "s", erid), "s", erid)
				if err != nil {
					t.Fatal(err)
				}
				writeCartpole(t, w, 10)
				path, err := w.Commit()
				if err != nil {
					t.Fatal(err)
				}
				return path
			}
		}()},
		{"episodes", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			erid := fmt.Sprintf("ep-%06d", i)
			path, err := WriteTable(fsys, hive.Dir(root, schema.TableEpisodes, "s", erid), Metadata{SessionID: "s", EpisodeRecordID: erid},
				Config{}, []schema.EpisodeRow{{EpisodeID: erid, Status: schema.EpisodeCompleted, StartedAt: t0}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"sessions", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			path, err := WriteTable(fsys, hive.SessionDir(root, schema.TableSessions, fmt.Sprint("s", i)), Metadata{SessionID: fmt.Sprint("s", i)},
				Config{}, []schema.SessionRow{{Status: schema.SessionEnded, StartedAt: t0}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"logs", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			path, err := WriteTable(fsys, hive.SessionDir(root, schema.TableLogs, "s"), Metadata{SessionID: "s"},
				Config{}, []schema.LogRow{{Time: t0, Level: "info", Message: fmt.Sprint("file ", i)}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"telemetry in row groups", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			var rows []schema.TelemetryRow
			for j := 0; j < 5; j++ {
				rows = append(rows, schema.TelemetryRow{Time: t0, Horizon: "window", Op: "step", Metric: "latency", Count: int64(j)})
			}
			path, err := WriteTable(fsys, hive.SessionDir(root, schema.TableTelemetry, "s"), Metadata{SessionID: "s"}, Config{RowGroupRows: 2}, rows)
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := osFS(t)
			for i := 0; i < files; i++ {
				path := tc.write(t, fsys, root, i)
				rel, _ := filepath.Rel(root, path)
				checkPaths(t, fmt.Sprintf("file %d (%s)", i, rel), openParquet(t, path))
			}
		})
	}
}
