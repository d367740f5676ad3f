package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// group01Track is what checkSession01 knows of one group (a lane of a
// lane-served env, or the whole vector: key -1).
type group01Track struct {
	logged      bool
	ended       bool                   // it completed an episode on a budget end: nothing more comes
	ids         []string               // the ids of its last observation
	step        int64                  // its lane 0's step after its last event
	outstanding *events.ActionReceived // the action whose step has not landed
	rolling     []bool                 // lanes that ended on its last step (NEXT_STEP)
	deferred    map[string]bool        // ids whose completion is due at this step (NEXT_STEP roll)
	afterStep   bool                   // its last event was a StepCompleted (or a completion after one)
	flaggedAt   map[string]int         // DISABLED: ids flagged on its last step
	lastFlagged map[string]bool        // ids its last step ended
}

// checkSession01 asserts rlmesh 0.1's order (rlmesh-runtime 0.1.0's
// driver) on one session's events, in arrival order, and returns the
// number of completed episodes:
//   - SessionStarted first, then RelayAdvisory iff Config.RelayAdvisory;
//     the final TelemetrySnapshot(Session) then SessionEnded (or
//     SessionFailed) last; session-level events carry no lane.
//   - Per group (route.lane with a lane-served env, else one): one "env
//     reset complete" Log first, with the group's width; observations,
//     actions and steps alternate (Observation, Action, Step), the step
//     naming its action's step and lane-0 id; num_envs, id, reward and
//     flag vectors have the group's width.
//   - EpisodeStarted: a fresh UUIDv7, ep-NNNNNN of its index, at most
//     MaxEpisodes; env_index its position in the group; seed on every
//     driver reset, none on a NEXT_STEP roll; trial_index distinct under
//     DISABLED, absent under NEXT_STEP.
//   - Per-lane flags: a lane's terminated/truncated at the step that ends
//     it equal its EpisodeCompleted's; under NEXT_STEP its next step is
//     flagged autoreset_roll, has no infos, and its completion comes after
//     that roll step and before the group's next observation (or at once,
//     when the budget ends the group); under DISABLED right after the step.
//   - EpisodeCompleted is the last event naming its id; success is the
//     runtime's reading of final_info; seed and trial index repeat the
//     start's; predict/step ms are present iff it took a step.
//   - Ids in the vectors that never started are surplus and never complete.
//   - Raw payloads are absent unless Config.Transform, and differ from
//     the transformed ones when present.
//   - On success, every started episode completed, exactly MaxEpisodes of
//     them, and SessionEnded's totals count them and the steps.
func checkSession01(t testing.TB, cfg Config, evs []events.Event, wantFailed bool) int64 {
	t.Helper()
	n := cfg.NumEnvs
	laneServed := cfg.LaneServed && n > 1
	width := n
	if laneServed {
		width = 1
	}
	nextStep := cfg.Autoreset == AutoresetNextStep
	var main []events.Event
	var idx []int
	for i, ev := range evs {
		if ts, ok := ev.(*events.TelemetrySnapshot); ok && ts.Snapshot.Horizon == events.HorizonWindow {
			if ts.Route.Lane.Set {
				t.Fatalf("event %d: a window snapshot with lane %d", i, ts.Route.Lane.Value)
			}
			continue
		}
		main = append(main, ev)
		idx = append(idx, i)
	}
	fail := func(k int, format string, args ...any) {
		t.Helper()
		t.Fatalf("event %d (%s): %s", idx[k], main[k].Kind(), fmt.Sprintf(format, args...))
	}
	if len(main) < 5 {
		t.Fatalf("only %d events", len(main))
	}
	if _, ok := main[0].(*events.SessionStarted); !ok {
		fail(0, "want SessionStarted first")
	}
	body := 1
	if cfg.RelayAdvisory {
		ra, ok := main[1].(*events.RelayAdvisory)
		if !ok || ra.Leg != events.LegEnvToModel || ra.Severity != events.SeverityCaution || ra.Message == "" || ra.Route.Lane.Set {
			fail(1, "want the RelayAdvisory (env to model, caution) after SessionStarted")
		}
		body = 2
	}
	last := len(main) - 1
	ts, ok := main[last-1].(*events.TelemetrySnapshot)
	if !ok || ts.Snapshot.Horizon != events.HorizonSession || ts.Route.Lane.Set {
		fail(last-1, "want the final TelemetrySnapshot(Session) before the end")
	}
	var ended *events.SessionEnded
	if wantFailed {
		if sf, ok := main[last].(*events.SessionFailed); !ok || sf.Reason == "" || sf.Route.Lane.Set {
			fail(last, "want SessionFailed last")
		}
	} else {
		if ended, ok = main[last].(*events.SessionEnded); !ok || ended.Reason != reasonCompleted || ended.Route.Lane.Set {
			fail(last, "want SessionEnded(%q) last", reasonCompleted)
		}
	}

	groups := map[int64]*group01Track{}
	started := map[string]*events.EpisodeStarted{}
	done := map[string]int{}      // completed id -> its event
	flags := map[string][2]bool{} // id -> (terminated, truncated) at its ending step
	trials := map[uint64]bool{}
	surplus := map[string]bool{}
	var completed, steps, raws int64
	layouts := map[*spacesv1.SpaceSpec]*schema.Layout{}
	// checkSlabs decodes every leaf of every lane of slabs and checks it
	// against its leaf's spec.
	checkSlabs := func(k int, spec *spacesv1.SpaceSpec, slabs [][]byte) {
		t.Helper()
		layout := layouts[spec]
		if layout == nil {
			var err error
			if layout, err = schema.Compile(spec); err != nil {
				fail(k, "compile spec: %v", err)
			}
			layouts[spec] = layout
		}
		split, err := blob.SplitLanes(spec, slabs, width)
		if err != nil {
			fail(k, "split %d lanes: %v", width, err)
		}
		for lane := range split {
			for li := range layout.Leaves {
				v, err := blob.DecodeLeaf(&layout.Leaves[li], split[lane][li])
				if err == nil {
					err = checkValue(&layout.Leaves[li], split[lane][li], v)
				}
				if err != nil {
					fail(k, "lane %d leaf %q: %v", lane, layout.Leaves[li].Path, err)
				}
			}
		}
	}
	checkIDs := func(k int, g *group01Track, ids, recs []string) {
		t.Helper()
		if len(ids) != width || len(recs) != width {
			fail(k, "%d ids, %d record ids, want %d", len(ids), len(recs), width)
		}
		for i, id := range ids {
			if at, ok := done[id]; ok {
				fail(k, "names %s (lane position %d), completed at event %d", id, i, idx[at])
			}
			if id == "" || recs[i] == "" {
				fail(k, "an empty id at position %d", i)
			}
			if started[id] == nil {
				surplus[id] = true
			}
		}
	}
	for k := body; k < last-1; k++ {
		ev := main[k]
		_, route := ev.Header()
		if route.Lane.Set != laneServed {
			fail(k, "lane set %v, want %v", route.Lane.Set, laneServed)
		}
		key := int64(-1)
		if route.Lane.Set {
			key = int64(route.Lane.Value)
			if key >= int64(n) {
				fail(k, "lane %d of %d", key, n)
			}
		}
		g := groups[key]
		if g == nil {
			g = &group01Track{deferred: map[string]bool{}, flaggedAt: map[string]int{}}
			groups[key] = g
		}
		if _, isLog := ev.(*events.Log); !g.logged && !isLog {
			fail(k, "the group's first event is not its Log")
		}
		if g.ended {
			if _, ok := ev.(*events.EpisodeCompleted); !ok {
				fail(k, "after the group's budget-end completion")
			}
		}
		if _, ok := ev.(*events.EpisodeCompleted); !ok && len(g.flaggedAt) > 0 {
			fail(k, "DISABLED: the completions of the step before are not all out")
		}
		switch e := ev.(type) {
		case *events.Log:
			if g.logged || !logLine.MatchString(e.Message) || e.Source == nil || *e.Source != "runtime" ||
				e.Message[len(e.Message)-len(fmt.Sprintf("(%d episode(s) ready)", width)):] != fmt.Sprintf("(%d episode(s) ready)", width) {
				fail(k, "want one Log(env reset complete in {N}ms (%d episode(s) ready)) per group, got %q", width, e.Message)
			}
			g.logged = true
		case *events.EpisodeStarted:
			u, err := uuid.Parse(e.EpisodeID)
			if err != nil || u.Version() != 7 || started[e.EpisodeID] != nil || surplus[e.EpisodeID] {
				fail(k, "episode id %q is not a fresh UUIDv7", e.EpisodeID)
			}
			if e.EpisodeRecordID != recordID(e.EpisodeIndex) || e.EpisodeIndex < 1 || e.EpisodeIndex > cfg.MaxEpisodes {
				fail(k, "record %s index %d, want ep-NNNNNN of an index in 1..%d", e.EpisodeRecordID, e.EpisodeIndex, cfg.MaxEpisodes)
			}
			if int(e.EnvIndex) >= width {
				fail(k, "env_index %d, want a position below %d", e.EnvIndex, width)
			}
			rolled := nextStep && e.StartedFromAutoReset
			if e.Seed.Set == rolled {
				fail(k, "seed %v on a start (roll %v): want one on every driver reset, none on a roll", e.Seed, rolled)
			}
			if e.TrialIndex.Set == nextStep {
				fail(k, "trial index %v under %v", e.TrialIndex, cfg.Autoreset)
			}
			if e.TrialIndex.Set {
				if trials[e.TrialIndex.Value] {
					fail(k, "trial index %d again", e.TrialIndex.Value)
				}
				trials[e.TrialIndex.Value] = true
			}
			if rolled && !g.afterStep {
				fail(k, "a roll's start not right after its roll step")
			}
			c := *e
			started[e.EpisodeID] = &c
		case *events.ObservationEmitted:
			checkIDs(k, g, e.EpisodeIDs, e.EpisodeRecordIDs)
			if e.NumEnvs != uint32(width) || e.EpisodeID != e.EpisodeIDs[0] || laneServed && int64(e.EnvIndex) != key {
				fail(k, "num_envs %d env_index %d, want %d and the group's lane", e.NumEnvs, e.EnvIndex, width)
			}
			if e.IsReset && e.Infos == nil {
				fail(k, "a reset observation without reset infos")
			}
			if len(g.deferred) > 0 {
				fail(k, "the group's deferred completions %v are not out before its observation", g.deferred)
			}
			checkSlabs(k, e.ObservationSpace, e.Observation)
			if e.RawObservation != nil {
				checkSlabs(k, e.ObservationSpace, e.RawObservation)
				raws++
				if !cfg.Transform || sameSlabs(e.RawObservation, e.Observation) {
					fail(k, "raw_observation present (transform %v, equal %v)", cfg.Transform, sameSlabs(e.RawObservation, e.Observation))
				}
			}
			g.ids = slices.Clone(e.EpisodeIDs)
			g.step = e.Step
			g.afterStep = false
		case *events.ActionReceived:
			checkIDs(k, g, e.EpisodeIDs, e.EpisodeRecordIDs)
			if g.outstanding != nil || g.ids == nil {
				fail(k, "an action with one outstanding or before an observation")
			}
			if !slices.Equal(e.EpisodeIDs, g.ids) || e.Step != g.step+1 || laneServed && int64(e.EnvIndex) != key {
				fail(k, "ids %v step %d, want the observation's %v and step %d", e.EpisodeIDs, e.Step, g.ids, g.step+1)
			}
			checkSlabs(k, e.ActionSpace, e.Action)
			if e.RawAction != nil {
				checkSlabs(k, e.ActionSpace, e.RawAction)
				raws++
				if !cfg.Transform || sameSlabs(e.RawAction, e.Action) {
					fail(k, "raw_action present (transform %v)", cfg.Transform)
				}
			}
			c := *e
			c.EpisodeIDs = slices.Clone(e.EpisodeIDs)
			g.outstanding = &c
		case *events.StepCompleted:
			a := g.outstanding
			if a == nil {
				fail(k, "a step without its action")
			}
			g.outstanding = nil
			steps++
			if e.Step != a.Step || e.EpisodeID != a.EpisodeIDs[0] || e.EnvIndex != a.EnvIndex {
				fail(k, "step %d id %s, want the action's %d %s", e.Step, e.EpisodeID, a.Step, a.EpisodeIDs[0])
			}
			if len(e.Terminated) != width || len(e.Truncated) != width || len(e.AutoresetRoll) != width ||
				len(e.Rewards) != width && !(cfg.EmptyRewards && len(e.Rewards) == 0) {
				fail(k, "%d rewards, flags %d/%d/%d, want %d", len(e.Rewards), len(e.Terminated), len(e.Truncated), len(e.AutoresetRoll), width)
			}
			if !e.PredictMs.Set || !e.StepMs.Set || e.PredictMs.Value < 0 || e.StepMs.Value <= 0 {
				fail(k, "predict_ms %v step_ms %v", e.PredictMs, e.StepMs)
			}
			anyRoll := false
			for i := range width {
				want := g.rolling != nil && g.rolling[i]
				if e.AutoresetRoll[i] != want {
					fail(k, "autoreset_roll[%d] %v, want %v", i, e.AutoresetRoll[i], want)
				}
				anyRoll = anyRoll || want
				if e.AutoresetRoll[i] && (e.Terminated[i] || e.Truncated[i]) {
					fail(k, "lane %d rolled and ended", i)
				}
				if e.Terminated[i] && e.Truncated[i] {
					fail(k, "lane %d terminated and truncated", i)
				}
				if e.AutoresetRoll[i] {
					if id := a.EpisodeIDs[i]; started[id] != nil {
						g.deferred[id] = true
					}
				}
			}
			if (e.Infos == nil) != anyRoll {
				fail(k, "infos %v with a roll %v", e.Infos != nil, anyRoll)
			}
			g.rolling = make([]bool, width)
			g.lastFlagged = map[string]bool{}
			for i := range width {
				if e.Terminated[i] || e.Truncated[i] {
					id := a.EpisodeIDs[i]
					g.lastFlagged[id] = true
					flags[id] = [2]bool{e.Terminated[i], e.Truncated[i]}
					if nextStep {
						g.rolling[i] = true
					} else if started[id] != nil {
						g.flaggedAt[id] = k
					}
				}
			}
			g.step = e.Step
			g.afterStep = true
		case *events.EpisodeCompleted:
			s := started[e.EpisodeID]
			if s == nil || e.EpisodeRecordID != s.EpisodeRecordID || e.EpisodeIndex != s.EpisodeIndex {
				fail(k, "completes %s (%s), never started", e.EpisodeID, e.EpisodeRecordID)
			}
			if _, again := done[e.EpisodeID]; again {
				fail(k, "completes %s again", e.EpisodeRecordID)
			}
			f, ok := flags[e.EpisodeID]
			if !ok || f != [2]bool{e.Terminated, e.Truncated} {
				fail(k, "terminated %v truncated %v, flagged %v (%v)", e.Terminated, e.Truncated, f, ok)
			}
			if e.Success != successOf(e.FinalInfo) || e.Seed != s.Seed || e.TrialIndex != s.TrialIndex {
				fail(k, "success %v seed %v trial %v, want %v %v %v", e.Success, e.Seed, e.TrialIndex, successOf(e.FinalInfo), s.Seed, s.TrialIndex)
			}
			if e.PredictMs.Set != (e.StepCount > 0) || e.StepMs.Set != (e.StepCount > 0) {
				fail(k, "predict/step ms %v %v for %d steps", e.PredictMs, e.StepMs, e.StepCount)
			}
			if !g.afterStep {
				fail(k, "a completion not right after a step")
			}
			switch {
			case !nextStep:
				if _, ok := g.flaggedAt[e.EpisodeID]; !ok {
					fail(k, "DISABLED: %s's completion not right after the step that ended it", e.EpisodeRecordID)
				}
				delete(g.flaggedAt, e.EpisodeID)
			case g.deferred[e.EpisodeID]:
				delete(g.deferred, e.EpisodeID)
			default:
				// Not at a roll: only when the budget ends the group,
				// right after the step that ended the episode.
				if !g.lastFlagged[e.EpisodeID] {
					fail(k, "NEXT_STEP: %s completes before its roll step", e.EpisodeRecordID)
				}
				g.ended = true
			}
			done[e.EpisodeID] = k
			completed++
		case *events.RelayAdvisory:
			fail(k, "a RelayAdvisory after the session's start")
		case *events.TelemetrySnapshot:
			fail(k, "a session snapshot before the end")
		default:
			fail(k, "unexpected %s", ev.Kind())
		}
	}
	wantGroups := 1
	if laneServed {
		wantGroups = n
	}
	if len(groups) > wantGroups || !wantFailed && len(groups) != min(wantGroups, int(max(1, cfg.MaxEpisodes))) && !laneServed {
		t.Fatalf("%d groups, want %d", len(groups), wantGroups)
	}
	for id := range surplus {
		if _, ok := done[id]; ok {
			t.Fatalf("surplus episode %s completed", id)
		}
	}
	if !nextStep && !laneServed || laneServed {
		// Surplus episodes come from a vector wider than the budget and
		// from NEXT_STEP rolls past it.
	}
	if !laneServed && !wantFailed && int64(n) > cfg.MaxEpisodes && len(surplus) == 0 {
		t.Fatalf("%d lanes for %d episodes and no surplus episode", n, cfg.MaxEpisodes)
	}
	if cfg.Transform && !wantFailed && raws == 0 {
		t.Fatal("a transform changed no payload")
	}
	for key, g := range groups {
		if g.ended && (wantFailed || completed != cfg.MaxEpisodes) {
			t.Fatalf("group %d ended before its roll, but the budget (%d) is not spent (%d)", key, cfg.MaxEpisodes, completed)
		}
	}
	if ended != nil {
		if completed != cfg.MaxEpisodes || ended.TotalEpisodes != completed || ended.TotalSteps != steps {
			t.Fatalf("%d completions, SessionEnded %d episodes %d steps; want %d episodes, %d steps", completed, ended.TotalEpisodes, ended.TotalSteps, cfg.MaxEpisodes, steps)
		}
		for id, s := range started {
			if _, ok := done[id]; !ok {
				t.Fatalf("%s (%s) started and never completed", s.EpisodeRecordID, id)
			}
		}
	}
	return completed
}

// TestOrder01 runs rlmesh 0.1 sessions of every shape through
// checkSession01: lockstep vectors and lane-served envs under both
// autoreset modes, fewer episodes than lanes (surplus), step and time
// caps, the env's time limit, transforms, a relay advisory, empty
// rewards, a failure, and the built-in envs.
func TestOrder01(t *testing.T) {
	tests := []struct {
		name   string
		cfg    Config
		failed bool
	}{
		{"one lane, next-step", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetNextStep, MaxEpisodes: 4}, false},
		{"one lane, disabled", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 4}, false},
		{"vector, next-step", Config{Env: "cartpole", NumEnvs: 4, Autoreset: AutoresetNextStep, MaxEpisodes: 12}, false},
		{"vector, next-step, surplus", Config{Env: "cartpole", NumEnvs: 5, Autoreset: AutoresetNextStep, MaxEpisodes: 3}, false},
		{"vector, budget of one", Config{Env: "cartpole", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 1}, false},
		{"vector, time limit", Config{Env: "cartpole", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 7, TimeLimit: 6}, false},
		{"lanes, next-step", Config{Env: "cartpole", NumEnvs: 4, LaneServed: true, Autoreset: AutoresetNextStep, MaxEpisodes: 10}, false},
		{"lanes, disabled", Config{Env: "cartpole", NumEnvs: 4, LaneServed: true, Autoreset: AutoresetDisabled, MaxEpisodes: 10}, false},
		{"lanes, fewer episodes than lanes, next-step", Config{Env: "cartpole", NumEnvs: 5, LaneServed: true, Autoreset: AutoresetNextStep, MaxEpisodes: 3}, false},
		{"lanes, fewer episodes than lanes, disabled", Config{Env: "cartpole", NumEnvs: 5, LaneServed: true, Autoreset: AutoresetDisabled, MaxEpisodes: 3}, false},
		{"lanes, step cap", Config{Env: "cartpole", NumEnvs: 3, LaneServed: true, Autoreset: AutoresetDisabled, MaxEpisodes: 6, MaxEpisodeSteps: 5}, false},
		{"one lane, step cap", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 5, MaxEpisodeSteps: 3}, false},
		{"one lane, time cap", Config{Env: "cartpole", NumEnvs: 1, Autoreset: AutoresetDisabled, MaxEpisodes: 3, MaxEpisodeTime: 100_000_000}, false},
		{"transform", Config{Env: "cartpole", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 6, Transform: true}, false},
		{"lanes, transform, pick-place", Config{Env: "pick-place", NumEnvs: 3, LaneServed: true, Autoreset: AutoresetNextStep, MaxEpisodes: 4, Transform: true}, false},
		{"lanes, transform, all-leaves", Config{Env: "all-leaves", NumEnvs: 2, LaneServed: true, Autoreset: AutoresetDisabled, MaxEpisodes: 3, Transform: true}, false},
		{"relay advisory", Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 2, RelayAdvisory: true}, false},
		{"empty rewards", Config{Env: "pick-place", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 2, EmptyRewards: true}, false},
		{"failure", Config{Env: "cartpole", NumEnvs: 2, Autoreset: AutoresetNextStep, MaxEpisodes: 100, FailAfterSteps: 30}, true},
		{"lanes, failure", Config{Env: "cartpole", NumEnvs: 3, LaneServed: true, Autoreset: AutoresetNextStep, MaxEpisodes: 100, FailAfterSteps: 30}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Seed, cfg.Clock = 11, fixedClock()
			c := &collector{}
			sum, err := Run(context.Background(), c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Failed != tc.failed {
				t.Fatalf("failed %v, want %v", sum.Failed, tc.failed)
			}
			got := checkSession01(t, cfg, c.all, tc.failed)
			if !tc.failed && (got != cfg.MaxEpisodes || sum.Episodes != got) {
				t.Fatalf("%d completions, summary %d, want %d", got, sum.Episodes, cfg.MaxEpisodes)
			}
		})
	}
}

// fatalTB is a testing.TB whose Fatal ends the check (a panic that
// caught recovers) and keeps its message.
type fatalTB struct {
	testing.TB
	msg string
}

type fatalStop struct{}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(fatalStop{})
}
func (f *fatalTB) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(fatalStop{})
}

// caught runs checkSession01 on evs and returns its failure, "" if none.
func caught(t *testing.T, cfg Config, evs []events.Event, wantFailed bool) (msg string) {
	f := &fatalTB{TB: t}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalStop); !ok {
				panic(r)
			}
			msg = f.msg
		}
	}()
	checkSession01(f, cfg, evs, wantFailed)
	return ""
}

// TestOrder01Checker: checkSession01 accepts the simulator's 0.1 sessions
// and rejects each way an event stream can break 0.1's order: rc.5's
// order as a whole, the end events swapped, a NEXT_STEP completion moved
// before its roll step, a roll flag dropped, a lane missing from a
// lane-served event, a raw payload equal to the sent one.
func TestOrder01Checker(t *testing.T) {
	base := Config{Env: "cartpole", NumEnvs: 3, Autoreset: AutoresetNextStep, MaxEpisodes: 6, TimeLimit: 5, Seed: 2}
	run := func(cfg Config) []events.Event {
		cfg.Clock = fixedClock()
		c := &collector{}
		if _, err := Run(context.Background(), c, cfg); err != nil {
			t.Fatal(err)
		}
		return c.all
	}
	find := func(evs []events.Event, match func(events.Event) bool) int {
		for i, ev := range evs {
			if match(ev) {
				return i
			}
		}
		t.Fatal("no such event")
		return -1
	}
	isRoll := func(ev events.Event) bool {
		st, ok := ev.(*events.StepCompleted)
		return ok && slices.Contains(st.AutoresetRoll, true)
	}
	laned := base
	laned.LaneServed = true
	tests := []struct {
		name   string
		cfg    Config
		mutate func([]events.Event) []events.Event
		want   string // "" for a session the checker accepts
	}{
		{"0.1 session", base, nil, ""},
		{"lane-served session", laned, nil, ""},
		{"rc5 order", base, nil, "want the final TelemetrySnapshot(Session)"},
		{"end events swapped", base, func(evs []events.Event) []events.Event {
			n := len(evs)
			evs[n-1], evs[n-2] = evs[n-2], evs[n-1]
			return evs
		}, "want the final TelemetrySnapshot(Session)"},
		{"completion before its roll step", base, func(evs []events.Event) []events.Event {
			i := find(evs, isRoll)
			j := find(evs[i:], func(ev events.Event) bool { return ev.Kind() == events.KindEpisodeCompleted }) + i
			done := evs[j]
			evs = slices.Delete(evs, j, j+1)
			// Right after the step that ended it, as rc.5 had it: only a
			// budget end may do that, and the group goes on.
			k := i - 1
			for evs[k].Kind() != events.KindStepCompleted {
				k--
			}
			return slices.Insert(evs, k+1, done)
		}, "after the group's budget-end completion"},
		{"roll flag dropped", base, func(evs []events.Event) []events.Event {
			st := evs[find(evs, isRoll)].(*events.StepCompleted)
			st.AutoresetRoll = make([]bool, len(st.AutoresetRoll))
			return evs
		}, "autoreset_roll"},
		{"lane missing", laned, func(evs []events.Event) []events.Event {
			st := evs[find(evs, func(ev events.Event) bool { return ev.Kind() == events.KindStepCompleted })].(*events.StepCompleted)
			st.Route.Lane = events.Option[uint32]{}
			return evs
		}, "lane set false, want true"},
		{"raw equal to the sent action", base, func(evs []events.Event) []events.Event {
			a := evs[find(evs, func(ev events.Event) bool { return ev.Kind() == events.KindActionReceived })].(*events.ActionReceived)
			a.RawAction = a.Action
			return evs
		}, "raw_action present"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			evs := func() []events.Event {
				if tc.name == "rc5 order" {
					rc5 := cfg
					rc5.Order = OrderRC5
					return run(rc5)
				}
				return run(cfg)
			}()
			if tc.mutate != nil {
				evs = tc.mutate(evs)
			}
			got := caught(t, cfg, evs, false)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("checker says %q, want %q", got, tc.want)
			}
		})
	}
}
