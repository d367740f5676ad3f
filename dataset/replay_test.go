package dataset_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// replayInto replays every session of src as an event stream and records
// the stream into a new ROOT, as 'rlrec replay --format events | rlrec
// ingest' does.
func replayInto(t testing.TB, src string) (string, []dataset.ReplayReport) {
	t.Helper()
	d, err := dataset.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	w := events.NewStreamWriter(&stream)
	var reps []dataset.ReplayReport
	for _, sid := range d.Recordings() {
		s, err := d.Session(sid)
		if err != nil {
			t.Fatal(err)
		}
		clock := ""
		if row := s.Row(); row != nil {
			clock = row.Clock
		}
		rep, err := d.ReplayEvents(sid, func(ev events.Event, at time.Time) error {
			return w.WriteStamped(ev, at, dataset.RecorderClocked(clock, ev))
		})
		if err != nil {
			t.Fatalf("replay %s: %v", sid, err)
		}
		reps = append(reps, rep)
	}
	dst := filepath.Join(t.TempDir(), "replayed")
	rec, err := recorder.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	sr := events.NewStreamReader(&stream, events.DefaultMaxMessageBytes)
	for sr.Next() {
		if sr.Time().IsZero() {
			t.Fatalf("event %d has no time", sr.Index())
		}
		record := rec.RecordAt
		if sr.RecorderClock() {
			record = func(ctx context.Context, ev events.Event, at time.Time) error {
				return rec.RecordStamped(ctx, ev, at, 0)
			}
		}
		if err := record(context.Background(), sr.Event(), sr.Time()); err != nil {
			t.Fatal(err)
		}
	}
	if err := sr.Err(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return dst, reps
}

// partitionRows reads every row of a partition's part files, in part order.
func partitionRows(t testing.TB, files []dataset.File) []parquet.Row {
	t.Helper()
	var out []parquet.Row
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		pf, err := parquet.OpenFile(fh, st.Size())
		if err != nil {
			t.Fatalf("%s: %v", f.Path, err)
		}
		r := parquet.NewReader(pf)
		buf := make([]parquet.Row, 64)
		for {
			n, err := r.ReadRows(buf)
			for _, row := range buf[:n] {
				out = append(out, row.Clone())
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f.Path, err)
			}
		}
		r.Close()
		fh.Close()
	}
	return out
}

// compareRoots checks that two ROOTs hold the same partitions with equal
// rows in every table.
func compareRoots(t *testing.T, a, b string) {
	t.Helper()
	da, err := dataset.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := dataset.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	compared := map[string]int{}
	defer func() {
		for _, table := range dataset.Tables {
			if compared[table] == 0 {
				t.Errorf("no %s rows compared", table)
			}
		}
		t.Logf("rows compared: %v", compared)
	}()
	for _, table := range dataset.Tables {
		type part struct {
			rec dataset.Recording
			ep  bool
			rid string
		}
		parts := func(d *dataset.Dataset) []part {
			var ps []part
			seen := map[part]bool{}
			for _, f := range d.Files(table) {
				p := part{f.Recording, f.Episode, f.EpisodeRecordID}
				if !seen[p] {
					seen[p] = true
					ps = append(ps, p)
				}
			}
			return ps
		}
		pa, pb := parts(da), parts(db)
		if fmt.Sprint(pa) != fmt.Sprint(pb) {
			t.Errorf("%s partitions differ:\n original %v\n replayed %v", table, pa, pb)
			continue
		}
		for _, p := range pa {
			files := func(d *dataset.Dataset) []dataset.File {
				if p.ep {
					return d.EpisodeFiles(p.rec, p.rid)
				}
				return d.PartitionFiles(table, p.rec)
			}
			ra := partitionRows(t, files(da))
			compared[table] += len(ra)
			rb := partitionRows(t, files(db))
			if len(ra) != len(rb) {
				t.Errorf("%s %s/%s: %d rows, replayed %d", table, p.rec, p.rid, len(ra), len(rb))
				continue
			}
			for i := range ra {
				if !ra[i].Equal(rb[i]) {
					t.Errorf("%s %s/%s row %d differs:\n original %v\n replayed %v", table, p.rec, p.rid, i, ra[i], rb[i])
					break
				}
			}
		}
	}
}

func TestReplayRoundTrip(t *testing.T) {
	type tc struct {
		name string
		cfg  sim.Config
	}
	var tests []tc
	for _, env := range sim.Envs() {
		for _, mode := range []sim.Autoreset{sim.AutoresetNextStep, sim.AutoresetDisabled} {
			lanes, eps, steps := 3, int64(5), int64(12)
			if env == "pick-place" {
				lanes, eps = 2, 3
			}
			cfg := sim.Config{Env: env, NumEnvs: lanes, Autoreset: mode, MaxEpisodes: eps, TimeLimit: steps, Seed: 11}
			if mode == sim.AutoresetDisabled {
				// One lane, capped by the runtime: what rlmesh allows.
				cfg.NumEnvs, cfg.TimeLimit, cfg.MaxEpisodeSteps = 1, 0, steps
			}
			tests = append(tests, tc{fmt.Sprintf("%s/%s", env, mode), cfg})
		}
	}
	tests = append(tests,
		// One lane under next-step: every completion is followed by a
		// batch that records no row.
		tc{"one lane next-step", sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 6, Seed: 2}},
		// Lanes finishing together (a step cap and equal starts).
		tc{"all lanes together", sim.Config{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6, TimeLimit: 4, Seed: 2}},
		tc{"failed session", sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 50, TimeLimit: 10, FailAfterSteps: 25, Seed: 4}},
		tc{"failed after completions", sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 50, TimeLimit: 5, FailAfterSteps: 5, Seed: 4}},
	)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src, _ := record(t, tc.cfg)
			if tc.name == "failed session" && unfinishedRows(t, src) == 0 {
				t.Fatal("the failed session kept no unfinished action: the replay of one is not tested")
			}
			dst, reps := replayInto(t, src)
			for _, rep := range reps {
				t.Logf("%+v", rep)
				if len(rep.Notes) > 0 {
					t.Errorf("replay notes: %v", rep.Notes)
				}
			}
			compareRoots(t, src, dst)
		})
	}
}

// TestReplayTwoSessions replays a ROOT of several sessions at once.
func TestReplayTwoSessions(t *testing.T) {
	src, _ := record(t,
		sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 8, Seed: 5},
		sim.Config{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 7, Seed: 6},
	)
	dst, reps := replayInto(t, src)
	if len(reps) != 2 {
		t.Fatalf("%d reports", len(reps))
	}
	compareRoots(t, src, dst)
}

func TestParseFinalInfo(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *spacesv1.MetaMap
	}{
		{"kinds", `{"b":true,"f":1.5,"i":3,"s":"x","n":null}`, &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"b": {Kind: &spacesv1.MetaValue_Bool{Bool: true}},
			"f": {Kind: &spacesv1.MetaValue_Number{Number: 1.5}},
			"i": {Kind: &spacesv1.MetaValue_Integer{Integer: 3}},
			"s": {Kind: &spacesv1.MetaValue_Text{Text: "x"}},
			"n": {},
		}}},
		{"exponent is a double", `{"e":1e+21}`, &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"e": {Kind: &spacesv1.MetaValue_Number{Number: 1e21}}}}},
		{"too large for int64", `{"u":18446744073709551615}`, &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"u": {Kind: &spacesv1.MetaValue_Number{Number: 18446744073709551615}}}}},
		{"infinity", `{"x":"-Infinity"}`, &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"x": {Kind: &spacesv1.MetaValue_Number{Number: math.Inf(-1)}}}}},
		{"nested", `{"l":[1,{"k":"v"}]}`, &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"l": {Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: []*spacesv1.MetaValue{
				{Kind: &spacesv1.MetaValue_Integer{Integer: 1}},
				{Kind: &spacesv1.MetaValue_Map{Map: &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
					"k": {Kind: &spacesv1.MetaValue_Text{Text: "v"}}}}}},
			}}}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dataset.ParseFinalInfo(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	for _, bad := range []string{``, `[1]`, `{"a":1} x`, `{`} {
		if _, err := dataset.ParseFinalInfo(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

var _ = schema.TableSteps

// TestReplayPackedReadsOnce replays a session recorded in layout session,
// whose packed file holds many episodes per row group: the events equal
// those replayed from the same session in layout episode, and each row
// group is read twice at most (the replay reads the steps once to plan the
// batches and once to emit them), each file opened once: not once per
// episode.
func TestReplayPackedReadsOnce(t *testing.T) {
	cfg := sim.Config{Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 300, Seed: 3}
	replay := func(layout hive.Layout) ([]string, *dataset.Dataset, dataset.Recording) {
		root, sums := recordWith(t, []recorder.Option{recorder.WithLayout(layout), recorder.WithRowGroupRows(500)}, cfg)
		sum := sums[0]
		d, err := dataset.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		r := dataset.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}
		var evs []string
		if _, err := d.ReplayEvents(r, func(ev events.Event, at time.Time) error {
			js, err := json.Marshal(ev)
			evs = append(evs, fmt.Sprintf("%s %T %s", at.Format(time.RFC3339Nano), ev, js))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return evs, d, r
	}
	want, _, _ := replay(hive.LayoutEpisode)
	got, d, r := replay(hive.LayoutSession)
	if len(got) != len(want) {
		t.Fatalf("packed replay: %d events, episode layout %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("event %d differs:\n packed  %s\n episode %s", i, got[i], want[i])
		}
	}
	files := d.PartitionFiles(schema.TableSteps, r)
	groups := 0
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := fh.Stat()
		pf, err := parquet.OpenFile(fh, st.Size())
		if err != nil {
			t.Fatal(err)
		}
		groups += len(pf.RowGroups())
		fh.Close()
	}
	decoded, opened := d.PackedReads()
	t.Logf("%d events, %d packed files, %d row groups; decoded %d, opened %d", len(got), len(files), groups, decoded, opened)
	if groups < 10 {
		t.Fatalf("only %d row groups: the test needs many episodes per group and many groups", groups)
	}
	if decoded > 2*groups || opened != len(files) {
		t.Errorf("decoded %d row groups and opened %d files, want each of the %d groups twice at most and each of the %d files once", decoded, opened, groups, len(files))
	}
}

// unfinishedRows counts the logs rows of root that hold an unfinished
// action (schema.UnfinishedAction).
func unfinishedRows(t *testing.T, root string) int {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n := 0
	for _, rec := range d.Recordings() {
		logs, err := d.Logs(rec)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range logs {
			if _, err := schema.ParseUnfinishedAction(l.Message); err == nil && l.Source != nil && *l.Source == schema.SourceEvent {
				n++
			}
		}
	}
	return n
}
