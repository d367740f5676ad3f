package dataset_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

var clockStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// record runs the sessions one after another into a fresh ROOT with
// deterministic clocks, and returns the ROOT and what each session did.
// collect, when not nil, also receives every event.
func record(t testing.TB, cfgs ...sim.Config) (string, []sim.Summary) {
	t.Helper()
	return recordWith(t, nil, cfgs...)
}

// recordWith is record with recorder options (after the test clock).
func recordWith(t testing.TB, opts []recorder.Option, cfgs ...sim.Config) (string, []sim.Summary) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root, append([]recorder.Option{recorder.WithClock(sim.StepClock(clockStart, time.Millisecond))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	var sums []sim.Summary
	for i, cfg := range cfgs {
		cfg.Clock = sim.StepClock(clockStart.Add(time.Duration(i)*time.Hour), time.Millisecond)
		sum, err := sim.Run(context.Background(), rec, cfg)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, sum)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root, sums
}

// laneStep is what the simulated runtime handed over for one lane of one
// step, collected from the events.
type laneStep struct {
	rid    string
	step   int64
	action [][]byte
	reward float64
}

// collector records each applied lane action with its reward.
type collector struct {
	events.NoopHooks
	layout  *schema.Layout
	pending []laneStep
	steps   map[string][]laneStep
}

func (c *collector) OnActionReceived(_ context.Context, e *events.ActionReceived) error {
	if c.layout == nil {
		c.layout, _ = schema.Compile(e.ActionSpace)
	}
	lanes, err := blob.SplitLanesInto(nil, c.layout, e.Action, len(e.EpisodeRecordIDs))
	if err != nil {
		return err
	}
	c.pending = c.pending[:0]
	for i, rid := range e.EpisodeRecordIDs {
		act := make([][]byte, len(lanes[i]))
		for j, l := range lanes[i] {
			act[j] = append([]byte{}, l...)
		}
		c.pending = append(c.pending, laneStep{rid: rid, step: e.Step, action: act})
	}
	return nil
}

func (c *collector) OnStepCompleted(_ context.Context, e *events.StepCompleted) error {
	for i := range c.pending {
		c.pending[i].reward = e.Rewards[i]
	}
	return nil
}

func TestOpenListsAndReads(t *testing.T) {
	root, sums := record(t,
		sim.Config{Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, TimeLimit: 30, Seed: 7},
		sim.Config{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeSteps: 9, Seed: 8},
	)
	// A temp file and an unknown file are skipped and listed as strays.
	tmp := filepath.Join(root, "steps", ".part-00009.parquet.tmp")
	if err := os.WriteFile(tmp, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ids := d.Recordings()
	if len(ids) != 2 {
		t.Fatalf("recordings %v, want 2", ids)
	}
	want := map[dataset.Recording]bool{recOf(sums[0]): true, recOf(sums[1]): true}
	for _, id := range ids {
		if !want[id] {
			t.Errorf("unexpected session %q", id)
		}
	}
	if st := d.Strays(); len(st) != 1 || st[0].Path != tmp {
		t.Errorf("strays %+v, want the temp file", st)
	}
	for _, table := range dataset.Tables {
		if len(d.Files(table)) == 0 {
			t.Errorf("table %s has no files", table)
		}
	}
	for i, sum := range sums {
		s, err := d.Session(recOf(sum))
		if err != nil {
			t.Fatal(err)
		}
		row := s.Row()
		if row == nil || row.Status != schema.SessionEnded || row.TotalSteps == nil || *row.TotalSteps != sum.Steps {
			t.Fatalf("session %d row %+v, want ended with %d steps", i, row, sum.Steps)
		}
		eps, err := d.Episodes(recOf(sum))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(eps)) != row.EpisodesRecorded {
			t.Errorf("session %d: %d episodes rows, row says %d", i, len(eps), row.EpisodesRecorded)
		}
		var stepsTotal int64
		for _, ep := range eps {
			if ep.Spaces.Observation == nil || ep.Spaces.Action == nil {
				t.Fatalf("episode %s has no spaces", ep.EpisodeRecordID)
			}
			if ep.Row.StepsRecorded == 0 {
				continue
			}
			st, err := d.Steps(recOf(sum), ep.EpisodeRecordID)
			if err != nil {
				t.Fatal(err)
			}
			var n int64
			var rewards float64
			for st.Next() {
				s := st.Step()
				if s.Step != n {
					t.Fatalf("%s: step %d at position %d", ep.EpisodeRecordID, s.Step, n)
				}
				if s.EpisodeID != ep.Row.EpisodeID || s.EnvIndex != ep.Row.EnvIndex || s.IsFirst != (n == 0) {
					t.Fatalf("%s step %d: %+v does not fit the episode row", ep.EpisodeRecordID, n, s)
				}
				if s.ObservationBlob == nil || s.ActionBlob == nil {
					t.Fatalf("%s step %d: null blob", ep.EpisodeRecordID, n)
				}
				if _, err := st.AppendObservationJSON(nil); err != nil {
					t.Fatal(err)
				}
				vals, err := st.ActionValues()
				if err != nil || len(vals) != len(ep.Spaces.Action.Leaves) {
					t.Fatalf("action values %v, %v", vals, err)
				}
				rewards += s.Reward
				n++
			}
			if err := st.Err(); err != nil {
				t.Fatal(err)
			}
			st.Close()
			if n != ep.Row.StepsRecorded || rewards != ep.Row.RewardSum {
				t.Errorf("%s: %d steps summing %v, row says %d and %v", ep.EpisodeRecordID, n, rewards, ep.Row.StepsRecorded, ep.Row.RewardSum)
			}
			stepsTotal += n
		}
		if stepsTotal != row.StepsRecorded {
			t.Errorf("session %d: %d steps read, row says %d", i, stepsTotal, row.StepsRecorded)
		}
		logs, err := d.Logs(recOf(sum))
		if err != nil || len(logs) == 0 {
			t.Errorf("logs %v, %v", logs, err)
		}
		tele, err := d.Telemetry(recOf(sum))
		if err != nil || len(tele) == 0 {
			t.Errorf("telemetry %v, %v", tele, err)
		}
	}
}

// TestStepsMatchEvents checks every step's action and reward against what
// the simulated runtime handed over.
func TestStepsMatchEvents(t *testing.T) {
	cfg := sim.Config{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 12, Seed: 3,
		Clock: sim.StepClock(clockStart, time.Millisecond)}
	c := &collector{steps: map[string][]laneStep{}}
	// Collect the events of the same run (same seed and clock) first.
	hooks := &collectAll{c: c}
	if _, err := sim.Run(context.Background(), hooks, cfg); err != nil {
		t.Fatal(err)
	}
	root, sums := record(t, sim.Config{Env: cfg.Env, NumEnvs: cfg.NumEnvs, Autoreset: cfg.Autoreset, MaxEpisodes: cfg.MaxEpisodes, TimeLimit: cfg.TimeLimit, Seed: cfg.Seed})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for rid, want := range c.steps {
		st, err := d.Steps(recOf(sums[0]), rid)
		if err != nil {
			t.Fatal(err)
		}
		i := 0
		for st.Next() {
			if i >= len(want) {
				t.Fatalf("%s: more steps than applied actions", rid)
			}
			leaves, err := st.ActionLeaves()
			if err != nil {
				t.Fatal(err)
			}
			if string(blob.Encode(leaves)) != string(blob.Encode(want[i].action)) || st.Step().Reward != want[i].reward {
				t.Fatalf("%s step %d: action or reward differs", rid, i)
			}
			i++
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		st.Close()
		if i != len(want) {
			t.Errorf("%s: %d steps, %d applied", rid, i, len(want))
		}
	}
	if len(c.steps) == 0 {
		t.Fatal("no steps collected")
	}
}

// collectAll files each applied lane step under its episode. Left out,
// as the recorder records no row for them: steps of completed episodes
// (rlmesh rc.5's next-step autoreset step), the lanes a StepCompleted
// flags as their autoreset roll (rlmesh 0.1: the roll step names the
// ended episode until its deferred completion), and lanes of surplus
// episodes (0.1: ids that never got an EpisodeStarted).
type collectAll struct {
	events.NoopHooks
	c       *collector
	done    map[string]bool
	started map[string]bool
}

func (h *collectAll) OnActionReceived(ctx context.Context, e *events.ActionReceived) error {
	return h.c.OnActionReceived(ctx, e)
}

func (h *collectAll) OnEpisodeStarted(_ context.Context, e *events.EpisodeStarted) error {
	if h.started == nil {
		h.started = map[string]bool{}
	}
	h.started[e.EpisodeRecordID] = true
	return nil
}

func (h *collectAll) OnStepCompleted(ctx context.Context, e *events.StepCompleted) error {
	if err := h.c.OnStepCompleted(ctx, e); err != nil {
		return err
	}
	for i, ls := range h.c.pending {
		roll := i < len(e.AutoresetRoll) && e.AutoresetRoll[i]
		if ls.rid != "" && !h.done[ls.rid] && h.started[ls.rid] && !roll {
			h.c.steps[ls.rid] = append(h.c.steps[ls.rid], ls)
		}
	}
	return nil
}

func (h *collectAll) OnEpisodeCompleted(_ context.Context, e *events.EpisodeCompleted) error {
	if h.done == nil {
		h.done = map[string]bool{}
	}
	h.done[e.EpisodeRecordID] = true
	return nil
}

func TestOpenStepsFileAlone(t *testing.T) {
	root, sums := record(t, sim.Config{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 5, Seed: 1})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	files := d.EpisodeFiles(recOf(sums[0]), "ep-000001")
	if len(files) != 1 {
		t.Fatalf("steps files %v", files)
	}
	// A copy of the file, away from its ROOT, still decodes.
	data, err := os.ReadFile(files[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), "copy.parquet")
	if err := os.WriteFile(alone, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := dataset.OpenStepsFile(alone)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if v, _ := st.Metadata(schema.MetaEpisodeRecordID); v != "ep-000001" {
		t.Errorf("episode record id metadata %q", v)
	}
	n := 0
	for st.Next() {
		if _, err := st.AppendObservationJSON(nil); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ObservationValues(); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := st.Err(); err != nil || n != 5 {
		t.Fatalf("%d steps, err %v; want 5", n, err)
	}
}

func TestErrors(t *testing.T) {
	root, sums := record(t, sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 1, MaxEpisodeSteps: 3, Seed: 1})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	sid := recOf(sums[0])
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"unknown session", func() error { _, err := d.Session(dataset.Recording{SessionID: "nope"}); return err }, dataset.ErrNotFound},
		{"unknown episode steps", func() error { _, err := d.Steps(sid, "ep-999999"); return err }, dataset.ErrNotFound},
		{"unknown episode row", func() error { _, err := d.Episode(sid, "ep-999999"); return err }, dataset.ErrNotFound},
		{"missing root", func() error { _, err := dataset.Open(filepath.Join(root, "missing")); return err }, os.ErrNotExist},
		{"truncated file", func() error {
			f := d.EpisodeFiles(sid, "ep-000001")[0].Path
			data, _ := os.ReadFile(f)
			if err := os.WriteFile(f, data[:len(data)/2], 0o644); err != nil {
				return err
			}
			_, err := d.Steps(sid, "ep-000001")
			var fe *dataset.FileError
			if !errors.As(err, &fe) || fe.Path != f {
				t.Errorf("error %v does not name %s", err, f)
			}
			return err
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

// recOf is the recording a simulated session wrote.
func recOf(s sim.Summary) dataset.Recording {
	return dataset.Recording{SessionID: s.SessionID, EnvID: s.EnvID}
}
