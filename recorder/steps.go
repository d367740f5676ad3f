package recorder

import (
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
func (a *assembler) layoutFor(s *session, spec *spacesv1.SpaceSpec, obs bool) (*schema.Layout, bool) {
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

func (a *assembler) split(s *session, kind string, step int64, layout *schema.Layout, slabs [][]byte, n int) ([][][]byte, bool) {
	lanes, err := blob.SplitLanesInto(s.split, layout, slabs, n)
	if err != nil {
		a.problem(s, probBadSlab, "%s at step %d: %v", kind, step, err)
		return nil, false
	}
	s.split = lanes
	return lanes, true
}

// episodeOn returns the open episode rid names (nil: none), as
// s.episodes[rid], for a step event's lane i.
func (s *session) episodeOn(i int, rid string) *episode {
	if i < len(s.lanes) {
		if l := &s.lanes[i]; l.ep != nil && !l.ep.gone && l.epRecord == rid {
			return l.ep
		}
	}
	ep := s.episodes[rid]
	if ep != nil {
		l := s.lane(i)
		l.ep, l.epRecord = ep, rid
	}
	return ep
}

func (s *session) lane(i int) *lane {
	for len(s.lanes) <= i {
		s.lanes = append(s.lanes, lane{})
	}
	return &s.lanes[i]
}

func (a *assembler) observationEmitted(s *session, e *events.ObservationEmitted, at time.Time) {
	n := int(e.NumEnvs)
	defer a.finalizeCompleted(s)
	if len(e.EpisodeRecordIDs) != n {
		a.problem(s, probLaneCount, "ObservationEmitted at step %d: %d record ids for num_envs %d", e.Step, len(e.EpisodeRecordIDs), n)
		return
	}
	a.setNumEnvs(s, n)
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
	for i, rid := range e.EpisodeRecordIDs {
		if rid == "" {
			continue
		}
		ep := s.episodeOn(i, rid)
		if ep == nil {
			if _, done := s.done[rid]; !done {
				a.problem(s, probUnknownEpisode, "observation at step %d for lane %d names %q, which never started", e.Step, i, rid)
			}
			continue
		}
		if ep.completed {
			// An observation after completion is the terminal observation.
			if ep.finalObs == nil {
				ep.finalObs = blob.Append(make([]byte, 0, blob.Size(lanes[i])), lanes[i])
			}
			continue
		}
		l := s.lane(i)
		l.obs = blob.Append(l.obs[:0], lanes[i])
		l.obsRecord = rid
		l.hasObs = true
		ep.lastAt = at
	}
}

func (a *assembler) actionReceived(s *session, e *events.ActionReceived, at time.Time) {
	a.closePending(s, false)
	n := len(e.EpisodeRecordIDs)
	a.setNumEnvs(s, n)
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
	if cap(s.pending) < n {
		s.pending = make([]*episode, n)
	}
	s.pending = s.pending[:n]
	s.havePending = true
	if a.repeatsStep(s, e) {
		return
	}
	for i, rid := range e.EpisodeRecordIDs {
		s.pending[i] = nil
		var ep *episode
		if rid != "" {
			ep = s.episodeOn(i, rid)
		}
		if ep == nil || ep.completed {
			// A step that belongs to no episode: the lane has none, or
			// (under NEXT_STEP autoreset) it still names the episode that
			// completed on the previous step.
			s.droppedSteps++
			if ep == nil && rid != "" {
				if _, done := s.done[rid]; !done {
					a.problem(s, probUnknownEpisode, "action at step %d for lane %d names %q, which never started", e.Step, i, rid)
				}
			}
			continue
		}
		l := s.lane(i)
		need := blob.Size(lanes[i])
		if l.hasObs && l.obsRecord == rid {
			need += len(l.obs)
		}
		a.reserve(s, ep, need)
		row := stepRow{
			step:        ep.nextStep,
			sessionStep: e.Step,
			obsLen:      -1,
			isFirst:     ep.nextStep == 0,
			recordedAt:  stampOf(at),
		}
		if l.hasObs && l.obsRecord == rid {
			row.obsOff = len(ep.arena)
			ep.arena = append(ep.arena, l.obs...)
			row.obsLen = len(l.obs)
			// The observation is consumed by this action.
			l.hasObs = false
		}
		row.actOff = len(ep.arena)
		ep.arena = blob.Append(ep.arena, lanes[i])
		row.actLen = len(ep.arena) - row.actOff
		ep.rows = append(ep.rows, row)
		ep.nextStep++
		ep.stepsRecorded++
		ep.lastAt = at
		if i == 0 {
			a.steppedLane0(s, ep, e.Step)
		}
		s.stepsRecorded++
		s.pending[i] = ep
	}
}

func (a *assembler) stepCompleted(s *session, e *events.StepCompleted) {
	if !s.havePending {
		a.problem(s, probRewardWithout, "StepCompleted at step %d without a preceding ActionReceived", e.Step)
		return
	}
	s.havePending = false
	// An empty vector means every reward is 0 (RLMESH.md §4a); rows start at 0.
	if len(e.Rewards) != 0 && len(e.Rewards) != len(s.pending) {
		a.problem(s, probLaneCount, "StepCompleted at step %d: %d rewards for %d lanes", e.Step, len(e.Rewards), len(s.pending))
	}
	for i, ep := range s.pending {
		if ep == nil || i >= len(e.Rewards) {
			continue
		}
		r := e.Rewards[i]
		ep.rows[len(ep.rows)-1].reward = r
		ep.rewardSum += r
	}
}
