package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/filetree"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// expectedEvent is one event of testdata/capped-disabled.events.json: the
// fields the driver's and the env server's rules determine.
type expectedEvent struct {
	Kind             string    `json:"kind"`
	Record           string    `json:"record"`
	Records          []string  `json:"records"`
	AutoReset        bool      `json:"auto_reset"`
	Step             int64     `json:"step"`
	IsReset          bool      `json:"is_reset"`
	Obs              float32   `json:"obs"`
	Rewards          []float64 `json:"rewards"`
	StepCount        int64     `json:"step_count"`
	CumulativeReward float64   `json:"cumulative_reward"`
	Terminated       bool      `json:"terminated"`
	Truncated        bool      `json:"truncated"`
	FinalInfo        bool      `json:"final_info"`
	Message          string    `json:"message"`
	Source           string    `json:"source"`
	Reason           string    `json:"reason"`
	TotalSteps       int64     `json:"total_steps"`
	TotalEpisodes    int64     `json:"total_episodes"`
	Horizon          string    `json:"horizon"`
}

// timedCollector keeps every event with the time the simulator handed it
// over with.
type timedCollector struct {
	collector
	times []time.Time
}

func (c *timedCollector) RecordAt(ctx context.Context, ev events.Event, t time.Time) error {
	c.times = append(c.times, t)
	return events.Dispatch(ctx, &c.collector, ev)
}

// TestCappedDisabledAsRlmesh runs a capped disabled session through the
// simulator and checks it against the event sequence rlmesh's driver and
// env server give (testdata/capped-disabled.events.json): event for event,
// and table for table once both are recorded (the expected events are
// built from the file, with the ids, times and timings the run drew, which
// the file cannot know).
func TestCappedDisabledAsRlmesh(t *testing.T) {
	raw, err := os.ReadFile("../testdata/capped-disabled.events.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Events []expectedEvent `json:"events"`
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	want := file.Events

	route := events.RuntimeEnvContext{EnvID: "0190a000-0000-7000-8000-000000000001", EnvComponentID: "env/scripted", ModelComponentID: "model/scripted"}
	cfg := Config{Env: "scripted", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodeSteps: 3, MaxEpisodes: 5, Order: OrderRC5,
		testEnv: scriptedEnv(0, false), SessionID: "capped", Route: route,
		Clock: StepClock(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Millisecond)}
	c := &timedCollector{}
	if _, err := Run(context.Background(), c, cfg); err != nil {
		t.Fatal(err)
	}
	got := c.all
	checkSession(t, cfg, got, false)
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %s", len(got), len(want), kinds(got))
	}

	// Event for event.
	ids := map[string]string{} // record id -> episode id, as the run drew them
	for i, ev := range got {
		w := want[i]
		if ev.Kind().String() != w.Kind {
			t.Fatalf("event %d is %s, want %s", i, ev.Kind(), w.Kind)
		}
		bad := func(format string, args ...any) {
			t.Helper()
			t.Errorf("event %d (%s): %s", i, ev.Kind(), fmt.Sprintf(format, args...))
		}
		switch e := ev.(type) {
		case *events.EpisodeStarted:
			if e.EpisodeRecordID != w.Record || e.StartedFromAutoReset != w.AutoReset || e.EnvIndex != 0 {
				bad("%s auto_reset %v, want %s %v", e.EpisodeRecordID, e.StartedFromAutoReset, w.Record, w.AutoReset)
			}
			ids[e.EpisodeRecordID] = e.EpisodeID
		case *events.ObservationEmitted:
			if !slices.Equal(e.EpisodeRecordIDs, w.Records) || e.Step != w.Step || e.IsReset != w.IsReset ||
				!bytes.Equal(e.Observation[0], f32(w.Obs)) {
				bad("%v step %d reset %v obs %x, want %v %d %v %v", e.EpisodeRecordIDs, e.Step, e.IsReset, e.Observation[0], w.Records, w.Step, w.IsReset, w.Obs)
			}
		case *events.ActionReceived:
			if !slices.Equal(e.EpisodeRecordIDs, w.Records) || e.Step != w.Step || !bytes.Equal(e.Action[0], make([]byte, 8)) {
				bad("%v step %d, want %v %d", e.EpisodeRecordIDs, e.Step, w.Records, w.Step)
			}
		case *events.StepCompleted:
			if e.EpisodeRecordID != w.Record || e.Step != w.Step || !slices.Equal(e.Rewards, w.Rewards) {
				bad("%s step %d rewards %v, want %s %d %v", e.EpisodeRecordID, e.Step, e.Rewards, w.Record, w.Step, w.Rewards)
			}
		case *events.EpisodeCompleted:
			if e.EpisodeRecordID != w.Record || e.StepCount != w.StepCount || e.CumulativeReward != w.CumulativeReward ||
				e.Terminated != w.Terminated || e.Truncated != w.Truncated || (e.FinalInfo != nil) != w.FinalInfo ||
				e.EpisodeID != ids[w.Record] {
				bad("%+v, want %+v", *e, w)
			}
		case *events.SessionEnded:
			if e.Reason != w.Reason || e.TotalSteps != w.TotalSteps || e.TotalEpisodes != w.TotalEpisodes {
				bad("%+v, want %+v", *e, w)
			}
		case *events.Log:
			if e.Source == nil || *e.Source != w.Source || !strings.HasPrefix(e.Message, "env reset complete in ") {
				bad("%q", e.Message)
			}
		case *events.TelemetrySnapshot:
			if e.Snapshot.Horizon.String() != w.Horizon {
				bad("horizon %s, want %s", e.Snapshot.Horizon, w.Horizon)
			}
		}
	}

	// Table for table: the expected sequence, with the run's ids, times
	// and timings, records what the run records.
	obsSpec, actSpec := boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 1), discreteSpec(spacesv1.DataType_DATA_TYPE_INT64, 2, 0)
	built := make([]events.Event, len(want))
	for i, w := range want {
		var ev events.Event
		switch w.Kind {
		case "SessionStarted":
			ev = &events.SessionStarted{EnvID: route.EnvID}
		case "Log":
			src := w.Source
			n := strings.TrimSuffix(strings.TrimPrefix(got[i].(*events.Log).Message, "env reset complete in "), "ms (1 episode(s) ready)")
			ev = &events.Log{Level: events.LogInfo, Message: strings.Replace(w.Message, "{N}", n, 1), Source: &src}
		case "EpisodeStarted":
			ev = &events.EpisodeStarted{EpisodeID: ids[w.Record], EpisodeRecordID: w.Record, EpisodeIndex: index(w.Record), StartedFromAutoReset: w.AutoReset}
		case "ObservationEmitted":
			ev = &events.ObservationEmitted{EpisodeID: ids[w.Records[0]], EpisodeRecordID: w.Records[0], EpisodeIDs: []string{ids[w.Records[0]]},
				EpisodeRecordIDs: w.Records, Step: w.Step, IsReset: w.IsReset, NumEnvs: 1, ObservationSpace: obsSpec, Observation: [][]byte{f32(w.Obs)}}
		case "ActionReceived":
			ev = &events.ActionReceived{EpisodeID: ids[w.Records[0]], EpisodeRecordID: w.Records[0], EpisodeIDs: []string{ids[w.Records[0]]},
				EpisodeRecordIDs: w.Records, Step: w.Step, ActionSpace: actSpec, Action: [][]byte{make([]byte, 8)}}
		case "StepCompleted":
			ev = &events.StepCompleted{EpisodeID: ids[w.Record], EpisodeRecordID: w.Record, Step: w.Step, Rewards: w.Rewards}
		case "EpisodeCompleted":
			ev = &events.EpisodeCompleted{EpisodeID: ids[w.Record], EpisodeRecordID: w.Record, EpisodeIndex: index(w.Record),
				StepCount: w.StepCount, CumulativeReward: w.CumulativeReward, Terminated: w.Terminated, Truncated: w.Truncated,
				DurationMs: got[i].(*events.EpisodeCompleted).DurationMs}
		case "SessionEnded":
			ev = &events.SessionEnded{Reason: w.Reason, TotalSteps: w.TotalSteps, TotalEpisodes: w.TotalEpisodes}
		case "TelemetrySnapshot":
			ev = &events.TelemetrySnapshot{Snapshot: got[i].(*events.TelemetrySnapshot).Snapshot}
		default:
			t.Fatalf("expected event %d: unknown kind %q", i, w.Kind)
		}
		setHeader(ev, cfg.SessionID, route)
		built[i] = ev
	}
	dir := t.TempDir()
	rootRun, rootWant := filepath.Join(dir, "run"), filepath.Join(dir, "want")
	record(t, rootRun, got, c.times)
	record(t, rootWant, built, c.times)
	filesRun, errRun := filetree.Read(rootRun, filetree.State)
	filesWant, errWant := filetree.Read(rootWant, filetree.State)
	if err := errors.Join(errRun, errWant); err != nil {
		t.Fatal(err)
	}
	if len(filesRun) == 0 || len(filesRun) != len(filesWant) {
		t.Fatalf("the run recorded %d files, the expected sequence %d", len(filesRun), len(filesWant))
	}
	for rel, b := range filesWant {
		if !bytes.Equal(filesRun[rel], b) {
			t.Errorf("%s differs between the run and the expected sequence", rel)
		}
	}

	// What the tables hold: the capped episode once, the repeat as a logs
	// row, one-step episodes after it, no problem.
	d, err := dataset.Open(rootRun)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := d.Recordings()[0]
	s, err := d.Session(rec)
	if err != nil {
		t.Fatal(err)
	}
	row := s.Row()
	if row.Problems != 0 || row.EpisodesRecorded != 5 || row.StepsRecorded != 7 || *row.TotalEpisodes != 5 || row.Clock != schema.ClockEvent {
		t.Errorf("sessions row %+v", row)
	}
	eps, err := d.Episodes(rec)
	if err != nil {
		t.Fatal(err)
	}
	var lengths []int64
	for _, e := range eps {
		lengths = append(lengths, e.Row.StepsRecorded)
	}
	if !slices.Equal(lengths, []int64{3, 1, 1, 1, 1}) || eps[4].Row.Status != schema.EpisodeIncomplete {
		t.Errorf("episode lengths %v, last %s", lengths, eps[4].Row.Status)
	}
	logs, err := d.Logs(rec)
	if err != nil {
		t.Fatal(err)
	}
	var repeats int
	for _, l := range logs {
		if l.Source != nil && *l.Source == schema.SourceEvent {
			ev, err := schema.ParseEventLog(rec.SessionID, route, l.Message)
			if ec, ok := ev.(*events.EpisodeCompleted); err != nil || !ok || ec.EpisodeRecordID != "ep-000001" || ec.StepCount != 3 {
				t.Errorf("logs row %q: %v", l.Message, err)
			}
			repeats++
		}
	}
	if repeats != 1 {
		t.Errorf("%d repeated completions in the logs, want 1", repeats)
	}
}

func kinds(evs []events.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Kind().String() + " ")
	}
	return b.String()
}

func f32(v float32) []byte {
	b := make([]byte, 4)
	putF32(b, 0, v)
	return b
}

func index(rid string) int64 {
	var n int64
	fmt.Sscanf(rid, "ep-%d", &n)
	return n
}

// setHeader sets an event's session id and route.
func setHeader(ev events.Event, sid string, route events.RuntimeEnvContext) {
	switch e := ev.(type) {
	case *events.SessionStarted:
		e.SessionID, e.Route = sid, route
	case *events.SessionEnded:
		e.SessionID, e.Route = sid, route
	case *events.Log:
		e.SessionID, e.Route = sid, route
	case *events.EpisodeStarted:
		e.SessionID, e.Route = sid, route
	case *events.EpisodeCompleted:
		e.SessionID, e.Route = sid, route
	case *events.ActionReceived:
		e.SessionID, e.Route = sid, route
	case *events.StepCompleted:
		e.SessionID, e.Route = sid, route
	case *events.ObservationEmitted:
		e.SessionID, e.Route = sid, route
	case *events.TelemetrySnapshot:
		e.SessionID, e.Route = sid, route
	}
}

// record records evs, each at its time, into a new ROOT.
func record(t *testing.T, root string, evs []events.Event, times []time.Time) {
	t.Helper()
	rec, err := recorder.Open(root, recorder.WithWriters(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := rec.RecordAt(context.Background(), ev, times[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
