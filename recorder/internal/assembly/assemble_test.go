package assembly

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// capture is an output that keeps what the assembler hands over: the
// values, and with each session write the recording's assembly state (a,
// set by newCaptured), which later events go on changing.
type capture struct {
	a        *Assembler
	episodes []capturedEpisode
	sessions []*session
	writes   []SessionWrite
	problems []string
}

// capturedEpisode is a finished episode as handed over: ep holds what
// the value says of it (its identity, episodes row and rows).
type capturedEpisode struct {
	ep     *episode
	status string
	rows   []stepRow
	row    schema.EpisodeRow
}

// newCaptured is an assembler whose output is a capture.
func newCaptured() *Assembler {
	c := &capture{}
	c.a = New(c, 1<<20)
	return c.a
}

func (c *capture) StepsFull(ch Chunk) { ch.Recycle() }

func (c *capture) EpisodeDone(f Finished) {
	ep := &episode{id: f.ID, recordID: f.RecordID, index: f.Index, envIndex: f.Env, route: f.Lane,
		autoReset: f.Row.StartedFromAutoReset, rewardSum: f.Row.RewardSum, stepsRecorded: f.Row.StepsRecorded,
		finalObs: f.Row.FinalObservationBlob, rows: f.rows, arena: f.arena}
	c.episodes = append(c.episodes, capturedEpisode{ep: ep, status: f.Status, rows: f.rows, row: f.Row})
}

func (c *capture) SessionDone(w SessionWrite) {
	c.writes = append(c.writes, w)
	c.sessions = append(c.sessions, c.a.sessions[w.Rec])
}

func (c *capture) NewSession(hive.Recording, bool) Continuation { return Continuation{} }

func (c *capture) Problem(rec hive.Recording, kind, detail string) {
	c.problems = append(c.problems, kind+": "+detail)
}

func (c *capture) episode(t *testing.T, rid string) capturedEpisode {
	t.Helper()
	for _, e := range c.episodes {
		if e.ep.recordID == rid {
			return e
		}
	}
	t.Fatalf("episode %s was not finalised; got %d episodes", rid, len(c.episodes))
	return capturedEpisode{}
}

var (
	testObsSpec = &spacesv1.SpaceSpec{
		Shape: []int64{1},
		Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
		Spec:  &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}},
	}
	testActSpec = &spacesv1.SpaceSpec{
		Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec:  &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}},
	}
)

// script builds the events of one session by hand.
type script struct {
	sid string
	evs []events.Event
}

func obsSlab(vals ...float32) [][]byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return [][]byte{b}
}

func actSlab(vals ...int64) [][]byte {
	b := make([]byte, 8*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
	}
	return [][]byte{b}
}

func (s *script) add(ev events.Event) *script { s.evs = append(s.evs, ev); return s }

func (s *script) start() *script {
	return s.add(&events.SessionStarted{SessionID: s.sid, EnvID: "env"})
}

func (s *script) episode(rid string, lane int32, auto bool) *script {
	var idx int64
	fmt.Sscanf(rid, "ep-%d", &idx)
	return s.add(&events.EpisodeStarted{SessionID: s.sid, EpisodeID: "uuid-" + rid, EpisodeRecordID: rid, EpisodeIndex: idx, EnvIndex: lane, StartedFromAutoReset: auto})
}

func (s *script) obs(step int64, reset bool, ids []string, vals ...float32) *script {
	return s.add(&events.ObservationEmitted{SessionID: s.sid, EpisodeRecordIDs: ids, Step: step, IsReset: reset,
		NumEnvs: uint32(len(ids)), ObservationSpace: testObsSpec, Observation: obsSlab(vals...)})
}

func (s *script) act(step int64, ids []string, vals ...int64) *script {
	return s.add(&events.ActionReceived{SessionID: s.sid, EpisodeRecordIDs: ids, Step: step, ActionSpace: testActSpec, Action: actSlab(vals...)})
}

func (s *script) reward(step int64, rs ...float64) *script {
	return s.add(&events.StepCompleted{SessionID: s.sid, Step: step, Rewards: rs})
}

func (s *script) complete(rid string, lane int32, steps int64, ret float64, term bool) *script {
	return s.add(&events.EpisodeCompleted{SessionID: s.sid, EpisodeRecordID: rid, EnvIndex: lane, StepCount: steps,
		CumulativeReward: ret, Terminated: term, Truncated: !term})
}

func (s *script) end() *script {
	return s.add(&events.SessionEnded{SessionID: s.sid, Reason: "max_episodes"}).
		add(&events.TelemetrySnapshot{SessionID: s.sid, Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
}

func (s *script) run() *capture {
	a := newCaptured()
	c := a.out.(*capture)
	at := time.Unix(1700000000, 0)
	for i, ev := range s.evs {
		a.apply(ev, at.Add(time.Duration(i)*time.Millisecond), uint64(i+1))
	}
	return c
}

func obsValue(t *testing.T, ep *episode, r stepRow) float32 {
	t.Helper()
	if !r.obs.set() {
		t.Fatalf("step %d has no observation", r.step)
	}
	leaves, err := blob.Decode(r.obs.bytes(ep.arena))
	if err != nil {
		t.Fatal(err)
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(leaves[0]))
}

func TestAssembleNextStepAutoreset(t *testing.T) {
	// Two lanes; lane 1 finishes after one step. Under NEXT_STEP its
	// terminal observation is emitted under the old id, the next action
	// still names the completed episode (a dropped step), and the new
	// episode starts after that step.
	ids := []string{"ep-000001", "ep-000002"}
	s := (&script{sid: "s1"}).start().
		episode("ep-000001", 0, false).episode("ep-000002", 1, false).
		obs(0, true, ids, 10, 20).
		act(1, ids, 1, 0).reward(1, 1, 5).
		complete("ep-000002", 1, 1, 5, true).
		obs(1, false, ids, 11, 21). // 21 is lane 1's terminal observation
		act(2, ids, 0, 1).reward(2, 1, 99).
		episode("ep-000003", 1, true).
		obs(2, false, []string{"ep-000001", "ep-000003"}, 12, 30).
		act(3, []string{"ep-000001", "ep-000003"}, 1, 1).reward(3, 1, 2).
		complete("ep-000001", 0, 3, 3, false).
		complete("ep-000003", 1, 1, 2, true).
		end()
	c := s.run()
	if len(c.problems) != 0 {
		t.Fatalf("problems: %v", c.problems)
	}
	e2 := c.episode(t, "ep-000002")
	if e2.status != episodeCompleted || len(e2.rows) != 1 {
		t.Fatalf("ep-000002: status %s, %d rows", e2.status, len(e2.rows))
	}
	if e2.ep.finalObs == nil {
		t.Fatal("ep-000002: terminal observation not kept")
	}
	if leaves, _ := blob.Decode(e2.ep.finalObs); math.Float32frombits(binary.LittleEndian.Uint32(leaves[0])) != 21 {
		t.Fatalf("ep-000002: final observation %x, want 21", e2.ep.finalObs)
	}
	if r := e2.rows[0]; !r.isFirst || !r.isLast || !r.terminated || r.reward != 5 || obsValue(t, e2.ep, r) != 20 {
		t.Fatalf("ep-000002 row: %+v", r)
	}
	e1 := c.episode(t, "ep-000001")
	if len(e1.rows) != 3 || e1.ep.rewardSum != 3 {
		t.Fatalf("ep-000001: %d rows, reward sum %v", len(e1.rows), e1.ep.rewardSum)
	}
	for i, want := range []float32{10, 11, 12} {
		if got := obsValue(t, e1.ep, e1.rows[i]); got != want || e1.rows[i].step != int64(i) {
			t.Fatalf("ep-000001 step %d: obs %v step %d, want %v", i, got, e1.rows[i].step, want)
		}
	}
	if r := e1.rows[2]; !r.isLast || !r.truncated || r.terminated {
		t.Fatalf("ep-000001 last row flags: %+v", r)
	}
	e3 := c.episode(t, "ep-000003")
	if len(e3.rows) != 1 || obsValue(t, e3.ep, e3.rows[0]) != 30 || e3.rows[0].reward != 2 || e3.rows[0].sessionStep != 3 {
		t.Fatalf("ep-000003: %+v", e3.rows)
	}
	if len(c.sessions) != 1 {
		t.Fatalf("session finalised %d times", len(c.sessions))
	}
	if got := c.sessions[0]; got.droppedSteps != 1 || got.stepsRecorded != 5 || got.episodesRecorded != 3 || got.status != statusEnded {
		t.Fatalf("session: dropped %d steps %d episodes %d status %s", got.droppedSteps, got.stepsRecorded, got.episodesRecorded, got.status)
	}
}

func TestAssembleDisabledAutoreset(t *testing.T) {
	// Under DISABLED autoreset the terminal observation is never emitted:
	// the restarted lane's next observation is its new episode's reset.
	s := (&script{sid: "s1"}).start().
		episode("ep-000001", 0, false).
		obs(0, true, []string{"ep-000001"}, 1).
		act(1, []string{"ep-000001"}, 0).reward(1, 0.5).
		complete("ep-000001", 0, 1, 0.5, true).
		episode("ep-000002", 0, true).
		obs(0, true, []string{"ep-000002"}, 2).
		act(1, []string{"ep-000002"}, 1).reward(1, 0.25).
		complete("ep-000002", 0, 1, 0.25, true).
		end()
	c := s.run()
	if len(c.problems) != 0 {
		t.Fatalf("problems: %v", c.problems)
	}
	e1 := c.episode(t, "ep-000001")
	if e1.ep.finalObs != nil {
		t.Fatal("ep-000001 got a final observation under DISABLED autoreset")
	}
	e2 := c.episode(t, "ep-000002")
	if obsValue(t, e2.ep, e2.rows[0]) != 2 || !e2.ep.autoReset {
		t.Fatalf("ep-000002 row %+v autoreset %v", e2.rows[0], e2.ep.autoReset)
	}
}

func TestAssembleEmptyRewards(t *testing.T) {
	// An env may send an empty rewards vector, meaning all zero: every
	// lane's step gets reward 0 and no problem is counted.
	ids := []string{"ep-000001", "ep-000002"}
	s := (&script{sid: "s1"}).start().
		episode("ep-000001", 0, false).episode("ep-000002", 1, false).
		obs(0, true, ids, 10, 20).
		act(1, ids, 1, 0).reward(1, 2, 3).
		act(2, ids, 0, 1).reward(2).
		act(3, ids, 1, 1).add(&events.StepCompleted{SessionID: "s1", Step: 3, Rewards: []float64{}}).
		act(4, ids, 0, 0).reward(4, 0.5, 0.25).
		complete("ep-000001", 0, 4, 2.5, true).
		complete("ep-000002", 1, 4, 3.25, true).
		end()
	c := s.run()
	if len(c.problems) != 0 {
		t.Fatalf("problems: %v", c.problems)
	}
	for _, tc := range []struct {
		rid     string
		rewards []float64
		sum     float64
	}{{"ep-000001", []float64{2, 0, 0, 0.5}, 2.5}, {"ep-000002", []float64{3, 0, 0, 0.25}, 3.25}} {
		e := c.episode(t, tc.rid)
		var got []float64
		for _, r := range e.rows {
			got = append(got, r.reward)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.rewards) || e.ep.rewardSum != tc.sum {
			t.Fatalf("%s: rewards %v sum %v, want %v sum %v", tc.rid, got, e.ep.rewardSum, tc.rewards, tc.sum)
		}
	}
	if got := c.sessions[0]; len(got.problems) != 0 || got.stepsRecorded != 8 {
		t.Fatalf("session: problems %v, %d steps", got.problems, got.stepsRecorded)
	}
}

func TestAssembleBadInputIsCounted(t *testing.T) {
	one := []string{"ep-000001"}
	cases := []struct {
		name    string
		build   func(s *script)
		problem problemKind
		// rows is the number of rows ep-000001 must still get.
		rows int
	}{
		{"unknown episode in action", func(s *script) {
			s.act(1, []string{"ep-000099"}, 1).reward(1, 1)
		}, probUnknownEpisode, 0},
		{"duplicate completion", func(s *script) {
			s.act(1, one, 1).reward(1, 1).complete("ep-000001", 0, 1, 1, true).complete("ep-000001", 0, 1, 1, true)
		}, probDuplicateEnd, 1},
		{"completion with empty record id", func(s *script) {
			s.act(1, one, 1).reward(1, 1).complete("", 0, 1, 1, true)
		}, probUnknownEpisode, 1},
		{"slab that does not split", func(s *script) {
			s.add(&events.ActionReceived{SessionID: s.sid, EpisodeRecordIDs: one, Step: 1, ActionSpace: testActSpec, Action: [][]byte{{1, 2, 3}}})
			s.act(2, one, 1).reward(2, 1)
		}, probBadSlab, 1},
		{"wrong lane count in rewards", func(s *script) {
			s.act(1, one, 1).reward(1, 1, 2)
		}, probLaneCount, 1},
		{"reward without action", func(s *script) {
			s.reward(1, 1)
		}, probRewardWithout, 0},
		{"observation lane count", func(s *script) {
			s.add(&events.ObservationEmitted{SessionID: s.sid, EpisodeRecordIDs: one, NumEnvs: 2, ObservationSpace: testObsSpec, Observation: obsSlab(1, 2)})
		}, probLaneCount, 0},
		{"invalid spec", func(s *script) {
			s.add(&events.ActionReceived{SessionID: s.sid, EpisodeRecordIDs: one, Step: 1, ActionSpace: &spacesv1.SpaceSpec{Dtype: 99, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}, Action: actSlab(1)})
		}, probBadSpec, 0},
		{"missing payload", func(s *script) {
			s.add(&events.ActionReceived{SessionID: s.sid, EpisodeRecordIDs: one, Step: 1, ActionSpace: testActSpec})
		}, probMissingPayload, 0},
		{"duplicate start", func(s *script) {
			s.episode("ep-000001", 0, false)
		}, probDuplicateStart, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := (&script{sid: "s1"}).start().episode("ep-000001", 0, false).obs(0, true, one, 1)
			tc.build(s)
			s.end()
			c := s.run()
			found := false
			for _, p := range c.problems {
				found = found || strings.HasPrefix(p, string(tc.problem)+":")
			}
			if !found {
				t.Fatalf("problem %s not reported; got %v", tc.problem, c.problems)
			}
			e := c.episode(t, "ep-000001")
			if len(e.rows) != tc.rows {
				t.Fatalf("ep-000001 has %d rows, want %d", len(e.rows), tc.rows)
			}
			if got := c.sessions[0].problems[tc.problem]; got == 0 {
				t.Fatalf("session row does not count %s", tc.problem)
			}
		})
	}
}

func TestAssembleSessionFailedMarksIncomplete(t *testing.T) {
	one := []string{"ep-000001"}
	s := (&script{sid: "s1"}).start().episode("ep-000001", 0, false).
		obs(0, true, one, 1).act(1, one, 1).reward(1, 1).
		add(&events.TelemetrySnapshot{SessionID: "s1", Snapshot: events.Snapshot{Horizon: events.HorizonSession,
			Rows: []events.TelemetryRow{{Op: "step", Metric: "latency", Kind: events.MetricDurationMs, Count: 1}}}}).
		add(&events.SessionFailed{SessionID: "s1", Reason: "env crashed"})
	c := s.run()
	e := c.episode(t, "ep-000001")
	if e.status != episodeIncomplete || len(e.rows) != 1 || e.rows[0].isLast {
		t.Fatalf("episode: status %s rows %+v", e.status, e.rows)
	}
	if len(c.sessions) != 1 || c.sessions[0].status != statusFailed || c.sessions[0].reason != "env crashed" {
		t.Fatalf("sessions: %+v", c.sessions)
	}
	if w := c.writes[0]; len(w.Tele) != 1 || w.Row == nil || w.TeleRows != 1 {
		t.Fatalf("session write: %d telemetry rows (%d counted), sessions row %v", len(w.Tele), w.TeleRows, w.Row)
	}
}

func TestAssembleFinalTelemetryAfterEnd(t *testing.T) {
	// The session's files wait for the final snapshot that follows
	// SessionEnded; a window snapshot after that is late data.
	s := (&script{sid: "s1"}).start().add(&events.SessionEnded{SessionID: "s1", Reason: "done"})
	c := s.run()
	if len(c.sessions) != 0 {
		t.Fatal("session written before its final telemetry")
	}
	s.add(&events.TelemetrySnapshot{SessionID: "s1", Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
	s.add(&events.TelemetrySnapshot{SessionID: "s1", Snapshot: events.Snapshot{Horizon: events.HorizonWindow,
		Rows: []events.TelemetryRow{{Op: "late"}}}})
	c = s.run()
	if len(c.sessions) != 2 {
		t.Fatalf("session written %d times, want 2 (final, then late telemetry)", len(c.sessions))
	}
}

// TestAssembleProblemKinds checks that each kind of input that does not fit
// is counted under its own kind, exactly, and that the rest records.
func TestAssembleProblemKinds(t *testing.T) {
	one := []string{"ep-000001"}
	// base starts a one-lane session with one episode and its reset
	// observation.
	base := func(s *script) *script { return s.start().episode("ep-000001", 0, false).obs(0, true, one, 1) }
	finalTelemetry := func(s *script) *script {
		return s.add(&events.TelemetrySnapshot{SessionID: s.sid, Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
	}
	ended := func(s *script, steps int64) *script {
		return s.add(&events.SessionEnded{SessionID: s.sid, Reason: "done", TotalSteps: steps})
	}
	noSpaceObs := func(s *script, step int64, ids []string, v float32) *script {
		return s.add(&events.ObservationEmitted{SessionID: s.sid, EpisodeRecordIDs: ids, Step: step, NumEnvs: uint32(len(ids)), Observation: obsSlab(v)})
	}
	noSpaceAct := func(s *script, step int64, ids []string, v int64) *script {
		return s.add(&events.ActionReceived{SessionID: s.sid, EpisodeRecordIDs: ids, Step: step, Action: actSlab(v)})
	}
	cases := []struct {
		name  string
		build func(s *script)
		want  map[problemKind]int64
		// rows is the number of rows ep-000001 must get; logged is how
		// many times the problems of want are logged (0: once per count).
		rows   int
		logged int
		check  func(t *testing.T, c *capture)
	}{
		{name: "clean session", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1).complete("ep-000001", 0, 1, 1, true).end()
		}, rows: 1},
		{name: "events after SessionEnded, before the final telemetry", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1).complete("ep-000001", 0, 1, 1, true)
			ended(s, 1).act(2, one, 0).reward(2, 1)
			finalTelemetry(s)
		}, want: map[problemKind]int64{probAfterEnd: 2}, rows: 1},
		{name: "event after the session's files are written", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1).complete("ep-000001", 0, 1, 1, true).end().act(2, one, 0)
		}, want: map[problemKind]int64{probAfterEnd: 1}, rows: 1},
		{name: "second SessionEnded keeps the first totals", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1)
			ended(s, 1)
			ended(s, 99)
			finalTelemetry(s)
		}, want: map[problemKind]int64{probAfterEnd: 1}, rows: 1, check: func(t *testing.T, c *capture) {
			if s := c.sessions[len(c.sessions)-1]; s.totalSteps != 1 {
				t.Errorf("total_steps %d, want the first SessionEnded's 1", s.totalSteps)
			}
		}},
		{name: "SessionFailed after SessionEnded", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1)
			ended(s, 1).add(&events.SessionFailed{SessionID: s.sid, Reason: "late failure"})
			finalTelemetry(s)
		}, want: map[problemKind]int64{probAfterEnd: 1}, rows: 1, check: func(t *testing.T, c *capture) {
			if len(c.sessions) != 1 || c.sessions[0].status != statusEnded {
				t.Errorf("session written %d times, want once with status ended", len(c.sessions))
			}
		}},
		{name: "observation with no space known", build: func(s *script) {
			s.start().episode("ep-000001", 0, false)
			noSpaceObs(s, 0, one, 1).obs(0, true, one, 1).act(1, one, 1).reward(1, 1).end()
		}, want: map[problemKind]int64{probNoSpace: 1}, rows: 1},
		{name: "action with no space known", build: func(s *script) {
			noSpaceAct(base(s), 1, one, 1).reward(1, 1).end()
		}, want: map[problemKind]int64{probNoSpace: 1, probRewardWithout: 1}, rows: 0},
		{name: "space left out after one was sent", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1)
			noSpaceObs(s, 1, one, 2)
			noSpaceAct(s, 2, one, 0).reward(2, 1).end()
		}, want: map[problemKind]int64{probNoSpace: 2, probRewardWithout: 1}, rows: 1},
		{name: "first EpisodeStarted env_index beyond N", build: func(s *script) {
			s.start().episode("ep-000001", 3, false).obs(0, true, one, 1).act(1, one, 1).reward(1, 1).end()
		}, want: map[problemKind]int64{probLaneOutOfRange: 1}, rows: 1},
		{name: "autoreset EpisodeStarted env_index beyond N", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1).complete("ep-000001", 0, 1, 1, true).
				episode("ep-000002", 1, true).obs(0, true, []string{"ep-000002"}, 2).end()
		}, want: map[problemKind]int64{probLaneOutOfRange: 1}, rows: 1},
		{name: "negative env_index", build: func(s *script) {
			s.start().episode("ep-000001", -1, false).obs(0, true, one, 1).act(1, one, 1).reward(1, 1).end()
		}, want: map[problemKind]int64{probLaneOutOfRange: 1}, rows: 1},
		{name: "EpisodeCompleted env_index beyond N", build: func(s *script) {
			base(s).act(1, one, 1).reward(1, 1).complete("ep-000001", 5, 1, 1, true).end()
		}, want: map[problemKind]int64{probLaneOutOfRange: 1}, rows: 1},
		{name: "session never started", build: func(s *script) {
			// Six events before the end; the final telemetry comes after it.
			s.episode("ep-000001", 0, false).obs(0, true, one, 1).act(1, one, 1).reward(1, 1).
				complete("ep-000001", 0, 1, 1, true).end()
		}, want: map[problemKind]int64{probNotStarted: 6}, rows: 1, logged: 1},
		{name: "SessionStarted after the first event", build: func(s *script) {
			s.episode("ep-000001", 0, false).start().obs(0, true, one, 1).act(1, one, 1).reward(1, 1).end()
		}, want: map[problemKind]int64{probNotStarted: 1}, rows: 1},
		{name: "EnvConnected and ModelConnected may precede SessionStarted", build: func(s *script) {
			s.add(&events.EnvConnected{SessionID: s.sid, EnvID: "env"}).add(&events.ModelConnected{SessionID: s.sid})
			base(s).act(1, one, 1).reward(1, 1).end()
		}, rows: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &script{sid: "s1"}
			tc.build(s)
			c := s.run()
			if len(c.sessions) == 0 {
				t.Fatal("session not written")
			}
			got := c.sessions[len(c.sessions)-1].problems
			for k, n := range got {
				if n != tc.want[k] {
					t.Errorf("%s counted %d times, want %d (problems %v)", k, n, tc.want[k], c.problems)
				}
			}
			var total int64
			for k, n := range tc.want {
				total += n
				if got[k] != n {
					t.Errorf("%s counted %d times, want %d (problems %v)", k, got[k], n, c.problems)
				}
			}
			if tc.logged > 0 {
				total = int64(tc.logged)
			}
			if int64(len(c.problems)) != total {
				t.Errorf("%d problems logged, want %d: %v", len(c.problems), total, c.problems)
			}
			if e := c.episode(t, "ep-000001"); len(e.rows) != tc.rows {
				t.Errorf("ep-000001 has %d rows, want %d", len(e.rows), tc.rows)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
		})
	}
}
