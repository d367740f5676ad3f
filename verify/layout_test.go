package verify

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// orderedNode is a group node that keeps its fields in the order given
// (parquet.Group sorts them by name).
type orderedNode struct {
	parquet.Node
	fields []parquet.Field
}

func (n orderedNode) Fields() []parquet.Field { return n.fields }

// namedField is a node under a name.
type namedField struct {
	parquet.Node
	name string
}

func (f namedField) Name() string                      { return f.name }
func (f namedField) Value(reflect.Value) reflect.Value { return reflect.Value{} }

// readAll returns a Parquet file's schema, rows and key-value metadata.
func readAll(t *testing.T, p string) (*parquet.Schema, []parquet.Row, map[string]string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	var rows []parquet.Row
	for _, rg := range pf.RowGroups() {
		rr := rg.Rows()
		buf := make([]parquet.Row, 16)
		for {
			n, err := rr.ReadRows(buf)
			for _, r := range buf[:n] {
				rows = append(rows, r.Clone())
			}
			if errors.Is(err, io.EOF) || n == 0 {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		rr.Close()
	}
	kv := map[string]string{}
	for _, e := range pf.Metadata().KeyValueMetadata {
		kv[e.Key] = e.Value
	}
	return pf.Schema(), rows, kv
}

// writeAll writes rows to a new Parquet file.
func writeAll(t *testing.T, p string, s *parquet.Schema, rows []parquet.Row, kv map[string]string) {
	t.Helper()
	opts := []parquet.WriterOption{s}
	for k, v := range kv {
		opts = append(opts, parquet.KeyValueMetadata(k, v))
	}
	var out bytes.Buffer
	w := parquet.NewWriter(&out, opts...)
	if _, err := w.WriteRows(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// toSessionLayout turns a ROOT of layout "episode" into one of layout
// "session": the steps files of each recording become one file of its
// recording partition, with the episode_record_id column after
// recorded_at, the episodes rows name it, and every file says so. order
// arranges the steps rows (one slice per episode, in record id order)
// before they are written.
func toSessionLayout(t *testing.T, root string, order func(episodes [][]parquet.Row) []parquet.Row) {
	t.Helper()
	type recSteps struct {
		schema *parquet.Schema
		kv     map[string]string
		erids  []string
		rows   [][]parquet.Row
	}
	steps := map[hive.Recording]*recSteps{}
	var recs []hive.Recording
	l := list(t, root)
	const eridCol = schema.NumFixedStepsColumns // after recorded_at
	for _, f := range l.Files {
		p := filepath.Join(root, filepath.FromSlash(f.Rel))
		if f.Table != schema.TableSteps {
			s, rows, kv := readAll(t, p)
			kv[schema.MetaLayout] = string(hive.LayoutSession)
			if f.Table == schema.TableEpisodes {
				col, _ := s.Lookup(schema.ColStepsFile)
				rel := hive.RecordingPartition(schema.TableSteps, f.Recording).File(0)
				for _, r := range rows {
					r[col.ColumnIndex] = parquet.ByteArrayValue([]byte(rel)).Level(0, 1, col.ColumnIndex)
				}
			}
			writeAll(t, p, s, rows, kv)
			continue
		}
		s, rows, kv := readAll(t, p)
		rs := steps[f.Recording]
		if rs == nil {
			fields := append([]parquet.Field(nil), s.Fields()...)
			erid := namedField{Node: parquet.String(), name: schema.ColEpisodeRecordID}
			fields = append(fields[:eridCol], append([]parquet.Field{erid}, fields[eridCol:]...)...)
			delete(kv, schema.MetaEpisodeRecordID)
			kv[schema.MetaLayout] = string(hive.LayoutSession)
			rs = &recSteps{schema: parquet.NewSchema(schema.TableSteps, orderedNode{Node: s, fields: fields}), kv: kv}
			steps[f.Recording] = rs
			recs = append(recs, f.Recording)
		}
		for i, r := range rows {
			nr := make(parquet.Row, 0, len(r)+1)
			for _, v := range r {
				if c := v.Column(); c >= eridCol {
					v = v.Level(v.RepetitionLevel(), v.DefinitionLevel(), c+1)
				}
				nr = append(nr, v)
			}
			nr = append(nr, parquet.ByteArrayValue([]byte(f.EpisodeRecordID)).Level(0, 0, eridCol))
			sort.SliceStable(nr, func(a, b int) bool { return nr[a].Column() < nr[b].Column() })
			rows[i] = nr
		}
		rs.erids = append(rs.erids, f.EpisodeRecordID)
		rs.rows = append(rs.rows, rows)
		if err := os.RemoveAll(filepath.Dir(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		rs := steps[rec]
		p := filepath.Join(root, filepath.FromSlash(hive.RecordingPartition(schema.TableSteps, rec).File(0)))
		writeAll(t, p, rs.schema, order(rs.rows), rs.kv)
	}
}

func inOrder(episodes [][]parquet.Row) []parquet.Row {
	var out []parquet.Row
	for _, e := range episodes {
		out = append(out, e...)
	}
	return out
}

func TestVerifySessionLayout(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	base := recordSessions(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 8, Seed: 1, Clock: sim.StepClock(start, time.Millisecond), SessionID: "local-1", Route: route("cartpole", "cartpole")},
	})
	tests := []struct {
		name  string
		order func([][]parquet.Row) []parquet.Row
		// want is a text every problem holds; "" means none.
		want string
	}{
		{name: "clean", order: inOrder},
		{name: "not-contiguous", want: "not contiguous", order: func(episodes [][]parquet.Row) []parquet.Row {
			// The first episode's last row after the second episode.
			e0 := episodes[0]
			out := append([]parquet.Row(nil), e0[:len(e0)-1]...)
			for _, e := range episodes[1:] {
				out = append(out, e...)
			}
			return append(out, e0[len(e0)-1])
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			roottest.CopyDir(t, base, root)
			toSessionLayout(t, root, tc.order)
			var stepsFiles int
			for _, f := range list(t, root).Files {
				if f.Table == schema.TableSteps {
					stepsFiles++
					if f.Episode || path.Dir(f.Rel) != hive.RecordingPartition(schema.TableSteps, f.Recording).Rel() {
						t.Fatalf("%s is not in a recording partition", f.Rel)
					}
				}
			}
			if stepsFiles != 1 {
				t.Fatalf("%d steps files, want 1", stepsFiles)
			}
			rep, out := verifyRoot(t, root)
			if tc.want == "" {
				if !rep.OK() {
					t.Fatalf("want no problems, got:\n%s", out)
				}
				return
			}
			if rep.OK() || !strings.Contains(out, tc.want) {
				t.Fatalf("want a problem saying %q, got:\n%s", tc.want, out)
			}
		})
	}
}
