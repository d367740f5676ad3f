package assembly

import (
	"bytes"
	"math"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"google.golang.org/protobuf/proto"
)

// The step events of a session (ObservationEmitted, ActionReceived,
// StepCompleted) split into lanes and folded into their episodes' rows.

// layoutFor compiles spec, reusing the session's cached layout while the
// spec is unchanged.
func (a *Assembler) layoutFor(s *session, spec *spacesv1.SpaceSpec, obs bool) (*schema.Layout, bool) {
	cached, layout := s.actSpec, s.actLayout
	if obs {
		cached, layout = s.obsSpec, s.obsLayout
	}
	if spec == nil {
		return nil, false
	}
	if layout != nil && spec == cached {
		return layout, true
	}
	if layout != nil && proto.Equal(spec, cached) {
		// The same space decoded anew (by another decoder, or restored
		// from a snapshot): keep this pointer so that the next events,
		// which share it, compare by pointer.
		if obs {
			s.obsSpec = spec
		} else {
			s.actSpec = spec
		}
		return layout, true
	}
	l, err := schema.Compile(spec)
	if err != nil {
		a.problem(s, probBadSpec, "invalid space spec: %v", err)
		return nil, false
	}
	js, _ := schema.SpecJSON(spec)
	if obs {
		s.obsSpec, s.obsLayout, s.obsSpecJSON = spec, l, string(js)
	} else {
		s.actSpec, s.actLayout, s.actSpecJSON = spec, l, string(js)
	}
	return l, true
}

func (a *Assembler) split(s *session, kind string, step int64, layout *schema.Layout, slabs [][]byte, n int) ([][][]byte, bool) {
	lanes, err := blob.SplitLanesInto(s.split, layout, slabs, n)
	if err != nil {
		a.problem(s, probBadSlab, "%s at step %d: %v", kind, step, err)
		return nil, false
	}
	s.split = lanes
	return lanes, true
}

// laneBase is the lane index of element 0 of a step event's vectors: its
// route lane for a lane-served env (rlmesh 0.1: one-element vectors, one
// group per lane), else 0.
func laneBase(route events.RuntimeEnvContext) int {
	if l, ok := route.Lane.Get(); ok {
		return int(min(l, maxLanes))
	}
	return 0
}

// maxLanes bounds the lane index a route lane can name, so that a bogus
// lane cannot make the assembler allocate per-lane state for it.
const maxLanes = 1 << 16

// group returns the step state of the group a step event's route names.
func (s *session) group(route events.RuntimeEnvContext) *stepGroup {
	l, ok := route.Lane.Get()
	if !ok {
		return &s.whole
	}
	i := int(min(l, maxLanes))
	for len(s.byLane) <= i {
		s.byLane = append(s.byLane, stepGroup{})
	}
	return &s.byLane[i]
}

// noteV01 marks the recording as one with rlmesh 0.1's events when the
// event's route names a lane.
func (a *Assembler) noteV01(s *session, route events.RuntimeEnvContext) {
	if route.Lane.Set {
		a.markV01(s)
	}
}

// noteV01Fields marks the recording as one of rlmesh 0.1 when an event
// carries a field only 0.1 sends (has): an EpisodeStarted's seed or
// trial index (0.1 seeds every reset its driver makes, so a recording's
// first EpisodeStarted has one), an observation's reset infos or raw
// payload, an action's raw payload. A lockstep vector whose lane is
// surplus from the first reset is then known to be 0.1's before that
// lane's ids come, and they are counted as surplus, not first as
// unknown episodes.
func (a *Assembler) noteV01Fields(s *session, has bool) {
	if has {
		a.markV01(s)
	}
}

func (a *Assembler) observationEmitted(s *session, e *events.ObservationEmitted, at time.Time) {
	n := int(e.NumEnvs)
	defer a.finalizeCompleted(s)
	a.noteV01(s, e.Route)
	a.noteV01Fields(s, e.Infos != nil || e.RawObservation != nil)
	if len(e.EpisodeRecordIDs) != n {
		a.problem(s, probLaneCount, "ObservationEmitted at step %d: %d record ids for num_envs %d", e.Step, len(e.EpisodeRecordIDs), n)
		return
	}
	if !e.Route.Lane.Set {
		// A lane-served env's events carry its group's width (1), not
		// the env's lane count.
		a.setNumEnvs(s, n)
	}
	if e.Observation == nil {
		a.problem(s, probMissingPayload, "ObservationEmitted at step %d has no observation", e.Step)
		return
	}
	if e.ObservationSpace == nil {
		a.problem(s, probNoSpace, "ObservationEmitted at step %d carries no observation space (the runtime sends one with every batch); its observation is not recorded", e.Step)
		return
	}
	layout, ok := a.layoutFor(s, e.ObservationSpace, true)
	if !ok {
		return
	}
	lanes, ok := a.split(s, "observation", e.Step, layout, e.Observation, n)
	if !ok {
		return
	}
	var raw [][][]byte
	if e.RawObservation != nil {
		// The raw observation has the env contract's layout, which is
		// the observation's unless a relay converted it; one that does
		// not split so is counted and not kept.
		if r, err := blob.SplitLanesInto(s.rawSplit, layout, e.RawObservation, n); err != nil {
			a.problem(s, probBadSlab, "raw observation at step %d: %v; not recorded", e.Step, err)
		} else {
			raw, s.rawSplit = r, r
		}
	}
	var obsInfos []byte
	if e.Infos != nil {
		obsInfos = blob.AppendMetaJSON(s.infosBuf[:0], e.Infos)
		s.infosBuf = obsInfos
	}
	base := laneBase(e.Route)
	for i, rid := range e.EpisodeRecordIDs {
		if rid == "" {
			continue
		}
		li := base + i
		ep := s.episodeOn(li, rid)
		if ep == nil {
			a.unknownEpisode(s, "observation", e.Step, li, rid, false)
			continue
		}
		if ep.completed || ep.flagEnded {
			// An observation after completion (or, in rlmesh 0.1, after
			// the step its flags ended) is the terminal observation.
			if ep.finalObs == nil {
				ep.finalObs = blob.Append(make([]byte, 0, blob.Size(lanes[i])), lanes[i])
			}
			continue
		}
		l := s.lane(li)
		l.obs = blob.Append(l.obs[:0], lanes[i])
		l.obsRecord = rid
		l.hasObs = true
		l.hasRawObs = false
		l.hasObsInfos = obsInfos != nil
		if obsInfos != nil {
			l.obsInfos = append(l.obsInfos[:0], obsInfos...)
		}
		if raw != nil && !sameLeaves(raw[i], lanes[i]) {
			l.rawObs = blob.Append(l.rawObs[:0], raw[i])
			l.hasRawObs = true
		}
		ep.lastAt = at
	}
}

// sameLeaves reports whether two leaf lists hold the same bytes.
func sameLeaves(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// unknownEpisode handles a step event's lane naming rid, which is neither
// open nor recorded; isStep says that it is an action's lane (a
// lane-step). In a recording of rlmesh 0.1 that is a surplus episode
// (lanes beyond the max_episodes budget run episodes that never start or
// complete): no problem, and its lane-steps are counted in surplus_steps.
// Before 0.1 it is a problem. A recording is known to be of 0.1 at its
// first per-lane flags, route lane, seed, trial index, infos or raw
// payload (noteV01Fields), which may come after the first surplus ids
// (lanes can start surplus at the first reset): those are counted as
// problems when they come, and taken back then (markV01).
func (a *Assembler) unknownEpisode(s *session, what string, step int64, lane int, rid string, isStep bool) {
	if _, done := s.done[rid]; done {
		return
	}
	if s.v01 {
		if isStep {
			s.surplusSteps++
		}
		return
	}
	if isStep {
		s.heldSteps++
	}
	s.heldProblems++
	a.problem(s, probUnknownEpisode, "%s at step %d for lane %d names %q, which never started", what, step, lane, rid)
}

// markV01 marks the recording as one of rlmesh 0.1: the ids counted as
// unknown so far were surplus episodes, and are no problem.
func (a *Assembler) markV01(s *session) {
	if s.v01 {
		return
	}
	s.v01 = true
	if n := s.heldProblems; n > 0 {
		if s.problems[probUnknownEpisode] -= n; s.problems[probUnknownEpisode] <= 0 {
			delete(s.problems, probUnknownEpisode)
		}
		a.problems.Add(-n)
		s.surplusSteps += s.heldSteps
	}
	s.heldProblems, s.heldSteps = 0, 0
}

func (a *Assembler) actionReceived(s *session, e *events.ActionReceived, at time.Time) {
	a.noteV01(s, e.Route)
	a.noteV01Fields(s, e.RawAction != nil)
	g := s.group(e.Route)
	a.closePending(s, g, laneBase(e.Route), false)
	n := len(e.EpisodeRecordIDs)
	if !e.Route.Lane.Set {
		a.setNumEnvs(s, n)
	}
	if e.Action == nil {
		a.problem(s, probMissingPayload, "ActionReceived at step %d has no action", e.Step)
		return
	}
	if e.ActionSpace == nil {
		a.problem(s, probNoSpace, "ActionReceived at step %d carries no action space (the runtime sends one with every batch); its steps are not recorded", e.Step)
		return
	}
	layout, ok := a.layoutFor(s, e.ActionSpace, false)
	if !ok {
		return
	}
	lanes, ok := a.split(s, "action", e.Step, layout, e.Action, n)
	if !ok {
		return
	}
	var raw [][][]byte
	if e.RawAction != nil {
		if r, err := blob.SplitLanesInto(s.rawSplit, layout, e.RawAction, n); err != nil {
			a.problem(s, probBadSlab, "raw action at step %d: %v; not recorded", e.Step, err)
		} else {
			raw, s.rawSplit = r, r
		}
	}
	if cap(g.pending) < n {
		g.pending = make([]*episode, n)
	}
	if cap(g.rolled) < n {
		g.rolled = make([]bool, n)
	}
	g.pending, g.rolled = g.pending[:n], g.rolled[:n]
	clear(g.rolled)
	g.have = true
	if g == &s.whole && a.repeatsStep(s, e) {
		return
	}
	base := laneBase(e.Route)
	for i, rid := range e.EpisodeRecordIDs {
		g.pending[i] = nil
		li := base + i
		var ep *episode
		if rid != "" {
			ep = s.episodeOn(li, rid)
		}
		if ep == nil || ep.completed || ep.flagEnded {
			// A step that belongs to no episode: the lane has none, or
			// (under NEXT_STEP autoreset) it still names the episode that
			// completed on the previous step, or (rlmesh 0.1) whose step
			// before ended it: the lane's roll step.
			s.droppedSteps++
			if ep != nil && ep.flagEnded && !ep.completed {
				g.rolled[i] = true
			}
			if ep == nil && rid != "" {
				a.unknownEpisode(s, "action", e.Step, li, rid, true)
			}
			continue
		}
		l := s.lane(li)
		need := blob.Size(lanes[i])
		withObs := l.hasObs && l.obsRecord == rid
		if withObs {
			need += len(l.obs)
			if l.hasRawObs {
				need += len(l.rawObs)
			}
			if l.hasObsInfos {
				need += len(l.obsInfos)
			}
		}
		var rawAct [][]byte
		if raw != nil && !sameLeaves(raw[i], lanes[i]) {
			rawAct = raw[i]
			need += blob.Size(rawAct)
		}
		a.reserve(s, ep, need)
		if cap(ep.rows) == 0 {
			ep.rows = make([]stepRow, 0, rowBufsStartRows)
		}
		// The row is filled where it lies: a stepRow is built once, not
		// copied in.
		ep.rows = append(ep.rows, stepRow{})
		row := &ep.rows[len(ep.rows)-1]
		row.step, row.sessionStep = ep.nextStep, e.Step
		row.isFirst = ep.nextStep == 0
		row.recordedAt = stampOf(at)
		if withObs {
			row.obs = appendRef(ep, l.obs)
			if l.hasRawObs {
				row.rawObs = appendRef(ep, l.rawObs)
			}
			if l.hasObsInfos {
				row.obsInfos = appendRef(ep, l.obsInfos)
			}
			// The observation is consumed by this action.
			l.hasObs, l.hasRawObs, l.hasObsInfos = false, false, false
		}
		off := len(ep.arena)
		ep.arena = blob.Append(ep.arena, lanes[i])
		row.act = arenaSpan(ep.arena, off)
		if rawAct != nil {
			off := len(ep.arena)
			ep.arena = blob.Append(ep.arena, rawAct)
			row.rawAct = arenaSpan(ep.arena, off)
		}
		ep.nextStep++
		ep.stepsRecorded++
		ep.lastAt = at
		if li == 0 && g == &s.whole {
			a.steppedLane0(s, ep, e.Step)
		}
		s.stepsRecorded++
		g.pending[i] = ep
	}
}

func (a *Assembler) stepCompleted(s *session, e *events.StepCompleted) {
	a.noteV01(s, e.Route)
	g := s.group(e.Route)
	if !g.have {
		a.problem(s, probRewardWithout, "StepCompleted at step %d without a preceding ActionReceived", e.Step)
		return
	}
	g.have = false
	// An empty vector means every reward is 0 (docs/rlmesh-wire.md §4a); rows start at 0.
	if len(e.Rewards) != 0 && len(e.Rewards) != len(g.pending) {
		a.problem(s, probLaneCount, "StepCompleted at step %d: %d rewards for %d lanes", e.Step, len(e.Rewards), len(g.pending))
	}
	flags := len(e.Terminated) > 0 || len(e.Truncated) > 0 || len(e.AutoresetRoll) > 0
	if flags {
		a.markV01(s)
		if len(e.Terminated) != len(g.pending) || len(e.Truncated) != len(g.pending) || len(e.AutoresetRoll) != len(g.pending) {
			a.problem(s, probLaneCount, "StepCompleted at step %d: flags for %d, %d and %d lanes, the action had %d",
				e.Step, len(e.Terminated), len(e.Truncated), len(e.AutoresetRoll), len(g.pending))
			flags = false
		}
	}
	var infos []byte
	if e.Infos != nil {
		infos = blob.AppendMetaJSON(s.infosBuf[:0], e.Infos)
		s.infosBuf = infos
	}
	base := laneBase(e.Route)
	for i, ep := range g.pending {
		if flags {
			a.checkRoll(s, e, base+i, ep, g.rolled[i], e.AutoresetRoll[i])
		}
		if ep == nil {
			continue
		}
		r := &ep.rows[len(ep.rows)-1]
		if i < len(e.Rewards) {
			r.reward = e.Rewards[i]
			ep.rewardSum += r.reward
		}
		if infos != nil {
			r.infos = appendRef(ep, infos)
		}
		r.predictMs, r.hasPredict = e.PredictMs.Get()
		r.stepMs, r.hasStep = e.StepMs.Get()
		if flags && !e.AutoresetRoll[i] {
			a.stepFlags(s, ep, r, e.Terminated[i], e.Truncated[i])
		}
	}
}

// reserve makes room in ep's arena for a row of need bytes. An arena grows
// by doubling up to maxEpisodeBuffer and no further: a row that would take
// it past that first streams the buffered rows out (a row larger than the
// whole buffer gets an arena of its own size). Appending alone would grow
// the arena by up to 2x past the bound, and every open episode's arena
// with it.
func (a *Assembler) reserve(s *session, ep *episode, need int) {
	limit := a.maxEpisodeBuffer()
	if len(ep.arena)+need > limit && len(ep.rows) > 0 {
		a.stepsFull(s, ep)
	}
	takeRowBufs(ep)
	if len(ep.arena)+need <= cap(ep.arena) {
		return
	}
	c := min(max(2*cap(ep.arena), len(ep.arena)+need, 4<<10), max(limit, len(ep.arena)+need))
	grown := make([]byte, len(ep.arena), c)
	copy(grown, ep.arena)
	ep.arena = grown
}

// setNumEnvs notes the session's lane count n from a batch. The first
// time, it checks the episodes already open: a session's first
// EpisodeStarted events come before its first batch.
func (a *Assembler) setNumEnvs(s *session, n int) {
	if n <= 0 || int(s.numEnvs) == n {
		return
	}
	first := s.numEnvs == 0
	s.numEnvs = int32(min(n, math.MaxInt32))
	if !first {
		return
	}
	for _, ep := range sortedOpen(s) {
		if ep.envIndex >= s.numEnvs {
			a.problem(s, probLaneOutOfRange, "EpisodeStarted for %q: env_index %d is not a lane of the session's %d", ep.recordID, ep.envIndex, s.numEnvs)
		}
	}
}
