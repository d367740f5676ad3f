package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// rlmesh 0.1's driver (rlmesh-runtime 0.1.0, src/driver.rs), simulated:
// a route's lanes form groups (one group of every lane, or with
// Config.LaneServed one group per lane), each with its own reset, predict
// and step cycle in simulated time. The session handles the group whose
// next call ends first, so the events of lane-served groups interleave as
// their times fall, and several ActionReceived can be outstanding at once.

// phase01 is what a group is waiting for.
type phase01 uint8

const (
	phaseResetting  phase01 = iota + 1 // an env reset in flight
	phasePredicting                    // a predict in flight
	phaseStepping                      // an env step in flight
	phaseIdle                          // done: no slot left, or the budget is spent
)

// slot01 is one lane's episode (rlmesh's slot): the current one, or under
// NEXT_STEP the one that ended and rolls on the group's next step.
type slot01 struct {
	epID, recID string
	index       int64
	surplus     bool // beyond the max_episodes budget: no start, no completion
	steps       int64
	reward      float64
	started     time.Time
	predict     time.Duration // summed over the episode's steps
	step        time.Duration
	seed        events.Option[int64]
	trial       events.Option[uint64]
	roll        bool   // NEXT_STEP: ended; the env resets it on the next step
	rollID      string // the id minted for the roll
	resets      int64  // resets of the lane so far (the simulated reset infos)
	// scratch of one step
	done, term, trunc, capped bool
}

// pendingStart is an episode a reset in flight starts: its minted id,
// its route-global slot (-1: surplus), seed and trial index.
type pendingStart struct {
	id    string
	slot  int64
	seed  events.Option[int64]
	trial events.Option[uint64]
}

// group01 is one group of lanes: the whole vector, or one lane of a
// lane-served env.
type group01 struct {
	lanes     []int
	laneGroup bool
	ctx       events.RuntimeEnvContext // the route, with the lane of a lane group

	phase      phase01
	due        time.Duration // when the call in flight ends (simulated time)
	opStart    time.Duration // when it began
	roundStart time.Duration // when the group's round began
	initial    bool          // the reset in flight is the group's first
	resetGen   uint64
	start      []pendingStart
	predicted  time.Duration // predict time that landed since the group's last step
	failing    bool          // the step in flight fails (Config.FailAfterSteps)

	deferred []events.EpisodeCompleted // NEXT_STEP completions, sent at the roll

	epIDs, recIDs []string
	rewards       []float64
	term, trunc   []bool
	roll          []bool

	obsLen, actLen int // the sizes of the last observation and action, for telemetry
	// payload buffers: the model's action (n-lane), the one before it,
	// the action the env receives, and one-lane scratch
	action, prevAction, sent [][]byte
	prevObs, heldObs         [][]byte
	obsBuf, actBuf, rawBuf   [][]byte
	observations, actions    int64
	// the infos maps, reused from step to step (a hook must not retain
	// an event, nor what it reaches)
	stepInfo, resetInfo *spacesv1.MetaMap
}

// route01 is a session run in rlmesh 0.1's order.
type route01 struct {
	*session
	hctx       context.Context
	stop       func()
	slots      []slot01
	groups     []*group01
	nextSlot   int64  // route-global slots claimed (the budget's counter)
	records    int64  // episodes given record ids (rlmesh's next_index)
	trials     uint64 // trial ordinals claimed
	baseSeed   int64
	ownsResets bool // DISABLED autoreset: the runtime resets lanes
	obsText    []bool
	actText    []bool
}

// advisoryMessage is the simulated relay policy's advisory.
const advisoryMessage = "the model cannot decode the observation as the env sends it; the relay converts it for the model (simulated relay policy)"

// loop01 runs the session in rlmesh 0.1's order; a non-nil error means it
// ended with SessionFailed.
func (s *session) loop01() error {
	hctx := context.WithoutCancel(s.ctx)
	r := &route01{session: s, hctx: hctx, ownsResets: s.cfg.Autoreset == AutoresetDisabled,
		baseSeed: int64(s.cfg.Seed & math.MaxInt64)}
	s.emit(hctx, &events.SessionStarted{SessionID: s.id, Route: s.route, EnvID: s.route.EnvID})
	if s.cfg.RelayAdvisory {
		s.emit(hctx, &events.RelayAdvisory{SessionID: s.id, Route: s.route, Leg: events.LegEnvToModel,
			Severity: events.SeverityCaution, Message: advisoryMessage})
	}
	r.stop = s.startTelemetry(hctx)

	n := s.cfg.NumEnvs
	s.env = s.newEnv(n, rand.New(rand.NewPCG(s.cfg.Seed, streamEnv)), rand.New(rand.NewPCG(s.cfg.Seed, streamPolicy)))
	s.obsSp, s.actSp = s.env.spaces()
	r.obsText, r.actText = textLeaves(s.obsSp), textLeaves(s.actSp)
	r.slots = make([]slot01, n)
	if s.cfg.LaneServed && n > 1 {
		for lane := range n {
			ctx := s.route
			ctx.Lane = events.Some(uint32(lane))
			r.groups = append(r.groups, newGroup01([]int{lane}, true, ctx))
		}
	} else {
		lanes := make([]int, n)
		for i := range lanes {
			lanes[i] = i
		}
		r.groups = append(r.groups, newGroup01(lanes, false, s.route))
	}
	for _, g := range r.groups {
		r.beginReset(g, true)
	}
	for {
		if err := s.ctx.Err(); err != nil {
			return s.fail(hctx, r.stop, fmt.Sprintf("route %s cancelled at runtime step %d: %v",
				s.route.EnvID, r.maxStep(), context.Cause(s.ctx)), err)
		}
		g := r.next()
		if g == nil {
			break
		}
		s.setElapsed(g.due)
		switch g.phase {
		case phaseResetting:
			r.onReset(g)
		case phasePredicting:
			r.onPredict(g)
		case phaseStepping:
			if g.failing {
				return s.fail(hctx, r.stop, fmt.Sprintf("environment env.step failed at runtime step 0: injected fault after %d steps%s",
					s.steps, envRPCHint), errInjected)
			}
			r.onStep(g)
		}
		if g.phase != phaseStepping {
			// A round's samples (or a reset's) go to the meter together.
			s.flushSamples()
		}
	}
	// Every group is idle: the route ends, the final telemetry first.
	s.flushSamples()
	r.stop()
	late := s.lateWindowAfter()
	s.finalTelemetry(hctx)
	if late == 1 {
		s.lateWindow(hctx)
	}
	s.emit(hctx, &events.SessionEnded{SessionID: s.id, Route: s.route,
		Reason: reasonCompleted, TotalSteps: s.steps, TotalEpisodes: s.completed})
	if late == 2 {
		s.lateWindow(hctx)
	}
	return nil
}

func newGroup01(lanes []int, laneGroup bool, ctx events.RuntimeEnvContext) *group01 {
	w := len(lanes)
	return &group01{lanes: lanes, laneGroup: laneGroup, ctx: ctx,
		epIDs: make([]string, w), recIDs: make([]string, w), rewards: make([]float64, w),
		term: make([]bool, w), trunc: make([]bool, w), roll: make([]bool, w)}
}

// next returns the group whose call in flight ends first (the lowest
// index on a tie), nil when every group is idle.
func (r *route01) next() *group01 {
	var best *group01
	for _, g := range r.groups {
		if g.phase != phaseIdle && (best == nil || g.due < best.due) {
			best = g
		}
	}
	return best
}

// maxStep is the highest lane-0 step of the groups, for the cancellation
// message.
func (r *route01) maxStep() int64 {
	var m int64
	for _, g := range r.groups {
		m = max(m, r.slots[g.lanes[0]].steps)
	}
	return m
}

// beginReset starts (or restarts) every lane of g: it claims the
// episodes' slots (a lane group one, refused past the budget; a vector as
// many as the budget holds, its other lanes surplus), picks their seeds
// and trial indices, mints their ids and puts the reset in flight. A group
// with no slot left goes idle.
func (r *route01) beginReset(g *group01, initial bool) {
	width := len(g.lanes)
	claim := width
	if g.laneGroup {
		if r.nextSlot+1 > r.cfg.MaxEpisodes {
			claim = 0
		}
	} else {
		claim = int(min(int64(width), max(0, r.cfg.MaxEpisodes-r.nextSlot)))
	}
	if claim == 0 {
		g.phase = phaseIdle
		return
	}
	if !initial {
		g.resetGen++
	}
	now := r.now()
	g.start = g.start[:0]
	for i, lane := range g.lanes {
		ps := pendingStart{id: newUUIDv7(now, r.idRNG), slot: -1}
		if i < claim {
			ps.slot = r.nextSlot
			r.nextSlot++
		}
		if g.laneGroup {
			ps.seed = events.Some(resetSeed(r.baseSeed, r.id, uint64(ps.slot), 0))
		} else {
			ps.seed = events.Some(resetSeed(r.baseSeed, r.id, g.resetGen, lane))
		}
		if r.ownsResets {
			ps.trial = events.Some(r.trials)
			r.trials++
		}
		g.start = append(g.start, ps)
	}
	g.initial = initial
	g.phase = phaseResetting
	g.opStart = r.elapsed()
	g.due = r.elapsed() + r.pace.reset.draw(r.timeRNG)
}

// onReset lands g's reset: the "env reset complete" log of a group's first
// reset, EpisodeStarted for its scored episodes, and the reset
// observation.
func (r *route01) onReset(g *group01) {
	t0, t1 := r.origin.Add(g.opStart), r.now()
	if !g.initial {
		for _, lane := range g.lanes {
			r.env.reset(lane)
		}
	}
	obs := r.groupObs(g)
	r.recordCall(resetEndpoint, t0, t1, r.wire.resetRequest(len(g.lanes), g.laneGroup), r.wire.resetResponse(obs))
	if g.initial {
		src := "runtime"
		r.emit(r.hctx, &events.Log{SessionID: r.id, Route: g.ctx, Level: events.LogInfo,
			Message: "env reset complete in " + strconv.FormatFloat(ms(t1.Sub(t0)), 'f', 0, 64) + "ms (" +
				strconv.Itoa(len(g.lanes)) + " episode(s) ready)", Source: &src})
	}
	for i, lane := range g.lanes {
		ps := g.start[i]
		r.records++
		index := r.records
		if ps.slot >= 0 {
			index = ps.slot + 1
		}
		resets := r.slots[lane].resets + 1
		r.slots[lane] = slot01{epID: ps.id, recID: recordID(index), index: index, surplus: ps.slot < 0,
			started: t1, seed: ps.seed, trial: ps.trial, resets: resets}
		g.epIDs[i], g.recIDs[i] = ps.id, r.slots[lane].recID
	}
	for i, lane := range g.lanes {
		if sl := &r.slots[lane]; !sl.surplus {
			r.startedEvent(g, i, sl, !g.initial)
		}
	}
	g.roundStart = r.elapsed()
	r.observe(g, obs, r.resetInfos(g, nil), true)
}

// startedEvent emits EpisodeStarted for the episode at position i of g.
// Its env_index is the position within the group, as rlmesh 0.1's episode
// registry numbers it: 0 for every lane of a lane-served env, whose lane
// is in route.lane.
func (r *route01) startedEvent(g *group01, i int, sl *slot01, auto bool) {
	ev := &r.evStart
	*ev = events.EpisodeStarted{SessionID: r.id, Route: g.ctx, EpisodeID: sl.epID, EpisodeRecordID: sl.recID,
		EpisodeIndex: sl.index, EnvIndex: int32(i), StartedFromAutoReset: auto, Seed: sl.seed, TrialIndex: sl.trial}
	r.emit(r.hctx, ev)
}

// groupObs returns g's part of the env's current observation: the n-lane
// slabs, or a lane group's one-lane slabs.
func (r *route01) groupObs(g *group01) [][]byte {
	if !g.laneGroup {
		return r.env.observe()
	}
	var full [][]byte
	if lo, ok := r.env.(laneObserver); ok {
		full = lo.observeLane(g.lanes[0])
	} else {
		full = r.env.observe()
	}
	g.obsBuf = laneSlabs(g.obsBuf, full, r.obsText, g.lanes[0], r.cfg.NumEnvs)
	return g.obsBuf
}

// observe runs the observation transform on obs, emits it and schedules
// g's next predict: at once after a reset, one control period after the
// round began after a step.
func (r *route01) observe(g *group01, obs [][]byte, infos *spacesv1.MetaMap, isReset bool) {
	out := obs
	if r.cfg.Transform {
		// Every 4th step observation repeats the one before (a dropped frame).
		if !isReset {
			g.observations++
		}
		hold := !isReset && g.observations%4 == 0 && g.prevObs != nil
		g.heldObs, g.prevObs = g.prevObs, copySlabs(g.heldObs, obs)
		if hold {
			out = g.heldObs
		}
	}
	l0 := &r.slots[g.lanes[0]]
	ev := &r.evObs
	*ev = events.ObservationEmitted{SessionID: r.id, Route: g.ctx, EpisodeID: g.epIDs[0], EpisodeRecordID: g.recIDs[0],
		EpisodeIDs: g.epIDs, EpisodeRecordIDs: g.recIDs, Step: l0.steps, EnvIndex: int32(g.lanes[0]),
		IsReset: isReset, NumEnvs: uint32(len(g.lanes)), ObservationSpace: r.obsSp, Observation: out, Infos: infos}
	if !sameSlabs(out, obs) {
		ev.RawObservation = obs
	}
	r.record(transformObsRPC, 0)
	r.emit(r.hctx, ev)
	g.obsLen = valueField(out)
	if !isReset {
		g.roundStart = max(g.roundStart+r.pace.period, r.elapsed())
	} else {
		g.roundStart = r.elapsed()
	}
	g.phase = phasePredicting
	g.due = g.roundStart + r.pace.predict.draw(r.timeRNG)
}

// onPredict lands g's predict: the action transform and ActionReceived,
// then the env step goes in flight.
func (r *route01) onPredict(g *group01) {
	t0, t1 := r.origin.Add(g.roundStart), r.now()
	g.predicted += t1.Sub(t0)
	// The model's action, kept: another group's predict reuses the env's
	// buffer before this group's step lands.
	g.action = copySlabs(g.action, r.env.act())
	g.sent = g.action
	if r.cfg.Transform {
		// Every 5th action holds the one before (an action repeat).
		g.actions++
		if g.actions%5 == 0 && g.prevAction != nil {
			g.sent = g.prevAction
		}
	}
	act, raw := g.sent, g.action
	if g.laneGroup {
		act = laneSlabs(g.actBuf, g.sent, r.actText, g.lanes[0], r.cfg.NumEnvs)
		g.actBuf, raw = act, act
		if !sameSlabs(g.sent, g.action) {
			raw = laneSlabs(g.rawBuf, g.action, r.actText, g.lanes[0], r.cfg.NumEnvs)
			g.rawBuf = raw
		}
	}
	r.recordPredict(t0, t1, r.wire.predictRequestLen(g.obsLen, len(g.lanes)), r.wire.predictResponse(act))
	r.record(transformActRPC, 0)
	ev := &r.evAct
	*ev = events.ActionReceived{SessionID: r.id, Route: g.ctx, EpisodeID: g.epIDs[0], EpisodeRecordID: g.recIDs[0],
		EpisodeIDs: g.epIDs, EpisodeRecordIDs: g.recIDs, Step: r.slots[g.lanes[0]].steps + 1,
		EnvIndex: int32(g.lanes[0]), ActionSpace: r.actSp, Action: act}
	if !sameSlabs(act, raw) {
		ev.RawAction = raw
	}
	r.emit(r.hctx, ev)
	g.actLen = valueField(act)
	g.failing = r.cfg.FailAfterSteps > 0 && r.steps >= r.cfg.FailAfterSteps
	g.phase = phaseStepping
	g.opStart = r.elapsed()
	g.due = r.elapsed() + r.pace.step.draw(r.timeRNG)
}

// onStep lands g's env step: StepCompleted with the per-lane flags; on a
// NEXT_STEP roll the deferred completions and the new episodes' starts;
// this step's completions (at once when the runtime owns resets, else
// deferred to the roll); then the group ends, resets, or observes.
func (r *route01) onStep(g *group01) {
	t0, t1 := r.origin.Add(g.opStart), r.now()
	stepDur := t1.Sub(t0)
	r.steps++
	r.laneSteps += int64(len(g.lanes))
	rolled, anyDone, allZero := false, false, true
	stepCap := r.cfg.stepCap()
	for i, lane := range g.lanes {
		sl := &r.slots[lane]
		sl.done, sl.term, sl.trunc, sl.capped = false, false, false, false
		g.roll[i] = sl.roll
		sl.steps++
		sl.predict += g.predicted
		sl.step += stepDur
		if sl.surplus {
			r.surplusSteps++
		}
		if sl.roll {
			// The env ignores the action and resets the lane: a step of no
			// episode.
			r.env.reset(lane)
			g.rewards[i] = 0
			rolled = true
			continue
		}
		rew, term, trunc := r.env.step(lane, g.sent)
		if !term && !trunc && r.cfg.TimeLimit > 0 && sl.steps >= r.cfg.TimeLimit {
			trunc = true
		}
		sl.reward += rew
		g.rewards[i] = rew
		allZero = allZero && rew == 0
		if term || trunc {
			sl.done, sl.term, sl.trunc = true, term, !term
		} else if r.ownsResets && (stepCap > 0 && sl.steps >= stepCap ||
			r.cfg.MaxEpisodeTime > 0 && t1.Sub(sl.started) >= r.cfg.MaxEpisodeTime) {
			sl.done, sl.trunc, sl.capped = true, true, true
		}
		anyDone = anyDone || sl.done
		g.term[i], g.trunc[i] = sl.done && sl.term, sl.done && sl.trunc
	}
	for i := range g.lanes {
		if g.roll[i] {
			g.term[i], g.trunc[i] = false, false
		}
	}
	rewards := g.rewards
	if r.cfg.EmptyRewards && allZero {
		rewards = g.rewards[:0]
	}
	obs := r.groupObs(g)
	r.recordCall(stepEndpoint, t0, t1, r.wire.stepRequest(g.sent, len(g.lanes)), r.wire.stepResponse(obs, len(rewards), len(g.lanes)))
	r.record(roundRPC, ms(t1.Sub(r.origin.Add(g.roundStart))))
	var infos *spacesv1.MetaMap
	if !rolled {
		infos = r.stepInfos(g)
	}
	l0 := &r.slots[g.lanes[0]]
	st := &r.evStep
	*st = events.StepCompleted{SessionID: r.id, Route: g.ctx, EpisodeID: g.epIDs[0], EpisodeRecordID: g.recIDs[0],
		Step: l0.steps, EnvIndex: int32(g.lanes[0]), Rewards: rewards, Infos: infos,
		Terminated: g.term, Truncated: g.trunc, AutoresetRoll: g.roll,
		PredictMs: events.Some(ms(g.predicted)), StepMs: events.Some(ms(stepDur))}
	r.emit(r.hctx, st)
	g.predicted = 0
	if r.cfg.Transform {
		g.prevAction, g.action = g.action, g.prevAction
	}

	if rolled {
		// The step above was the ended ids' last event: their completions
		// go out now, then the new episodes start.
		r.flushDeferred(g)
		for i, lane := range g.lanes {
			if !g.roll[i] {
				continue
			}
			sl := &r.slots[lane]
			r.records++
			index, surplus := r.records, true
			if r.nextSlot+1 <= r.cfg.MaxEpisodes {
				index, surplus = r.nextSlot+1, false
				r.nextSlot++
			}
			*sl = slot01{epID: sl.rollID, recID: recordID(index), index: index, surplus: surplus, started: t1, resets: sl.resets + 1}
			g.epIDs[i], g.recIDs[i] = sl.epID, sl.recID
		}
		for i, lane := range g.lanes {
			if sl := &r.slots[lane]; g.roll[i] && !sl.surplus {
				r.startedEvent(g, i, sl, true)
			}
		}
	}

	// This step's completions: the env's, then the runtime's caps, in lane
	// order; surplus episodes have none.
	for _, capped := range []bool{false, true} {
		for _, lane := range g.lanes {
			sl := &r.slots[lane]
			if !sl.done || sl.capped != capped || sl.surplus {
				continue
			}
			var fi *spacesv1.MetaMap
			if capped {
				fi = infos // one lane: the step's infos are its final info
			} else {
				fi = r.env.finalInfo(lane)
			}
			r.completed++
			ev := events.EpisodeCompleted{SessionID: r.id, Route: g.ctx, EpisodeID: sl.epID, EpisodeRecordID: sl.recID,
				EpisodeIndex: sl.index, EnvIndex: int32(lane), StepCount: sl.steps, CumulativeReward: sl.reward,
				Terminated: sl.term, Truncated: sl.trunc, DurationMs: t1.Sub(sl.started).Milliseconds(),
				FinalInfo: fi, Success: successOf(fi), Seed: sl.seed, TrialIndex: sl.trial}
			if sl.steps > 0 {
				ev.PredictMs = events.Some(ms(sl.predict) / float64(sl.steps))
				ev.StepMs = events.Some(ms(sl.step) / float64(sl.steps))
			}
			g.deferred = append(g.deferred, ev)
		}
	}
	if r.ownsResets {
		r.flushDeferred(g)
	} else {
		// The ended lanes roll on the group's next step, to ids minted now.
		now := r.now()
		for _, lane := range g.lanes {
			if sl := &r.slots[lane]; sl.done {
				sl.roll, sl.rollID = true, newUUIDv7(now, r.idRNG)
			}
		}
	}

	spent := r.completed >= r.cfg.MaxEpisodes
	if (!g.laneGroup || !r.ownsResets) && spent || r.allSurplus(g) {
		r.flushDeferred(g)
		g.phase = phaseIdle
		return
	}
	if r.ownsResets && anyDone {
		r.beginReset(g, false)
		return
	}
	var obsInfos *spacesv1.MetaMap
	if rolled {
		obsInfos = r.resetInfos(g, g.roll)
	}
	r.observe(g, obs, obsInfos, false)
}

// flushDeferred emits g's deferred completions.
func (r *route01) flushDeferred(g *group01) {
	for i := range g.deferred {
		r.emit(r.hctx, &g.deferred[i])
	}
	clear(g.deferred)
	g.deferred = g.deferred[:0]
}

// allSurplus reports whether every lane of g holds a surplus episode.
func (r *route01) allSurplus(g *group01) bool {
	for _, lane := range g.lanes {
		if !r.slots[lane].surplus {
			return false
		}
	}
	return true
}

// stepInfos is the simulated env's step infos: "elapsed_steps", each
// lane's step count in its episode (an integer for one lane; for several,
// a list in gymnasium's vector layout).
func (r *route01) stepInfos(g *group01) *spacesv1.MetaMap {
	return perLane(&g.stepInfo, g, "elapsed_steps", func(lane int) int64 { return r.slots[lane].steps })
}

// resetInfos is the simulated env's reset infos: "resets", how many times
// each lane has been reset (an integer for one lane, else a list); for a
// NEXT_STEP roll, of the lanes that rolled (only flags true).
func (r *route01) resetInfos(g *group01, only []bool) *spacesv1.MetaMap {
	if only != nil {
		// A roll's infos: the count of the rolled lanes, 0 for the others.
		return perLane(&g.resetInfo, g, "resets", func(lane int) int64 {
			for i, l := range g.lanes {
				if l == lane && only[i] {
					return r.slots[lane].resets
				}
			}
			return 0
		})
	}
	return perLane(&g.resetInfo, g, "resets", func(lane int) int64 { return r.slots[lane].resets })
}

// perLane sets *m to {key: v(lane)} for g's one lane, or {key: [v(lane)
// for each lane]}, building it on the first call and updating its
// integers in place after.
func perLane(m **spacesv1.MetaMap, g *group01, key string, v func(lane int) int64) *spacesv1.MetaMap {
	if *m == nil {
		var val *spacesv1.MetaValue
		if len(g.lanes) == 1 {
			val = &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{}}
		} else {
			items := make([]*spacesv1.MetaValue, len(g.lanes))
			for i := range items {
				items[i] = &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_Integer{}}
			}
			val = &spacesv1.MetaValue{Kind: &spacesv1.MetaValue_List{List: &spacesv1.MetaList{Items: items}}}
		}
		*m = &spacesv1.MetaMap{Entries: map[string]*spacesv1.MetaValue{key: val}}
	}
	switch x := (*m).Entries[key].Kind.(type) {
	case *spacesv1.MetaValue_Integer:
		x.Integer = v(g.lanes[0])
	case *spacesv1.MetaValue_List:
		for i, lane := range g.lanes {
			x.List.Items[i].Kind.(*spacesv1.MetaValue_Integer).Integer = v(lane)
		}
	}
	return *m
}

// successKeys are the final-info keys rlmesh 0.1 reads the outcome from,
// first present wins (its edition's success_info_keys).
var successKeys = []string{"is_success", "success", "task_success"}

// successOf is rlmesh 0.1's reading of an episode's outcome from its
// final info: a bool as it is, an integer or a number by != 0; absent
// when no key is present with one of those kinds.
func successOf(fi *spacesv1.MetaMap) events.Option[bool] {
	if fi == nil {
		return events.Option[bool]{}
	}
	for _, k := range successKeys {
		v, ok := fi.Entries[k]
		if !ok {
			continue
		}
		switch x := v.GetKind().(type) {
		case *spacesv1.MetaValue_Bool:
			return events.Some(x.Bool)
		case *spacesv1.MetaValue_Integer:
			return events.Some(x.Integer != 0)
		case *spacesv1.MetaValue_Number:
			return events.Some(x.Number != 0)
		}
	}
	return events.Option[bool]{}
}

// resetSeed is rlmesh 0.1's deterministic_reset_seed: FNV-1a over the base
// seed, the session id, the reset generation (or a lane group's
// route-global slot) and the lane, masked to a non-negative int64. The
// simulator seeds every driver reset, as a session with base_seed =
// Config.Seed does; NEXT_STEP rolls are the env's and carry no seed.
func resetSeed(base int64, sessionID string, generation uint64, lane int) int64 {
	const offset, prime = 0xcbf29ce484222325, 0x100000001b3
	h := uint64(offset)
	update := func(b []byte) {
		for _, c := range b {
			h ^= uint64(c)
			h *= prime
		}
	}
	var b [8]byte
	le := func(v uint64) []byte {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		return b[:]
	}
	update(le(uint64(base)))
	update([]byte{0xff})
	update([]byte(sessionID))
	update([]byte{0xfd})
	update(le(generation))
	update([]byte{0xfc})
	update(le(uint64(lane)))
	return int64(h & math.MaxInt64)
}
