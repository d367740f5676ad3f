package assembly

import (
	"strings"
	"testing"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Hand-written event sequences in the order of rlmesh 0.1.0's driver
// (rlmesh-runtime 0.1.0, src/driver.rs: on_step and observe): per step
// ActionReceived, StepCompleted with per-lane flags; under NEXT_STEP the
// ended lane's terminal observation under its old id, then at the roll
// step ActionReceived (old id), StepCompleted (autoreset_roll),
// EpisodeCompleted (old id), EpisodeStarted (new id) and the observation
// with the new ids; under DISABLED the completion right after the step,
// then the reset; at the budget's end the deferred completions at once;
// the final session telemetry before SessionEnded.

// v01 builds one session's events in rlmesh 0.1's form.
type v01 struct {
	script
	lane events.Option[uint32] // the route lane of the next events
}

func newV01(sid string) *v01 { return &v01{script: script{sid: sid}} }

func (s *v01) route() events.RuntimeEnvContext {
	return events.RuntimeEnvContext{EnvID: "env", Lane: s.lane}
}

func (s *v01) on(lane uint32) *v01 { s.lane = events.Some(lane); return s }

func (s *v01) start() *v01 {
	s.add(&events.SessionStarted{SessionID: s.sid, Route: events.RuntimeEnvContext{EnvID: "env"}, EnvID: "env"})
	return s
}

func (s *v01) started(rid string, lane int32, auto bool, seed events.Option[int64], trial events.Option[uint64]) *v01 {
	var idx int64
	for _, c := range strings.TrimPrefix(rid, "ep-") {
		idx = 10*idx + int64(c-'0')
	}
	s.add(&events.EpisodeStarted{SessionID: s.sid, Route: s.route(), EpisodeID: "uuid-" + rid, EpisodeRecordID: rid,
		EpisodeIndex: idx, EnvIndex: lane, StartedFromAutoReset: auto, Seed: seed, TrialIndex: trial})
	return s
}

// observe adds an ObservationEmitted; a reset observation carries reset
// infos ({"phase":"reset","none":null}, with 0.1's explicit null), as
// rlmesh 0.1 sends them.
func (s *v01) observe(step int64, reset bool, ids []string, vals ...float32) *v01 {
	e := &events.ObservationEmitted{SessionID: s.sid, Route: s.route(), EpisodeRecordIDs: ids, Step: step, IsReset: reset,
		NumEnvs: uint32(len(ids)), ObservationSpace: testObsSpec, Observation: obsSlab(vals...)}
	if reset {
		e.Infos = &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{
			"phase": {Kind: &spacesv1.MetaValue_Text{Text: "reset"}},
			"none":  {Kind: &spacesv1.MetaValue_Null{Null: &spacesv1.MetaNull{}}},
		}}
	}
	s.add(e)
	return s
}

func (s *v01) action(step int64, ids []string, vals ...int64) *v01 {
	s.add(&events.ActionReceived{SessionID: s.sid, Route: s.route(), EpisodeRecordIDs: ids, Step: step,
		ActionSpace: testActSpec, Action: actSlab(vals...)})
	return s
}

// stepped adds a StepCompleted with rewards and flags given per lane as
// "" (a plain step), "term", "trunc" or "roll".
func (s *v01) stepped(step int64, rewards []float64, flags ...string) *v01 {
	e := &events.StepCompleted{SessionID: s.sid, Route: s.route(), Step: step, Rewards: rewards,
		PredictMs: events.Some(1.5), StepMs: events.Some(0.25)}
	rolled := false
	for _, f := range flags {
		e.Terminated = append(e.Terminated, f == "term")
		e.Truncated = append(e.Truncated, f == "trunc")
		e.AutoresetRoll = append(e.AutoresetRoll, f == "roll")
		rolled = rolled || f == "roll"
	}
	if !rolled {
		e.Infos = &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{"k": {Kind: &spacesv1.MetaValue_Integer{Integer: step}}}}
	}
	s.add(e)
	return s
}

func (s *v01) completed(rid string, lane int32, steps int64, ret float64, term bool, success events.Option[bool]) *v01 {
	s.add(&events.EpisodeCompleted{SessionID: s.sid, Route: s.route(), EpisodeRecordID: rid, EnvIndex: lane, StepCount: steps,
		CumulativeReward: ret, Terminated: term, Truncated: !term, Success: success,
		PredictMs: events.Some(2.0), StepMs: events.Some(0.5)})
	return s
}

// finish ends the session as 0.1 does: the final telemetry, then
// SessionEnded.
func (s *v01) finish() *v01 {
	s.lane = events.Option[uint32]{}
	s.add(&events.TelemetrySnapshot{SessionID: s.sid, Route: s.route(), Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
	s.add(&events.SessionEnded{SessionID: s.sid, Route: s.route(), Reason: "completed requested episodes"})
	return s
}

var none64 = events.Option[int64]{}
var noneTrial = events.Option[uint64]{}
var noneBool = events.Option[bool]{}

// problemsOf counts the captured problems by kind.
func problemsOf(c *capture) map[string]int {
	m := map[string]int{}
	for _, p := range c.problems {
		k, _, _ := strings.Cut(p, ":")
		m[k]++
	}
	return m
}

func rowObs(t *testing.T, ep *episode, r stepRow) float32 { return obsValue(t, ep, r) }

func TestRecordRlmesh01(t *testing.T) {
	two := []string{"ep-000001", "ep-000002"}
	tests := []struct {
		name  string
		evs   func() *v01
		check func(t *testing.T, c *capture)
	}{
		{
			// Lockstep vector under NEXT_STEP: lane 1 ends at step 1; its
			// completion comes at the roll step 2, which belongs to no
			// episode; the budget (3 episodes) is spent when ep-000003
			// ends, and its completion goes out at once.
			name: "next step roll defers the completion",
			evs: func() *v01 {
				s := newV01("s").start()
				s.started("ep-000001", 0, false, events.Some(int64(7)), noneTrial).started("ep-000002", 1, false, events.Some(int64(8)), noneTrial)
				s.observe(0, true, two, 10, 20)
				s.action(1, two, 1, 0).stepped(1, []float64{1, 5}, "", "term")
				s.observe(1, false, two, 11, 21) // 21: lane 1's terminal observation
				s.action(2, two, 0, 1).stepped(2, []float64{1, 99}, "", "roll")
				s.completed("ep-000002", 1, 1, 5, true, events.Some(true))
				s.started("ep-000003", 1, true, none64, noneTrial)
				s.observe(2, false, []string{"ep-000001", "ep-000003"}, 12, 30)
				s.action(3, []string{"ep-000001", "ep-000003"}, 1, 1).stepped(3, []float64{1, 2}, "trunc", "term")
				s.completed("ep-000001", 0, 3, 3, false, noneBool).completed("ep-000003", 1, 1, 2, true, events.Some(false))
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if len(c.problems) != 0 {
					t.Fatalf("problems: %v", c.problems)
				}
				e2 := c.episode(t, "ep-000002")
				if len(e2.rows) != 1 || !e2.rows[0].isLast || !e2.rows[0].terminated || e2.rows[0].reward != 5 {
					t.Fatalf("ep-000002 rows %+v", e2.rows)
				}
				if leaves, _ := blob.Decode(e2.ep.finalObs); len(leaves) != 1 || string(leaves[0]) != string(obsSlab(21)[0]) {
					t.Fatalf("ep-000002 final observation %x, want 21", e2.ep.finalObs)
				}
				if r := e2.row; r.Seed == nil || *r.Seed != 8 || r.Success == nil || !*r.Success || *r.SuccessSource != schema.SuccessFromRuntime {
					t.Fatalf("ep-000002 seed %v success %v", r.Seed, r.Success)
				}
				e1 := c.episode(t, "ep-000001")
				if len(e1.rows) != 3 || !e1.rows[2].isLast || !e1.rows[2].truncated {
					t.Fatalf("ep-000001 rows %+v", e1.rows)
				}
				e3 := c.episode(t, "ep-000003")
				if len(e3.rows) != 1 || rowObs(t, e3.ep, e3.rows[0]) != 30 || !e3.rows[0].isLast {
					t.Fatalf("ep-000003 rows %+v", e3.rows)
				}
				s := c.sessions[len(c.sessions)-1]
				if s.droppedSteps != 1 || s.stepsRecorded != 5 || s.surplusSteps != 0 || s.status != statusEnded {
					t.Fatalf("session dropped %d steps %d surplus %d status %s", s.droppedSteps, s.stepsRecorded, s.surplusSteps, s.status)
				}
			},
		},
		{
			// One env under DISABLED: the completion follows its step at
			// once, then the reset; the 0.1 fields reach the rows.
			name: "disabled autoreset keeps seeds, times and infos",
			evs: func() *v01 {
				s := newV01("s").start()
				s.started("ep-000001", 0, false, events.Some(int64(-3)), events.Some(uint64(0)))
				s.observe(0, true, []string{"ep-000001"}, 1)
				s.action(1, []string{"ep-000001"}, 1).stepped(1, []float64{0.5}, "")
				s.observe(1, false, []string{"ep-000001"}, 2)
				s.action(2, []string{"ep-000001"}, 0).stepped(2, []float64{0.5}, "term")
				s.completed("ep-000001", 0, 2, 1, true, events.Some(true))
				s.started("ep-000002", 0, true, events.Some(int64(4)), events.Some(uint64(1)))
				s.observe(0, true, []string{"ep-000002"}, 3)
				s.action(1, []string{"ep-000002"}, 1).stepped(1, []float64{1}, "trunc")
				s.completed("ep-000002", 0, 1, 1, false, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if len(c.problems) != 0 {
					t.Fatalf("problems: %v", c.problems)
				}
				e1 := c.episode(t, "ep-000001")
				if r := e1.row; len(e1.rows) != 2 || r.TrialIndex == nil || *r.TrialIndex != 0 || r.Seed == nil || *r.Seed != -3 {
					t.Fatalf("ep-000001: %d rows, seed %v trial %v", len(e1.rows), r.Seed, r.TrialIndex)
				}
				r := e1.rows[1]
				if !r.hasPredict || r.predictMs != 1.5 || !r.hasStep || r.stepMs != 0.25 {
					t.Fatalf("row times %+v", r)
				}
				if got := string(r.infos.bytes(e1.ep.arena)); got != `{"k":2}` {
					t.Fatalf("row infos %q", got)
				}
				if r.rawObs.set() || r.rawAct.set() {
					t.Fatal("raw payloads without a transform")
				}
				// The reset infos are the first row's observation infos;
				// a later observation without infos keeps none.
				if got := string(e1.rows[0].obsInfos.bytes(e1.ep.arena)); got != `{"none":null,"phase":"reset"}` {
					t.Fatalf("first row's observation infos %q", got)
				}
				if r.obsInfos.set() {
					t.Fatalf("second row's observation infos %q", r.obsInfos.bytes(e1.ep.arena))
				}
				if e2 := c.episode(t, "ep-000002"); e2.row.TrialIndex == nil || *e2.row.TrialIndex != 1 || !e2.rows[0].truncated {
					t.Fatalf("ep-000002: %+v", e2.ep)
				}
			},
		},
		{
			// A lane-served env: each lane its own group (route lane,
			// one-element vectors, num_envs 1), their steps interleaved
			// with two actions outstanding at once.
			name: "interleaved lanes of a lane-served env",
			evs: func() *v01 {
				s := newV01("s").start()
				s.on(0).started("ep-000001", 0, false, none64, events.Some(uint64(0)))
				s.on(1).started("ep-000002", 1, false, none64, events.Some(uint64(1)))
				s.on(1).observe(0, true, []string{"ep-000002"}, 20)
				s.on(0).observe(0, true, []string{"ep-000001"}, 10)
				s.on(0).action(1, []string{"ep-000001"}, 0)
				s.on(1).action(1, []string{"ep-000002"}, 1)
				s.on(1).stepped(1, []float64{2}, "")
				s.on(1).observe(1, false, []string{"ep-000002"}, 21)
				s.on(1).action(2, []string{"ep-000002"}, 1)
				s.on(0).stepped(1, []float64{1}, "term")
				s.on(0).completed("ep-000001", 0, 1, 1, true, noneBool)
				s.on(1).stepped(2, []float64{3}, "trunc")
				s.on(1).completed("ep-000002", 1, 2, 5, false, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if len(c.problems) != 0 {
					t.Fatalf("problems: %v", c.problems)
				}
				e1, e2 := c.episode(t, "ep-000001"), c.episode(t, "ep-000002")
				if len(e1.rows) != 1 || e1.rows[0].reward != 1 || rowObs(t, e1.ep, e1.rows[0]) != 10 || e1.ep.route != events.Some(uint32(0)) {
					t.Fatalf("lane 0: %+v", e1.rows)
				}
				if len(e2.rows) != 2 || e2.rows[0].reward != 2 || e2.rows[1].reward != 3 || rowObs(t, e2.ep, e2.rows[1]) != 21 ||
					e2.ep.route != events.Some(uint32(1)) || !e2.rows[1].truncated {
					t.Fatalf("lane 1: %+v", e2.rows)
				}
				if s := c.sessions[len(c.sessions)-1]; s.numEnvs != 0 {
					t.Fatalf("a lane-served env's group width taken for its lane count: %d", s.numEnvs)
				}
			},
		},
		{
			// max_episodes 1 with two lanes: lane 1 runs a surplus
			// episode that never starts or completes.
			name: "surplus episodes are counted, not recorded",
			evs: func() *v01 {
				ids := []string{"ep-000001", "ep-000002"}
				s := newV01("s").start()
				s.started("ep-000001", 0, false, none64, noneTrial)
				s.observe(0, true, ids, 1, 2)
				s.action(1, ids, 0, 0).stepped(1, []float64{1, 1}, "", "")
				s.observe(1, false, ids, 1, 2)
				s.action(2, ids, 0, 0).stepped(2, []float64{1, 1}, "term", "")
				s.completed("ep-000001", 0, 2, 2, true, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				// The ids at the reset came before the first flags: counted,
				// then taken back.
				if s := c.sessions[len(c.sessions)-1]; s.problemCount() != 0 {
					t.Fatalf("problems: %v (%v)", s.problemSummary(), c.problems)
				}
				if len(c.episodes) != 1 {
					t.Fatalf("%d episodes recorded, want 1", len(c.episodes))
				}
				s := c.sessions[len(c.sessions)-1]
				if s.surplusSteps != 2 || s.droppedSteps != 2 || s.stepsRecorded != 2 {
					t.Fatalf("surplus %d dropped %d recorded %d", s.surplusSteps, s.droppedSteps, s.stepsRecorded)
				}
			},
		},
		{
			// As above, but as rlmesh 0.1 sends it: the first
			// EpisodeStarted has a seed, so the recording is 0.1's
			// before lane 1's surplus ids come, and no problem is ever
			// counted or logged for them.
			name: "surplus lane from the first reset, known by the seed",
			evs: func() *v01 {
				ids := []string{"ep-000001", "ep-000002"}
				s := newV01("s").start()
				s.started("ep-000001", 0, false, events.Some(int64(11)), events.Some(uint64(0)))
				s.observe(0, true, ids, 1, 2)
				s.action(1, ids, 0, 0).stepped(1, []float64{1, 1}, "", "")
				s.observe(1, false, ids, 1, 2)
				s.action(2, ids, 0, 0).stepped(2, []float64{1, 1}, "term", "")
				s.completed("ep-000001", 0, 2, 2, true, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if len(c.problems) != 0 {
					t.Fatalf("problems logged: %v", c.problems)
				}
				s := c.sessions[len(c.sessions)-1]
				if s.problemCount() != 0 || s.surplusSteps != 2 || s.droppedSteps != 2 || s.stepsRecorded != 2 {
					t.Fatalf("problems %v surplus %d dropped %d recorded %d", s.problemSummary(), s.surplusSteps, s.droppedSteps, s.stepsRecorded)
				}
			},
		},
		{
			name: "a completion that disagrees with the step's flags is a problem",
			evs: func() *v01 {
				s := newV01("s").start()
				s.started("ep-000001", 0, false, none64, noneTrial)
				s.observe(0, true, []string{"ep-000001"}, 1)
				s.action(1, []string{"ep-000001"}, 0).stepped(1, []float64{1}, "trunc")
				s.completed("ep-000001", 0, 1, 1, true, noneBool) // terminated, the flags said truncated
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if p := problemsOf(c); p[string(probStepFlags)] != 1 || len(c.problems) != 1 {
					t.Fatalf("problems: %v", c.problems)
				}
				// The row keeps what the step said.
				if e := c.episode(t, "ep-000001"); !e.rows[0].truncated || e.rows[0].terminated {
					t.Fatalf("row %+v", e.rows[0])
				}
			},
		},
		{
			name: "a completion no flag announced is a problem",
			evs: func() *v01 {
				s := newV01("s").start()
				s.started("ep-000001", 0, false, none64, noneTrial)
				s.observe(0, true, []string{"ep-000001"}, 1)
				s.action(1, []string{"ep-000001"}, 0).stepped(1, []float64{1}, "")
				s.completed("ep-000001", 0, 1, 1, true, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				if p := problemsOf(c); p[string(probStepFlags)] != 1 {
					t.Fatalf("problems: %v", c.problems)
				}
			},
		},
		{
			name: "a roll step without its roll flag is a problem",
			evs: func() *v01 {
				ids := []string{"ep-000001", "ep-000002"}
				s := newV01("s").start()
				s.started("ep-000001", 0, false, none64, noneTrial).started("ep-000002", 1, false, none64, noneTrial)
				s.observe(0, true, ids, 1, 2)
				s.action(1, ids, 0, 0).stepped(1, []float64{1, 1}, "", "term")
				s.observe(1, false, ids, 1, 2)
				s.action(2, ids, 0, 0).stepped(2, []float64{1, 1}, "", "") // lane 1 should say roll
				s.completed("ep-000002", 1, 1, 1, true, noneBool)
				s.action(3, []string{"ep-000001", "ep-000003"}, 0, 0).stepped(3, []float64{1, 1}, "roll", "")
				s.completed("ep-000001", 0, 3, 3, true, noneBool)
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				// Step 2 lacks lane 1's roll flag; step 3 flags lane 0's
				// roll while its episode had not ended (a flagged end
				// missing, the row kept), and ep-000001 then completes
				// with no flagged end.
				if p := problemsOf(c); p[string(probStepFlags)] != 3 {
					t.Fatalf("problems: %v", c.problems)
				}
			},
		},
		{
			// A failed env step on a lane-served env leaves each lane on
			// an action without its StepCompleted: no steps, kept as logs
			// rows, and no problem at the end.
			name: "failed step on a lane-served env",
			evs: func() *v01 {
				s := newV01("s").start()
				s.on(0).started("ep-000001", 0, false, none64, noneTrial)
				s.on(1).started("ep-000002", 1, false, none64, noneTrial)
				s.on(0).observe(0, true, []string{"ep-000001"}, 1)
				s.on(1).observe(0, true, []string{"ep-000002"}, 2)
				s.on(0).action(1, []string{"ep-000001"}, 0)
				s.on(1).action(1, []string{"ep-000002"}, 1)
				s.lane = events.Option[uint32]{}
				s.add(&events.TelemetrySnapshot{SessionID: s.sid, Route: s.route(), Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
				s.add(&events.SessionFailed{SessionID: s.sid, Route: s.route(), Reason: "env step failed"})
				return s
			},
			check: func(t *testing.T, c *capture) {
				if len(c.problems) != 0 {
					t.Fatalf("problems: %v", c.problems)
				}
				s, w := c.sessions[len(c.sessions)-1], c.writes[len(c.writes)-1]
				n := 0
				for _, l := range w.Logs {
					if _, err := schema.ParseUnfinishedAction(l.Message); err == nil {
						n++
					}
				}
				if n != 2 || s.stepsRecorded != 0 || s.status != statusFailed {
					t.Fatalf("%d unfinished actions kept, %d steps, status %s", n, s.stepsRecorded, s.status)
				}
			},
		},
		{
			name: "relay advisory is a logs row",
			evs: func() *v01 {
				s := newV01("s").start()
				s.add(&events.RelayAdvisory{SessionID: s.sid, Route: s.route(), Leg: events.LegEnvToModel,
					Severity: events.SeverityCaution, Message: "converted"})
				return s.finish()
			},
			check: func(t *testing.T, c *capture) {
				w := c.writes[len(c.writes)-1]
				if len(w.Logs) != 1 || w.Logs[0].Level != "warn" || *w.Logs[0].Source != schema.SourceEvent ||
					!strings.HasPrefix(w.Logs[0].Message, "RelayAdvisory ") {
					t.Fatalf("logs %+v", w.Logs)
				}
			},
		},
		{
			name: "final telemetry before SessionEnded ends the session once",
			evs: func() *v01 {
				return newV01("s").start().finish()
			},
			check: func(t *testing.T, c *capture) {
				if len(c.sessions) != 1 || c.sessions[0].status != statusEnded || !c.sessions[0].finalTelemetry {
					t.Fatalf("%d session writes", len(c.sessions))
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, tc.evs().run())
		})
	}
}

// TestRawPayloads checks that a raw payload is kept only where a transform
// changed it.
func TestRawPayloads(t *testing.T) {
	ids := []string{"ep-000001", "ep-000002"}
	s := newV01("s").start()
	s.started("ep-000001", 0, false, none64, noneTrial).started("ep-000002", 1, false, none64, noneTrial)
	s.add(&events.ObservationEmitted{SessionID: "s", Route: s.route(), EpisodeRecordIDs: ids, NumEnvs: 2, IsReset: true,
		ObservationSpace: testObsSpec, Observation: obsSlab(1, 2), RawObservation: obsSlab(1, 9)})
	s.add(&events.ActionReceived{SessionID: "s", Route: s.route(), EpisodeRecordIDs: ids, Step: 1,
		ActionSpace: testActSpec, Action: actSlab(0, 1), RawAction: actSlab(5, 1)})
	s.stepped(1, []float64{1, 1}, "term", "term")
	s.completed("ep-000001", 0, 1, 1, true, noneBool).completed("ep-000002", 1, 1, 1, true, noneBool)
	c := s.finish().run()
	if len(c.problems) != 0 {
		t.Fatalf("problems: %v", c.problems)
	}
	e1, e2 := c.episode(t, "ep-000001"), c.episode(t, "ep-000002")
	if r := e1.rows[0]; r.rawObs.set() || !r.rawAct.set() {
		t.Fatalf("lane 0: raw observation kept %v (equal), raw action kept %v (changed)", r.rawObs.set(), r.rawAct.set())
	}
	if r := e2.rows[0]; !r.rawObs.set() || r.rawAct.set() {
		t.Fatalf("lane 1: raw observation kept %v (changed), raw action kept %v (equal)", r.rawObs.set(), r.rawAct.set())
	}
	leaves, err := blob.Decode(e1.rows[0].rawAct.bytes(e1.ep.arena))
	if err != nil || string(leaves[0]) != string(actSlab(5)[0]) {
		t.Fatalf("lane 0 raw action %x, %v", leaves, err)
	}
}
