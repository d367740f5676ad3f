package assembly

import (
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
)

// Unfinished actions. rlmesh emits ActionReceived before env.step; when
// the step fails it sends final telemetry and SessionFailed instead of
// StepCompleted, and a kill can fall between the two. Such an action was
// never applied: it is no step. Its rows are taken back, and each lane it
// named an open episode on is kept as a logs row (schema.UnfinishedAction,
// source schema.SourceEvent) with the observation the action was computed
// from and the action. Its lanes without an open episode stay counted in
// dropped_steps. At the session's end it is no problem; an action that
// another follows without a StepCompleted is also counted as
// action_without_step_completed.

// closeAllPending settles the pending action of every group of s (the
// session is ending).
func (a *Assembler) closeAllPending(s *session) {
	a.closePending(s, &s.whole, 0, true)
	for i := range s.byLane {
		a.closePending(s, &s.byLane[i], i, true)
	}
}

// closePending settles a previous action of group g, whose lane 0 is lane
// base of the session, whose StepCompleted never came: its rows are
// taken back and kept as logs rows. atEnd says that the session is
// ending, so that it is no problem. (A failed step of a lane-served env
// can leave several lanes each ending on such an action.)
func (a *Assembler) closePending(s *session, g *stepGroup, base int, atEnd bool) {
	if !g.have {
		return
	}
	g.have = false
	var kept, left []string
	for i, ep := range g.pending {
		if ep == nil {
			continue
		}
		if a.undoUnfinished(s, ep, int32(base+i)) {
			kept = append(kept, ep.recordID)
		} else {
			left = append(left, ep.recordID)
		}
		g.pending[i] = nil
	}
	switch {
	case len(left) > 0:
		// The row could not be taken back (see undoUnfinished): it stays,
		// with reward 0, counted as before.
		a.problem(s, probMissingReward, "a step of %s got no StepCompleted; its reward is recorded as 0", left[0])
	case len(kept) > 0 && !atEnd:
		a.problem(s, probMissingReward, "an action for %s got no StepCompleted before the next action; it is no step: kept in the logs table (source %s)",
			kept[0], schema.SourceEvent)
	}
}

// undoUnfinished takes back the row the pending action opened in ep on
// lane, and keeps it as a logs row. It reports false, and changes
// nothing, when that row is not the last one ep buffers (it was streamed
// out already, which only an action naming one episode on two lanes can
// cause) or ep has completed since (an EpisodeCompleted before the
// StepCompleted: the runtime took the step as done).
func (a *Assembler) undoUnfinished(s *session, ep *episode, lane int32) bool {
	n := len(ep.rows)
	if n == 0 || ep.completed || ep.rows[n-1].step != ep.nextStep-1 {
		return false
	}
	r := ep.rows[n-1]
	u := schema.UnfinishedAction{
		EpisodeID: ep.id, EpisodeRecordID: ep.recordID, EnvIndex: lane,
		Step: r.sessionStep, EpisodeStep: r.step,
		Action: append([]byte{}, r.act.bytes(ep.arena)...),
	}
	cut := r.act.off
	if r.obs.set() {
		u.Observation = append([]byte{}, r.obs.bytes(ep.arena)...)
		u.ObservationInfos = string(r.obsInfos.bytes(ep.arena))
		cut = r.obs.off
	}
	ep.rows = ep.rows[:n-1]
	ep.arena = ep.arena[:cut]
	ep.nextStep--
	ep.stepsRecorded--
	s.stepsRecorded--
	if lane == 0 {
		if last := s.lane0; s.hasLane0 && last.recordID == ep.recordID && last.step == r.sessionStep {
			// The step never happened: the next one may carry its number.
			s.lane0 = lane0Step{ep.recordID, r.sessionStep - 1}
		}
	}
	msg := u.Message()
	src := schema.SourceEvent
	// Not handed over here (logChunk): at the session's end the row
	// joins its last write, mid-session the next log event's check
	// counts it.
	s.logs = append(s.logs, logRow{time: r.recordedAt.time(), level: events.LogInfo.String(), message: msg, source: &src})
	s.logBytes += logRowBytes + len(msg)
	return true
}
