package recorder_test

import (
	"context"
	"fmt"
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
	"github.com/rlrec/rlrec/verify"
)

// TestSessionLayout records short and long episodes in layout "session":
// whole episodes packed into a few part files per recording (a long one
// streams into a part of its own), every episode's steps readable from the
// file its steps_file names, and the ROOT verifies clean.
func TestSessionLayout(t *testing.T) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 60, Seed: 1},
		{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 40, Seed: 2},
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 20000, Seed: 3},
	}
	root := filepath.Join(t.TempDir(), "root")
	ctx := context.Background()
	rec, err := recorder.Open(root, recorder.WithLayout(hive.LayoutSession), recorder.WithMemoryBudget(64<<20))
	if err != nil {
		t.Fatal(err)
	}
	sums, err := sim.RunSessions(ctx, rec, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkRecordings(t, root, sums)
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for i, sum := range sums {
		r := dataset.Recording{SessionID: sum.SessionID, EnvID: sum.EnvID}
		eps, err := d.Episodes(r)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]bool{}
		for _, e := range eps {
			if e.Row.StepsFile == nil {
				continue
			}
			files[*e.Row.StepsFile] = true
			if !strings.HasPrefix(*e.Row.StepsFile, hive.RecordingPartition(schema.TableSteps, r).Rel()+"/part-") {
				t.Fatalf("%s: steps_file %s is not in the recording's partition", e.EpisodeRecordID, *e.Row.StepsFile)
			}
			st, err := d.Steps(r, e.EpisodeRecordID)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(0)
			for st.Next() {
				s := st.Step()
				if s.EpisodeRecordID != e.EpisodeRecordID || s.Step != n {
					t.Fatalf("%s: row %d is step %d of %s", e.EpisodeRecordID, n, s.Step, s.EpisodeRecordID)
				}
				n++
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if n != e.Row.StepsRecorded {
				t.Fatalf("%s: %d steps read, %d recorded", e.EpisodeRecordID, n, e.Row.StepsRecorded)
			}
		}
		parts := d.PartitionFiles(schema.TableSteps, r)
		if len(parts) != len(files) || len(parts) == 0 {
			t.Fatalf("recording %d: %d steps files, %d named by episodes rows", i, len(parts), len(files))
		}
		if i == 0 && len(parts) > 3 {
			t.Errorf("60 short episodes in %d steps files; want them packed", len(parts))
		}
		if len(d.EpisodeRecordIDs(r)) != len(eps) {
			t.Errorf("EpisodeRecordIDs lists %d of %d episodes", len(d.EpisodeRecordIDs(r)), len(eps))
		}
	}
	rep, err := verify.Root(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		var b strings.Builder
		rep.Write(&b)
		t.Fatalf("verify:\n%s", b.String())
	}
	b, err := os.ReadFile(filepath.Join(root, "_rlrec", "layout"))
	if err != nil || !strings.Contains(string(b), "layout=session") {
		t.Fatalf("layout file %q, %v", b, err)
	}
	// A later recorder takes the ROOT's layout; asking for the other is refused.
	if _, err := recorder.Open(root, recorder.WithLayout(hive.LayoutEpisode)); err == nil {
		t.Fatal("Open with the other layout accepted the ROOT")
	}
	rec, err = recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Layout() != hive.LayoutSession {
		t.Errorf("layout %q", rec.Layout())
	}
	rec.Close(ctx)
}

// TestEpisodeBatchDelay: an episode's row is published within the batch
// delay after it completes, while its recording goes on.
func TestEpisodeBatchDelay(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	ctx := context.Background()
	rec, err := recorder.Open(root, recorder.WithEpisodeBatchDelay(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(ctx)
	c := &collector{}
	if _, err := sim.RunSessions(ctx, c, []sim.Config{{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, Seed: 1}}); err != nil {
		t.Fatal(err)
	}
	// Hand over everything up to the second episode's reset observation:
	// the first episode is complete and finalised, the recording open.
	starts := 0
	for _, ev := range c.evs {
		if err := rec.RecordAt(ctx, ev, time.Now()); err != nil {
			t.Fatal(err)
		}
		if ev.Kind() == events.KindEpisodeStarted {
			starts++
		}
		if starts == 2 && ev.Kind() == events.KindObservationEmitted {
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := dataset.Open(root)
		if err == nil && len(d.Files(schema.TableEpisodes)) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first episode's row was not published within 5 s of a 50 ms batch delay")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// openForEvents opens a recorder on root and returns it with a function
// that hands it one event, failing the test on an error.
func openForEvents(t *testing.T, root string) (*recorder.Recorder, func(events.Event)) {
	t.Helper()
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1_700_000_000, 0)
	return rec, func(ev events.Event) {
		t.Helper()
		if err := rec.RecordAt(context.Background(), ev, at); err != nil {
			t.Fatal(err)
		}
	}
}

// TestManyEmptyEpisodes: a stream of episodes that never step (300,000
// EpisodeStarted once made 300,000 files and 3.5 GB) costs no steps file
// and a few episodes files.
func TestManyEmptyEpisodes(t *testing.T) {
	const n = 30000
	root := filepath.Join(t.TempDir(), "root")
	ctx := context.Background()
	rec, record := openForEvents(t, root)
	route := events.RuntimeEnvContext{EnvID: "env-empty"}
	record(&events.SessionStarted{SessionID: "s", Route: route, EnvID: route.EnvID})
	for i := range n {
		record(&events.EpisodeStarted{SessionID: "s", Route: route, EpisodeID: fmt.Sprint("e", i), EpisodeRecordID: fmt.Sprintf("ep-%06d", i+1), EpisodeIndex: int64(i + 1)})
	}
	record(&events.SessionEnded{SessionID: "s", Route: route, Reason: "completed requested episodes"})
	record(&events.TelemetrySnapshot{SessionID: "s", Route: route, Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if f := d.Files(schema.TableSteps); len(f) != 0 {
		t.Fatalf("%d steps files for episodes without steps", len(f))
	}
	r := dataset.Recording{SessionID: "s", EnvID: route.EnvID}
	if f := d.PartitionFiles(schema.TableEpisodes, r); len(f) > n/4096+2 {
		t.Fatalf("%d episodes files for %d episodes", len(f), n)
	}
	eps, err := d.Episodes(r)
	if err != nil || len(eps) != n {
		t.Fatalf("%d episodes rows, %v; want %d", len(eps), err, n)
	}
}

// TestLogsStreamOut: a running session's log lines and telemetry rows are
// written out in chunks as they come, not held until it ends (1.2 million
// log lines in one session once peaked at 1.46 GB).
func TestLogsStreamOut(t *testing.T) {
	const n = 200_000
	root := filepath.Join(t.TempDir(), "root")
	ctx := context.Background()
	rec, record := openForEvents(t, root)
	route := events.RuntimeEnvContext{EnvID: "env-logs"}
	record(&events.SessionStarted{SessionID: "s", Route: route, EnvID: route.EnvID})
	for i := range n {
		record(&events.Log{SessionID: "s", Route: route, Level: events.LogInfo, Message: fmt.Sprintf("line %d of a chatty environment", i)})
	}
	r := dataset.Recording{SessionID: "s", EnvID: route.EnvID}
	// The session is still running: its lines must reach files anyway.
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, err := dataset.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.PartitionFiles(schema.TableLogs, r)) >= n/(1<<16) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d logs files while the session runs, want its %d lines written out in chunks", len(d.PartitionFiles(schema.TableLogs, r)), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	record(&events.SessionEnded{SessionID: "s", Route: route, Reason: "completed requested episodes"})
	record(&events.TelemetrySnapshot{SessionID: "s", Route: route, Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	logs, err := d.Logs(r)
	if err != nil || len(logs) != n {
		t.Fatalf("%d log rows, %v; want %d", len(logs), err, n)
	}
	for i, l := range logs {
		if want := fmt.Sprintf("line %d of a chatty environment", i); l.Message != want {
			t.Fatalf("row %d: %q, want %q", i, l.Message, want)
		}
	}
	s, err := d.Session(r)
	if err != nil || len(s.Rows) != 1 {
		t.Fatalf("sessions rows %v, %v; want one", s, err)
	}
}
