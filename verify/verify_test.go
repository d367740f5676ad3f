package verify

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

var (
	baseOnce   sync.Once
	baseRoot   string
	baseStream []byte
	baseErr    error
)

// base returns a clean recorded ROOT shared by the tests; they copy it
// before damaging it.
func base(t *testing.T) string {
	t.Helper()
	baseOnce.Do(func() {
		baseRoot, baseErr = os.MkdirTemp("", "rlrec-verify-")
		if baseErr != nil {
			return
		}
		baseStream = testStream(t)
		recordRoot(t, baseRoot, baseStream)
	})
	if baseErr != nil {
		t.Fatal(baseErr)
	}
	return baseRoot
}

func TestMain(m *testing.M) {
	code := m.Run()
	if baseRoot != "" {
		os.RemoveAll(baseRoot)
	}
	os.Exit(code)
}

// rewrite reads every row of a Parquet file, lets edit change them and the
// metadata, and writes the file back with the same schema.
func rewrite(t *testing.T, path string, edit func(rows []parquet.Row, kv map[string]string) []parquet.Row) {
	t.Helper()
	s, rows, kv := readAll(t, path)
	rows = edit(rows, kv)
	writeAll(t, path, s, rows, kv)
}

// cartpoleSteps returns the first steps file whose observation is a
// single Box leaf (cartpole).
func cartpoleSteps(t *testing.T, root string) string {
	t.Helper()
	for _, p := range parquetFiles(t, root, schema.TableSteps) {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		info, _ := f.Stat()
		pf, err := parquet.OpenFile(f, info.Size())
		if err != nil {
			t.Fatal(err)
		}
		js, _ := pf.Lookup(schema.MetaObservationSpace)
		f.Close()
		spec, err := schema.ParseSpecJSON([]byte(js))
		if err != nil {
			continue
		}
		l, err := schema.Compile(spec)
		if err == nil && len(l.Leaves) == 1 && l.Leaves[0].Kind == schema.KindBox && pf.NumRows() >= 4 {
			return p
		}
	}
	t.Fatal("no cartpole steps file with 4 rows")
	return ""
}

// tableDirs returns the directories of a table matching pattern, a
// glob relative to the table directory.
func tableDirs(t *testing.T, root, table, pattern string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(root, table, filepath.FromSlash(pattern)))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no %s directories under %s/%s", pattern, root, table)
	}
	sort.Strings(dirs)
	return dirs
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, root string)
		// want lists checks that must each find a problem; none means
		// the ROOT must pass.
		want []Check
		// golden compares the output with testdata/<name>.golden.
		golden bool
	}{
		{name: "clean", damage: func(*testing.T, string) {}, golden: true},
		{name: "truncated-parquet", golden: true, want: []Check{CheckFile}, damage: func(t *testing.T, root string) {
			p := parquetFiles(t, root, schema.TableSteps)[0]
			info, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, info.Size()-9); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "flipped-blob-byte", golden: true, want: []Check{CheckTyped}, damage: func(t *testing.T, root string) {
			rewrite(t, cartpoleSteps(t, root), func(rows []parquet.Row, _ map[string]string) []parquet.Row {
				v := rows[2][schema.StepsColObservationBlob]
				b := bytes.Clone(v.ByteArray())
				b[len(b)-1] ^= 0x40
				rows[2][schema.StepsColObservationBlob] = parquet.ByteArrayValue(b).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
				return rows
			})
		}},
		{name: "blob-does-not-decode", want: []Check{CheckBlob}, damage: func(t *testing.T, root string) {
			rewrite(t, cartpoleSteps(t, root), func(rows []parquet.Row, _ map[string]string) []parquet.Row {
				v := rows[1][schema.StepsColActionBlob]
				b := append(bytes.Clone(v.ByteArray()), 0x12)
				rows[1][schema.StepsColActionBlob] = parquet.ByteArrayValue(b).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
				return rows
			})
		}},
		{name: "missing-step", golden: true, want: []Check{CheckSteps, CheckEpisode, CheckSession}, damage: func(t *testing.T, root string) {
			rewrite(t, cartpoleSteps(t, root), func(rows []parquet.Row, _ map[string]string) []parquet.Row {
				return append(rows[:2], rows[3:]...)
			})
		}},
		{name: "mismatched-episode-row", golden: true, want: []Check{CheckEpisode}, damage: func(t *testing.T, root string) {
			col, ok := schema.EpisodesSchema.Lookup(schema.ColStepsRecorded)
			if !ok {
				t.Fatal("no steps_recorded column")
			}
			colStepsRecorded := col.ColumnIndex
			rewrite(t, parquetFiles(t, root, schema.TableEpisodes)[0], func(rows []parquet.Row, _ map[string]string) []parquet.Row {
				v := rows[0][colStepsRecorded]
				rows[0][colStepsRecorded] = parquet.Int64Value(v.Int64()+1).Level(v.RepetitionLevel(), v.DefinitionLevel(), v.Column())
				return rows
			})
		}},
		{name: "stray-temp-file", golden: true, want: []Check{CheckStray}, damage: func(t *testing.T, root string) {
			p := parquetFiles(t, root, schema.TableSteps)[0]
			if err := os.WriteFile(filepath.Join(filepath.Dir(p), ".part-00001.parquet.tmp"), []byte("PAR1"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "bad-last-sequence", want: []Check{CheckMetadata}, damage: func(t *testing.T, root string) {
			rewrite(t, parquetFiles(t, root, schema.TableLogs)[0], func(rows []parquet.Row, kv map[string]string) []parquet.Row {
				kv[schema.MetaLastSequence] = "twelve"
				return rows
			})
		}},
		{name: "deleted-logs-part", want: []Check{CheckSession}, damage: func(t *testing.T, root string) {
			if err := os.Remove(parquetFiles(t, root, schema.TableLogs)[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "deleted-telemetry-part", want: []Check{CheckSession}, damage: func(t *testing.T, root string) {
			if err := os.Remove(parquetFiles(t, root, schema.TableTelemetry)[0]); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "unknown-file", want: []Check{CheckStray}, damage: func(t *testing.T, root string) {
			if err := os.WriteFile(filepath.Join(tableDirs(t, root, schema.TableLogs, "session_id=*/env_id=*")[0], "notes.txt"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		// The sessions row is still its recording's: the metadata names
		// it, not the path.
		{name: "partition-path-mismatch", golden: true, want: []Check{CheckPartition}, damage: func(t *testing.T, root string) {
			d := tableDirs(t, root, schema.TableSessions, "session_id=*")[0]
			if err := os.Rename(d, filepath.Join(filepath.Dir(d), "session_id=renamed")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "unknown-schema-version", want: []Check{CheckSchemaVersion}, damage: func(t *testing.T, root string) {
			rewrite(t, parquetFiles(t, root, schema.TableTelemetry)[0], func(rows []parquet.Row, kv map[string]string) []parquet.Row {
				kv[schema.MetaSchemaVersion] = "99"
				return rows
			})
		}},
		{name: "empty-path-in-schema", golden: true, want: []Check{CheckFooter}, damage: func(t *testing.T, root string) {
			// What parquet-go's Writer.Reset leaves in every file after a
			// writer's first (parquet-go issue #602).
			roottest.EditFooterFile(t, parquetFiles(t, root, schema.TableEpisodes)[0], func(md *format.FileMetaData) {
				for i := range md.RowGroups {
					for j := range md.RowGroups[i].Columns {
						p := &md.RowGroups[i].Columns[j].MetaData.PathInSchema
						*p = make([]string, len(*p))
					}
				}
			})
		}},
		{name: "log-with-records", want: []Check{CheckLog}, damage: func(t *testing.T, root string) {
			os.RemoveAll(root)
			crashCopy(t, root, baseStream, 400)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			roottest.CopyDir(t, base(t), root)
			tc.damage(t, root)
			rep, err := Root(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := rep.Write(&out); err != nil {
				t.Fatal(err)
			}
			if len(tc.want) == 0 && !rep.OK() {
				t.Fatalf("want no problems, got:\n%s", out.String())
			}
			found := map[Check]bool{}
			for _, p := range rep.Problems {
				found[p.Check] = true
				if p.Fix == "" {
					t.Errorf("problem without a fix: %+v", p)
				}
			}
			for _, c := range tc.want {
				if !found[c] {
					t.Errorf("no %s problem found; output:\n%s", c, out.String())
				}
			}
			if tc.name != "log-with-records" && (rep.Files == 0 || rep.Rows == 0) {
				t.Errorf("checked %d files, %d rows", rep.Files, rep.Rows)
			}
			if tc.golden {
				golden(t, filepath.Join("testdata", tc.name+".golden"), out.Bytes())
			}
		})
	}
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run go test ./verify -update to create it", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestVerifyLockHeld(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	roottest.CopyDir(t, base(t), root)
	rec := record(t, root, nil, 0)
	defer rec.Close(context.Background())
	rep, err := Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Check != CheckLock {
		t.Fatalf("want one lock problem, got %+v", rep.Problems)
	}
}

func TestVerifyNotRoot(t *testing.T) {
	for _, p := range []string{filepath.Join(t.TempDir(), "missing"), "verify_test.go"} {
		if _, err := Root(context.Background(), p); !errors.Is(err, ErrNotRoot) {
			t.Errorf("Root(%s) = %v, want ErrNotRoot", p, err)
		}
	}
}

func TestMaxProblemsPerFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	roottest.CopyDir(t, base(t), root)
	p := cartpoleSteps(t, root)
	rewrite(t, p, func(rows []parquet.Row, _ map[string]string) []parquet.Row {
		for _, r := range rows {
			r[schema.StepsColIsFirst] = parquet.BooleanValue(true).Level(0, 0, schema.StepsColIsFirst)
		}
		return rows
	})
	rep, err := Root(context.Background(), root, WithMaxProblemsPerFile(2))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var more bool
	for _, pr := range rep.Problems {
		if strings.HasSuffix(p, filepath.FromSlash(pr.Path)) && pr.Row >= 0 {
			n++
		}
		if strings.HasSuffix(p, filepath.FromSlash(pr.Path)) {
			more = more || strings.Contains(pr.Message, "9 more problems")
		}
	}
	if n != 2 || !more {
		t.Fatalf("want 2 problems and a count of the rest for %s, got %+v", p, rep.Problems)
	}
}

// TestRemedyWords: a fix that asks for a remedy on ROOT has it typed
// (Problem.Remedy) and worded by WithWords, the Go API's words by
// default; the package's own text names no command.
func TestRemedyWords(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	roottest.CopyDir(t, base(t), root)
	p := parquetFiles(t, root, schema.TableSteps)[0]
	if err := os.WriteFile(filepath.Join(filepath.Dir(p), ".part-00001.parquet.tmp"), []byte("PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		words findings.Words
		want  string
	}{
		{"default", nil, "recover ROOT (open it with recorder.Open) if the log holds records"},
		{"caller's", func(a findings.Action) string { return fmt.Sprintf("do %d to %s", a.Remedy, a.Root) }, "do 1 to ROOT if the log holds records"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Root(context.Background(), root, WithWords(tc.words))
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Problems) != 1 {
				t.Fatalf("problems %+v, want the temp file's", rep.Problems)
			}
			if got := rep.Problems[0]; got.Remedy != findings.Recover || !strings.HasPrefix(got.Fix, tc.want) {
				t.Errorf("remedy %d, fix %q; want remedy %d and a fix that starts %q", got.Remedy, got.Fix, findings.Recover, tc.want)
			}
		})
	}
}
