package recorder_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

// recordAll hands evs to a recorder opened on root and returns the error
// each event's hook returned.
func recordAll(t *testing.T, root string, evs []events.Event) []error {
	t.Helper()
	ctx := context.Background()
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, len(evs))
	at := time.Unix(1_700_000_000, 0)
	for i, ev := range evs {
		errs[i] = rec.RecordAt(ctx, ev, at.Add(time.Duration(i)*time.Millisecond))
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return errs
}

// checkRecordings opens root and checks that it holds exactly the
// recordings of sums, each ended with its episodes and steps.
func checkRecordings(t *testing.T, root string, sums []sim.Summary) {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Recordings(); len(got) != len(sums) {
		t.Fatalf("recordings %v, want %d", got, len(sums))
	}
	for _, sum := range sums {
		rec := dataset.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}
		s, err := d.Session(rec)
		if err != nil {
			t.Fatal(err)
		}
		row := s.Row()
		if len(s.Rows) != 1 || row.Status != schema.SessionEnded || row.TotalSteps == nil || *row.TotalSteps != sum.Steps || row.Problems != 0 {
			t.Fatalf("%s: rows %+v, want one ended row of %d steps and no problems", rec, s.Rows, sum.Steps)
		}
		eps, err := d.Episodes(rec)
		if err != nil {
			t.Fatal(err)
		}
		var steps int64
		completed := 0
		for _, e := range eps {
			steps += e.Row.StepsRecorded
			if e.Row.Status == schema.EpisodeCompleted {
				completed++
			}
			if e.Row.StepsRecorded > 0 && (e.Row.StepsFile == nil || !d.HasSteps(rec, e.EpisodeRecordID)) {
				t.Fatalf("%s episode %s: steps_file %v", rec, e.EpisodeRecordID, e.Row.StepsFile)
			}
		}
		if int64(completed) != sum.Episodes || steps != row.StepsRecorded || int64(len(eps)) != row.EpisodesRecorded {
			t.Fatalf("%s: %d completed of %d rows, %d steps; want %d completed, row %+v", rec, completed, len(eps), steps, sum.Episodes, row)
		}
	}
}

// TestSharedSessionID records two runs that share a session id, as
// rlmesh's local runner gives every run of one process: both are kept,
// each under its own env id.
func TestSharedSessionID(t *testing.T) {
	cfg := sim.Config{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 8, SessionID: "local-4242", Clock: sim.StepClock(time.Unix(1_700_000_000, 0), time.Millisecond)}
	other := cfg
	other.Seed = 7
	c := &collector{}
	sums, err := sim.RunSessions(context.Background(), c, []sim.Config{cfg, other})
	if err != nil {
		t.Fatal(err)
	}
	if sums[0].SessionID != sums[1].SessionID || sums[0].EnvID == sums[1].EnvID {
		t.Fatalf("want a shared session id and two env ids: %+v", sums)
	}
	root := t.TempDir()
	for i, err := range recordAll(t, root, c.evs) {
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	checkRecordings(t, root, sums)
	d, _ := dataset.Open(root)
	if _, err := d.Lookup("local-4242", ""); !errors.Is(err, dataset.ErrAmbiguous) {
		t.Fatalf("Lookup of a shared session id: %v, want ErrAmbiguous", err)
	}
	if rec, err := d.Lookup("local-4242", sums[1].EnvID); err != nil || rec.EnvID != sums[1].EnvID {
		t.Fatalf("Lookup with the env id: %v, %v", rec, err)
	}
}

// snapshotTree reads every file under root.
func snapshotTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if e.IsDir() {
			out[rel+"/"] = nil
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReingestRefused hands a ROOT a stream it already holds, whole and a
// prefix of it: every recording's SessionStarted, and each later event of
// it, is refused with ErrRecordingExists, and the ROOT's data files stay
// byte for byte what they were.
func TestReingestRefused(t *testing.T) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, Seed: 1},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, Seed: 2},
	}
	c := &collector{}
	sums, err := sim.RunSessions(context.Background(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	recordAll(t, root, c.evs)
	checkRecordings(t, root, sums)
	data := func() map[string][]byte {
		m := snapshotTree(t, root)
		for k := range m {
			if strings.HasPrefix(k, "_rlrec") {
				delete(m, k)
			}
		}
		return m
	}
	before := data()
	for _, tc := range []struct {
		name string
		evs  []events.Event
	}{
		{"whole stream", c.evs},
		{"prefix", c.evs[:len(c.evs)/3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := recordAll(t, root, tc.evs)
			for i, err := range errs {
				if !errors.Is(err, recorder.ErrRecordingExists) {
					t.Fatalf("event %d (%s): %v, want ErrRecordingExists", i, tc.evs[i].Kind(), err)
				}
			}
			if !strings.Contains(errs[0].Error(), "SessionStarted") {
				t.Errorf("the refusal does not say what was refused: %v", errs[0])
			}
			after := data()
			if len(after) != len(before) {
				t.Fatalf("%d entries under ROOT, was %d", len(after), len(before))
			}
			for k, v := range before {
				if !bytes.Equal(after[k], v) {
					t.Fatalf("%s changed", k)
				}
			}
			checkRecordings(t, root, sums)
		})
	}
	// A new run into the same ROOT still records beside them.
	more := &collector{}
	sums2, err := sim.RunSessions(context.Background(), more, []sim.Config{{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 3}})
	if err != nil {
		t.Fatal(err)
	}
	for i, err := range recordAll(t, root, more.evs) {
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	checkRecordings(t, root, append(sums, sums2...))
}

// TestLongIDs records sessions whose ids are too long for a file name once
// escaped, beside an ordinary one: each gets its own partitions, named by a
// cut and hashed value, and reads back with its real ids from the files'
// metadata.
func TestLongIDs(t *testing.T) {
	base := sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4}
	var cfgs []sim.Config
	for i, sid := range []string{"", strings.Repeat("s", 300), strings.Repeat("x", 10<<10), strings.Repeat("é", 42), strings.Repeat("s", 300) + "2"} {
		c := base
		c.Seed, c.SessionID = uint64(i+1), sid
		cfgs = append(cfgs, c)
	}
	c := &collector{}
	sums, err := sim.RunSessions(context.Background(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for i, err := range recordAll(t, root, c.evs) {
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range d.Strays() {
		t.Errorf("stray %s: %s", s.Path[len(root):], s.Reason)
	}
	checkRecordings(t, root, sums)
	err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && len(e.Name()) > 255 {
			t.Errorf("%s: a name of %d bytes", p, len(e.Name()))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestHalfCreatedRoot: what a crash of a new ROOT's first recorder leaves
// (directories and temp files, no layout file, no log) is taken as a new
// ROOT: Open removes the temp files, and the layout it was asked for
// holds.
func TestHalfCreatedRoot(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "steps", "session_id=s", "env_id=r", "episode_record_id=ep-000001")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "_rlrec", "log"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(dir, ".part-00000.parquet.tmp"), filepath.Join(root, "_rlrec", "open")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A recovery that writes nothing does not choose the layout.
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatalf("Open of a half-created ROOT: %v", err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".part-00000.parquet.tmp")); err == nil {
		t.Fatal("the crashed writer's temp file is still there")
	}
	rec, err = recorder.Open(root, recorder.WithLayout(hive.LayoutSession))
	if err != nil {
		t.Fatalf("Open with layout session after a recovery that wrote nothing: %v", err)
	}
	rec.Close(context.Background())
}

// TestLayoutFile: a new ROOT records its schema version and layout; a ROOT
// written before schema version 2 (tables, no layout file), or one whose
// layout file names another version, is refused before anything changes.
func TestLayoutFile(t *testing.T) {
	root := t.TempDir()
	recordAll(t, root, nil)
	if _, err := os.Stat(filepath.Join(root, "_rlrec", "layout")); err == nil {
		t.Fatal("a recorder that wrote nothing chose the ROOT's layout")
	}
	c := &collector{}
	if _, err := sim.RunSessions(context.Background(), c, []sim.Config{{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1, Seed: 1}}); err != nil {
		t.Fatal(err)
	}
	recordAll(t, root, c.evs)
	b, err := os.ReadFile(filepath.Join(root, "_rlrec", "layout"))
	if err != nil || string(b) != "schema_version=3\nlayout=episode\n" {
		t.Fatalf("layout file %q, %v", b, err)
	}
	for _, tc := range []struct {
		name  string
		setup func(root string) error
		opts  []recorder.Option
	}{
		{"v1 tables without a layout file", func(root string) error {
			dir := filepath.Join(root, "steps", "session_id=s", "episode_record_id=ep-000001")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "part-00000.parquet"), []byte("PAR1"), 0o644)
		}, nil},
		{"another schema version", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "_rlrec"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "_rlrec", "layout"), []byte("schema_version=4\nlayout=episode\n"), 0o644)
		}, nil},
		{"another layout", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "_rlrec"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "_rlrec", "layout"), []byte("schema_version=2\nlayout=session\n"), 0o644)
		}, []recorder.Option{recorder.WithLayout(hive.LayoutEpisode)}},
		{"an unknown layout", func(root string) error {
			if err := os.MkdirAll(filepath.Join(root, "_rlrec"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(root, "_rlrec", "layout"), []byte("schema_version=2\nlayout=diagonal\n"), 0o644)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := tc.setup(root); err != nil {
				t.Fatal(err)
			}
			before := snapshotTree(t, root)
			rec, err := recorder.Open(root, tc.opts...)
			if err == nil {
				rec.Close(context.Background())
				t.Fatal("Open accepted the ROOT")
			}
			if !errors.Is(err, recorder.ErrLayout) {
				t.Fatalf("Open: %v, want ErrLayout", err)
			}
			after := snapshotTree(t, root)
			delete(after, filepath.Join("_rlrec", "LOCK"))
			delete(after, "_rlrec/")
			delete(before, "_rlrec/")
			if len(after) != len(before) {
				t.Fatalf("the refused ROOT changed: %v -> %v", before, after)
			}
		})
	}
}
