package sim

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// episodeTrack is what a recorder would know about one episode.
type episodeTrack struct {
	id        string
	lane      int
	steps     int64
	reward    float64
	completed bool
	// owed: a reset interrupted it while rlmesh's env server still held
	// it, so the server reports it on the next step; reported once it has.
	owed, reported bool
}

// checkSession asserts the invariants of the session's order on one
// session's events, in arrival order: rlmesh 0.1's (checkSession01), or
// under OrderRC5 rlmesh rc.5's, as the package doc states them. It returns
// the number of completed episodes.
func checkSession(t *testing.T, cfg Config, evs []events.Event, wantFailed bool) int64 {
	return checkSessionOpts(t, cfg, evs, wantFailed, true)
}

// checkSessionOpts is checkSession; samePointers also asserts that every
// event of the session carries the same spec pointers (false for events
// decoded from a stream, which get equal specs instead).
func checkSessionOpts(t *testing.T, cfg Config, evs []events.Event, wantFailed, samePointers bool) int64 {
	t.Helper()
	if cfg.Order == Order01 {
		return checkSession01(t, cfg, evs, wantFailed)
	}
	n := cfg.NumEnvs
	fail := func(i int, format string, args ...any) {
		t.Helper()
		t.Fatalf("event %d (%s): %s", i, evs[i].Kind(), fmt.Sprintf(format, args...))
	}
	// Window snapshots may come at any time; set them aside.
	var main []events.Event
	var idx []int
	for i, ev := range evs {
		if ts, ok := ev.(*events.TelemetrySnapshot); ok && ts.Snapshot.Horizon == events.HorizonWindow {
			continue
		}
		main = append(main, ev)
		idx = append(idx, i)
	}
	if len(main) < 4+n {
		t.Fatalf("only %d events", len(main))
	}
	at := func(k int) int { return idx[k] }

	var obsSpec, actSpec *spacesv1.SpaceSpec
	var obsLayout, actLayout *schema.Layout
	checkSlabs := func(k int, spec *spacesv1.SpaceSpec, layout *schema.Layout, slabs [][]byte, lanes int) {
		t.Helper()
		split, err := blob.SplitLanes(spec, slabs, lanes)
		if err != nil {
			fail(at(k), "split %d lanes: %v", lanes, err)
		}
		for lane := range split {
			for li, lf := range layout.Leaves {
				v, err := blob.DecodeLeaf(&layout.Leaves[li], split[lane][li])
				if err != nil {
					fail(at(k), "lane %d leaf %q: %v", lane, lf.Path, err)
				}
				if err := checkValue(&layout.Leaves[li], split[lane][li], v); err != nil {
					fail(at(k), "lane %d leaf %q: %v", lane, lf.Path, err)
				}
			}
		}
	}
	layoutOf := func(k int, spec *spacesv1.SpaceSpec) *schema.Layout {
		l, err := schema.Compile(spec)
		if err != nil {
			fail(at(k), "compile spec: %v", err)
		}
		return l
	}

	// Prologue.
	ss, ok := main[0].(*events.SessionStarted)
	if !ok {
		fail(at(0), "first event is not SessionStarted")
	}
	sessionID := ss.SessionID
	if lg, ok := main[1].(*events.Log); !ok || lg.Level != events.LogInfo || !logLine.MatchString(lg.Message) ||
		lg.Source == nil || *lg.Source != "runtime" || !strings.HasSuffix(lg.Message, fmt.Sprintf("ms (%d episode(s) ready)", n)) {
		fail(at(1), "want Log(env reset complete in {N}ms (%d episode(s) ready)) from the runtime", n)
	}

	eps := map[string]*episodeTrack{} // by record id
	laneRec := make([]string, n)      // each lane's current record id
	laneID := make([]string, n)
	uuids := map[string]bool{}
	var nextIndex, completed, steps int64
	lane0Steps := int64(0)
	pendingRestart := map[int]bool{} // next-step: lanes that completed on the previous step
	capped := map[string]bool{}      // record ids of episodes the runtime's caps completed

	start := func(k int, auto bool, wantLane int) {
		t.Helper()
		es, ok := main[k].(*events.EpisodeStarted)
		if !ok {
			fail(at(k), "want EpisodeStarted")
		}
		nextIndex++
		if es.EpisodeIndex != nextIndex || es.EpisodeRecordID != fmt.Sprintf("ep-%06d", nextIndex) {
			fail(at(k), "index %d record %q, want %d", es.EpisodeIndex, es.EpisodeRecordID, nextIndex)
		}
		if wantLane >= 0 && int(es.EnvIndex) != wantLane {
			fail(at(k), "lane %d, want %d", es.EnvIndex, wantLane)
		}
		if es.StartedFromAutoReset != auto {
			fail(at(k), "auto_reset %v, want %v", es.StartedFromAutoReset, auto)
		}
		u, err := uuid.Parse(es.EpisodeID)
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 || uuids[es.EpisodeID] {
			fail(at(k), "episode id %q is not a fresh UUIDv7", es.EpisodeID)
		}
		uuids[es.EpisodeID] = true
		lane := int(es.EnvIndex)
		if lane < 0 || lane >= n {
			fail(at(k), "lane %d out of range", lane)
		}
		if prev := eps[laneRec[lane]]; prev != nil && !prev.completed && !prev.owed {
			fail(at(k), "lane %d restarted while %s is open", lane, laneRec[lane])
		}
		eps[es.EpisodeRecordID] = &episodeTrack{id: es.EpisodeID, lane: lane}
		laneRec[lane], laneID[lane] = es.EpisodeRecordID, es.EpisodeID
		if lane == 0 {
			lane0Steps = 0
		}
	}
	checkIDs := func(k int, ids, recs []string) {
		t.Helper()
		if len(ids) != n || len(recs) != n {
			fail(at(k), "%d ids, %d record ids, want %d", len(ids), len(recs), n)
		}
		for l := range n {
			if ids[l] != laneID[l] || recs[l] != laneRec[l] {
				fail(at(k), "lane %d ids %s/%s, want %s/%s", l, ids[l], recs[l], laneID[l], laneRec[l])
			}
		}
	}
	checkObs := func(k int, wantReset bool) {
		t.Helper()
		ob, ok := main[k].(*events.ObservationEmitted)
		if !ok {
			fail(at(k), "want ObservationEmitted")
		}
		if ob.IsReset != wantReset || int(ob.NumEnvs) != n || ob.Step != lane0Steps {
			fail(at(k), "is_reset %v num_envs %d step %d, want %v %d %d", ob.IsReset, ob.NumEnvs, ob.Step, wantReset, n, lane0Steps)
		}
		if obsSpec == nil {
			obsSpec, obsLayout = ob.ObservationSpace, layoutOf(k, ob.ObservationSpace)
		} else if ob.ObservationSpace != obsSpec && (samePointers || !proto.Equal(ob.ObservationSpace, obsSpec)) {
			fail(at(k), "observation spec pointer changed")
		}
		checkIDs(k, ob.EpisodeIDs, ob.EpisodeRecordIDs)
		if ob.EpisodeID != laneID[0] || ob.EpisodeRecordID != laneRec[0] {
			fail(at(k), "lane-0 ids differ")
		}
		checkSlabs(k, ob.ObservationSpace, obsLayout, ob.Observation, int(ob.NumEnvs))
	}

	k := 2
	for l := range n {
		start(k, false, l)
		k++
	}
	checkObs(k, true)
	k++
	// The cap in effect: the env's time limit or the runtime's step cap.
	limit := cfg.TimeLimit
	if c := cfg.stepCap(); c > 0 && (limit == 0 || c < limit) {
		limit = c
	}
	resets, emptyRewards := 1, 0
	observations := 1

	failed, cancelled := false, false
loop:
	for {
		if ts, ok := main[k].(*events.TelemetrySnapshot); ok && k+1 < len(main) {
			// Failure before the step (a cancelled session).
			if _, ok := main[k+1].(*events.SessionFailed); !ok || ts.Snapshot.Horizon != events.HorizonSession {
				fail(at(k), "want the session snapshot, then SessionFailed")
			}
			failed, cancelled = true, true
			k += 2
			break loop
		}
		ar, ok := main[k].(*events.ActionReceived)
		if !ok {
			fail(at(k), "want ActionReceived")
		}
		checkIDs(k, ar.EpisodeIDs, ar.EpisodeRecordIDs)
		if ar.Step != lane0Steps+1 || ar.EpisodeRecordID != laneRec[0] || ar.EnvIndex != 0 {
			fail(at(k), "step %d lane-0 %s, want %d %s", ar.Step, ar.EpisodeRecordID, lane0Steps+1, laneRec[0])
		}
		if actSpec == nil {
			actSpec, actLayout = ar.ActionSpace, layoutOf(k, ar.ActionSpace)
		} else if ar.ActionSpace != actSpec && (samePointers || !proto.Equal(ar.ActionSpace, actSpec)) {
			fail(at(k), "action spec pointer changed")
		}
		checkSlabs(k, ar.ActionSpace, actLayout, ar.Action, n)
		k++
		if ts, ok := main[k].(*events.TelemetrySnapshot); ok {
			// Failure inside the step.
			if ts.Snapshot.Horizon != events.HorizonSession {
				fail(at(k), "want the session snapshot")
			}
			if _, ok := main[k+1].(*events.SessionFailed); !ok {
				fail(at(k+1), "want SessionFailed")
			}
			failed = true
			k += 2
			break loop
		}
		sc, ok := main[k].(*events.StepCompleted)
		if !ok {
			fail(at(k), "want StepCompleted")
		}
		if sc.Step != ar.Step || sc.EpisodeID != ar.EpisodeIDs[0] || sc.EpisodeRecordID != ar.EpisodeRecordIDs[0] || sc.EnvIndex != 0 {
			fail(at(k), "step/ids do not match the ActionReceived")
		}
		rewards := sc.Rewards
		switch {
		case len(rewards) == 0 && cfg.EmptyRewards:
			rewards = make([]float64, n) // an empty vector means all zero
			emptyRewards++
		case len(rewards) != n:
			fail(at(k), "%d rewards for %d lanes", len(rewards), n)
		case cfg.EmptyRewards && !slices.ContainsFunc(rewards, func(r float64) bool { return r != 0 }):
			fail(at(k), "all-zero rewards %v not sent as an empty vector", rewards)
		}
		steps++
		// Apply the step as a recorder would: to each lane's open episode.
		for l := range n {
			ep := eps[ar.EpisodeRecordIDs[l]]
			if ep.completed {
				if cfg.Autoreset != AutoresetNextStep || !pendingRestart[l] {
					fail(at(k), "lane %d stepped completed %s", l, ar.EpisodeRecordIDs[l])
				}
				if rewards[l] != 0 {
					fail(at(k), "ignored step of lane %d has reward %v", l, rewards[l])
				}
				continue
			}
			ep.steps++
			ep.reward += rewards[l]
			if l == 0 {
				lane0Steps++
			}
		}
		k++
		// next-step: restarts of the lanes that completed on the previous step.
		for len(pendingRestart) > 0 {
			es, ok := main[k].(*events.EpisodeStarted)
			if !ok || !pendingRestart[int(es.EnvIndex)] {
				fail(at(k), "want EpisodeStarted for a lane completed on the previous step, %v pending", pendingRestart)
			}
			delete(pendingRestart, int(es.EnvIndex))
			start(k, true, -1)
			k++
		}
		var done, reports []int
		for {
			ec, ok := main[k].(*events.EpisodeCompleted)
			if !ok {
				break
			}
			if ep := eps[ec.EpisodeRecordID]; ep != nil && ep.owed && !ep.reported {
				// The env server's report of an episode the last reset
				// interrupted: before the step's other completions,
				// truncated, without final_info, its own accounting.
				if len(done) > 0 || int(ec.EnvIndex) != ep.lane || ec.EpisodeID != ep.id || ec.Terminated || !ec.Truncated ||
					ec.FinalInfo != nil || ec.StepCount != ep.steps || math.Abs(ec.CumulativeReward-ep.reward) > 1e-9 {
					fail(at(k), "bad report of the interrupted episode %s: %+v (counted %d steps)", ec.EpisodeRecordID, ec, ep.steps)
				}
				ep.reported, ep.completed = true, true
				completed++
				reports = append(reports, ep.lane)
				k++
				continue
			}
			ep := eps[ec.EpisodeRecordID]
			if ep == nil || ep.completed || ep.id != ec.EpisodeID || int(ec.EnvIndex) != ep.lane || laneRec[ep.lane] != ec.EpisodeRecordID {
				fail(at(k), "completes unknown, completed or foreign episode %s", ec.EpisodeRecordID)
			}
			if len(done) > 0 && int(ec.EnvIndex) <= done[len(done)-1] {
				fail(at(k), "completions not in lane order")
			}
			if ec.StepCount != ep.steps || ep.steps == 0 && !(laneRec[ep.lane] == ec.EpisodeRecordID && ep.owed) {
				fail(at(k), "step_count %d, counted %d actions", ec.StepCount, ep.steps)
			}
			if math.Abs(ec.CumulativeReward-ep.reward) > 1e-9 {
				fail(at(k), "cumulative_reward %v, rewards sum to %v", ec.CumulativeReward, ep.reward)
			}
			if ec.Terminated == ec.Truncated {
				fail(at(k), "terminated %v truncated %v", ec.Terminated, ec.Truncated)
			}
			if limit > 0 && ec.StepCount > limit ||
				cfg.Env == "cartpole" && cfg.MaxEpisodeTime == 0 && ec.Truncated != (ec.StepCount == limit && !ec.Terminated) {
				fail(at(k), "step_count %d vs limit %d truncated %v", ec.StepCount, limit, ec.Truncated)
			}
			if ec.Terminated && ec.FinalInfo == nil && cfg.Env != "cartpole" {
				fail(at(k), "the env ended the episode but sent no final_info")
			}
			if ec.DurationMs < 0 {
				fail(at(k), "negative duration")
			}
			ep.completed = true
			completed++
			done = append(done, int(ec.EnvIndex))
			// A capped completion: the runtime's, not the env's.
			capped[ec.EpisodeRecordID] = cfg.Autoreset == AutoresetDisabled && ec.Truncated && ec.FinalInfo == nil &&
				(cfg.MaxEpisodeTime > 0 || ec.StepCount == cfg.stepCap()) && (cfg.TimeLimit == 0 || ec.StepCount < cfg.TimeLimit)
			k++
		}
		if se, ok := main[k].(*events.SessionEnded); ok {
			if completed < cfg.MaxEpisodes || completed-int64(len(done)+len(reports)) >= cfg.MaxEpisodes {
				fail(at(k), "ended at %d completions, max %d", completed, cfg.MaxEpisodes)
			}
			if se.Reason != "completed requested episodes" {
				fail(at(k), "reason %q", se.Reason)
			}
			if se.TotalEpisodes != completed || se.TotalSteps != steps {
				fail(at(k), "totals %d/%d, counted %d/%d", se.TotalEpisodes, se.TotalSteps, completed, steps)
			}
			k++
			break loop
		}
		if completed >= cfg.MaxEpisodes {
			fail(at(k), "max_episodes reached but no SessionEnded")
		}
		if cfg.Autoreset == AutoresetDisabled && len(done)+len(reports) > 0 {
			// Each lane with a completion or a report is reset once; the
			// env server still holds the lane's episode unless the env
			// ended it (completed with final_info, or terminated, or
			// truncated by the env's own limit): the reset interrupts it.
			for l := range n {
				if !slices.Contains(done, l) && !slices.Contains(reports, l) {
					continue
				}
				if ep := eps[laneRec[l]]; !cfg.CapsCompleteOnce && (!ep.completed || capped[laneRec[l]]) {
					ep.owed = true
				}
				start(k, true, l)
				k++
			}
			checkObs(k, true)
			resets++
		} else {
			for _, l := range done {
				pendingRestart[l] = true
			}
			checkObs(k, false) // next-step: terminal observations under the old ids
		}
		observations++
		k++
	}
	if failed != wantFailed {
		t.Fatalf("failed = %v, want %v", failed, wantFailed)
	}
	var final *events.TelemetrySnapshot
	if !failed {
		ts, ok := main[k].(*events.TelemetrySnapshot)
		if !ok || ts.Snapshot.Horizon != events.HorizonSession {
			fail(at(k), "want the session snapshot after SessionEnded")
		}
		final = ts
		k++
	} else {
		final = main[k-2].(*events.TelemetrySnapshot)
		if r := main[k-1].(*events.SessionFailed).Reason; r == "" {
			fail(at(k-1), "SessionFailed without a reason")
		}
	}
	if k != len(main) {
		fail(at(k), "events after the session's end")
	}
	// Episodes left open: exactly the lanes' latest ones.
	for rec, ep := range eps {
		if !ep.completed && !ep.owed && laneRec[ep.lane] != rec {
			t.Errorf("episode %s never completed and is not lane %d's latest", rec, ep.lane)
		}
	}
	for _, ev := range evs {
		if id, _ := ev.Header(); id != sessionID {
			t.Fatalf("event %s of session %s in %s", ev.Kind(), id, sessionID)
		}
	}
	if cfg.EmptyRewards && cfg.Env == "pick-place" && emptyRewards == 0 {
		t.Errorf("no empty rewards vector in %d steps of sparse rewards", steps)
	}
	// The session snapshot counts every call; window snapshots are never
	// empty and every snapshot's rows are sorted.
	predicts := uint64(steps)
	if failed && !cancelled {
		predicts++ // the failing step's action was predicted
	}
	checkRows(t, final.Snapshot.Rows, map[string]uint64{
		"env.reset": uint64(resets), "env.step": uint64(steps), "model.predict": predicts,
		"runner.round": uint64(steps), "runner.transform_action": predicts,
		"runner.transform_observation": uint64(observations),
	}, n)
	for _, ev := range evs {
		if ts, ok := ev.(*events.TelemetrySnapshot); ok && ts.Snapshot.Horizon == events.HorizonWindow {
			if len(ts.Snapshot.Rows) == 0 {
				t.Fatal("an empty window snapshot")
			}
			checkRows(t, ts.Snapshot.Rows, nil, n)
		}
	}
	return completed
}

// logLine is the runtime's one log line of a session.
var logLine = regexp.MustCompile(`^env reset complete in [0-9]+ms \([0-9]+ episode\(s\) ready\)$`)

// opMetrics are rlmesh's telemetry series, sorted by (op, component,
// metric).
var opMetrics = []struct{ op, component, metric string }{
	{"env.reset", "env", "endpoint.total"}, {"env.reset", "env", "request.bytes"}, {"env.reset", "env", "response.bytes"}, {"env.reset", "env", "rpc.total"},
	{"env.step", "env", "endpoint.total"}, {"env.step", "env", "request.bytes"}, {"env.step", "env", "response.bytes"}, {"env.step", "env", "rpc.total"},
	{"model.predict", "model", "request.bytes"}, {"model.predict", "model", "response.bytes"}, {"model.predict", "model", "rpc.total"},
	{"runner.round", "runner", "rpc.total"}, {"runner.transform_action", "runner", "rpc.total"}, {"runner.transform_observation", "runner", "rpc.total"},
}

// checkRows checks a snapshot's rows: rlmesh's series, sorted, with sane
// statistics and each metric's kind; with counts, exactly the series of
// those ops, each counted as given.
func checkRows(t *testing.T, rows []events.TelemetryRow, counts map[string]uint64, lanes int) {
	t.Helper()
	j := 0
	for _, row := range rows {
		for j < len(opMetrics) && (opMetrics[j].op != row.Op || opMetrics[j].component != row.Component || opMetrics[j].metric != row.Metric) {
			if counts[opMetrics[j].op] > 0 {
				t.Fatalf("no row for %+v (rows %+v)", opMetrics[j], rows)
			}
			j++
		}
		if j == len(opMetrics) {
			t.Fatalf("row %s/%s/%s unknown or out of order", row.Op, row.Component, row.Metric)
		}
		j++
		want := events.MetricDurationMs
		switch {
		case strings.HasSuffix(row.Metric, ".bytes"):
			want = events.MetricBytes
		case row.Metric == "group.size":
			want = events.MetricCount
		}
		if row.Kind != want || row.Count == 0 || row.P50 > row.P95 || row.P95 > row.P99 || row.P50 < 0 {
			t.Fatalf("bad row %+v", row)
		}
		if row.Metric == "group.size" && (row.Avg != float64(lanes) || row.P99 != float64(lanes)) {
			t.Fatalf("group.size %+v, want %d lanes", row, lanes)
		}
		if strings.HasSuffix(row.Metric, ".bytes") && row.P50 <= 0 {
			t.Fatalf("no bytes: %+v", row)
		}
		if c, ok := counts[row.Op]; counts != nil && (!ok || c != row.Count) {
			t.Fatalf("%s %s counts %d, want %d", row.Op, row.Metric, row.Count, c)
		}
	}
	for ; j < len(opMetrics); j++ {
		if counts[opMetrics[j].op] > 0 {
			t.Fatalf("no row for %+v", opMetrics[j])
		}
	}
}

// checkValue checks a decoded lane value against its leaf's spec.
func checkValue(lf *schema.Leaf, raw []byte, v any) error {
	switch s := lf.Spec.GetSpec().(type) {
	case *spacesv1.SpaceSpec_Discrete:
		x := v.(int64)
		if x < s.Discrete.Start || x >= s.Discrete.Start+s.Discrete.N {
			return fmt.Errorf("discrete %d outside [%d, %d)", x, s.Discrete.Start, s.Discrete.Start+s.Discrete.N)
		}
	case *spacesv1.SpaceSpec_Text:
		str := v.(string)
		if c := int64(utf8.RuneCountInString(str)); c < s.Text.MinLength || c > s.Text.MaxLength {
			return fmt.Errorf("text %q has %d characters, want %d..%d", str, c, s.Text.MinLength, s.Text.MaxLength)
		}
	case *spacesv1.SpaceSpec_MultiDiscrete:
		xs, err := blob.AppendElems([]int64(nil), lf.DType, raw)
		if err != nil {
			return err
		}
		for i, x := range xs {
			if x < 0 || x >= s.MultiDiscrete.Nvec[i] {
				return fmt.Errorf("multidiscrete[%d] = %d outside [0, %d)", i, x, s.MultiDiscrete.Nvec[i])
			}
		}
	case *spacesv1.SpaceSpec_MultiBinary:
		for i, x := range raw {
			if x > 1 {
				return fmt.Errorf("multibinary[%d] = %d", i, x)
			}
		}
	}
	return nil
}

func fixedClock() func() time.Time {
	return StepClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), 1500*time.Microsecond)
}

func TestInvariants(t *testing.T) {
	// rlmesh allows disabled autoreset only with one lane.
	// (and with lane-served envs in 0.1, with several).
	runs := []struct {
		order Order
		mode  Autoreset
		lanes []int
		laned bool
	}{
		{Order01, AutoresetNextStep, []int{1, 3, 16}, false}, {Order01, AutoresetDisabled, []int{1}, false},
		{Order01, AutoresetNextStep, []int{3}, true}, {Order01, AutoresetDisabled, []int{3}, true},
		{OrderRC5, AutoresetNextStep, []int{1, 3, 16}, false}, {OrderRC5, AutoresetDisabled, []int{1}, false},
	}
	for _, name := range Envs() {
		for _, run := range runs {
			mode := run.mode
			for _, n := range run.lanes {
				t.Run(fmt.Sprintf("%s/%s/%s/n=%d/lanes=%v", name, run.order, mode, n, run.laned), func(t *testing.T) {
					t.Parallel()
					stepCap := int64(40)
					if name == "pick-place" {
						stepCap = 15 // keeps the image decoding under -race fast
					}
					cfg := limited(Config{Env: name, NumEnvs: n, Autoreset: mode, MaxEpisodes: int64(n) + 4,
						Order: run.order, LaneServed: run.laned, Transform: run.laned,
						Seed: uint64(n) * 7, Clock: fixedClock()}, stepCap)
					c := &collector{}
					sum, err := Run(context.Background(), c, cfg)
					if err != nil {
						t.Fatal(err)
					}
					got := checkSession(t, cfg, c.all, false)
					if sum.Episodes != got || sum.Failed {
						t.Fatalf("summary %+v, counted %d episodes", sum, got)
					}
				})
			}
		}
	}
}

// TestTimeLimit: the env's time limit truncates episodes as the env's own
// completions, with their final_info, under either autoreset mode.
func TestTimeLimit(t *testing.T) {
	for _, tc := range []struct {
		env  string
		mode Autoreset
	}{{"cartpole", AutoresetNextStep}, {"cartpole", AutoresetDisabled}, {"pick-place", AutoresetNextStep}, {"all-leaves", AutoresetDisabled}} {
		t.Run(tc.env+"/"+tc.mode.String(), func(t *testing.T) {
			n := 3
			if tc.mode == AutoresetDisabled {
				n = 1 // the lane count rlmesh allows with it
			}
			cfg := Config{Env: tc.env, NumEnvs: n, Autoreset: tc.mode, MaxEpisodes: 6, TimeLimit: 5, Seed: 2, Clock: fixedClock()}
			c := &collector{}
			if _, err := Run(context.Background(), c, cfg); err != nil {
				t.Fatal(err)
			}
			checkSession(t, cfg, c.all, false)
			truncated := 0
			for _, ev := range c.all {
				if ec, ok := ev.(*events.EpisodeCompleted); ok && ec.Truncated {
					truncated++
					if ec.StepCount != 5 || tc.env != "cartpole" && ec.FinalInfo == nil {
						t.Fatalf("%s: truncated at %d steps, final_info %v", ec.EpisodeRecordID, ec.StepCount, ec.FinalInfo)
					}
				}
			}
			if truncated == 0 {
				t.Fatal("no episode reached the time limit")
			}
		})
	}
}

func TestInvariantsNoStepCap(t *testing.T) {
	for _, mode := range []Autoreset{AutoresetNextStep, AutoresetDisabled} {
		t.Run(mode.String(), func(t *testing.T) {
			cfg := Config{Env: "cartpole", NumEnvs: 5, Autoreset: mode, MaxEpisodes: 30, Seed: 11, Clock: fixedClock()}
			if mode == AutoresetDisabled {
				cfg.NumEnvs = 1 // the only lane count rlmesh allows
			}
			c := &collector{}
			if _, err := Run(context.Background(), c, cfg); err != nil {
				t.Fatal(err)
			}
			checkSession(t, cfg, c.all, false)
		})
	}
}

// limited bounds cfg's episodes at steps, as rlmesh allows: under
// next-step with the env's own time limit, under disabled autoreset with
// the runtime's step cap.
func limited(cfg Config, steps int64) Config {
	if cfg.Autoreset == AutoresetDisabled {
		cfg.MaxEpisodeSteps = steps
	} else {
		cfg.TimeLimit = steps
	}
	return cfg
}
