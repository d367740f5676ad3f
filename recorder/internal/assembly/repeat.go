package assembly

import (
	"github.com/rlrec/rlrec/events"
)

// Repeats. A stream that carries part of itself twice (a producer that
// resent a prefix after a reconnect, or a file concatenated with itself)
// has no sequence numbers to tell the copy by, but the runtime's step
// counter does. An ActionReceived's step is lane 0's counter, which
// restarts with each of lane 0's episodes and otherwise goes up by one per
// step: an ActionReceived whose step is not after the last one recorded in
// lane 0's episode, while that episode is open, repeats steps already
// recorded. In a recording of rlmesh 0.1 an ActionReceived that names a
// completed episode on any lane repeats too: 0.1 defers a NEXT_STEP
// completion to after the lane's roll step, so no lane names an episode
// once it completed (rc.5 names it once more, on its autoreset step),
// and this catches a resent part that began before lane 0's episode
// did, whose other lanes' episodes are still open. It is dropped whole (no
// row, no reward for any lane: its StepCompleted finds nothing pending) and
// counted as repeated_step. Together with a second SessionStarted of a
// recording and events after its end, these are the repeats
// Stats.Repeated counts, so that `rlrec ingest` can fail on them.
//
// The last step is kept beside the assembly state (session.lane0), not
// in a snapshot: after a recovery from one, repeats are detected from the
// next recorded step of lane 0 on.

// steppedLane0 notes that lane 0's episode ep recorded a step at step.
func (a *Assembler) steppedLane0(s *session, ep *episode, step int64) {
	s.lane0, s.hasLane0 = lane0Step{ep.recordID, step}, true
}

// repeatsStep reports whether e repeats a step of lane 0's episode, and
// then counts it and leaves nothing pending for its StepCompleted. The
// caller has set s.whole.pending to e's lanes.
func (a *Assembler) repeatsStep(s *session, e *events.ActionReceived) bool {
	if s.v01 {
		for i, rid := range e.EpisodeRecordIDs {
			if rid == "" {
				continue
			}
			// An open episode is not among the finalised ones (done):
			// those are looked up only for an id no open episode has.
			ep := s.episodeOn(i, rid)
			if ep != nil && ep.completed || ep == nil && s.isDone(rid) {
				clear(s.whole.pending)
				a.problem(s, probRepeatedStep, "ActionReceived at step %d names episode %s on lane %d, which completed (rlmesh 0.1 names no completed episode: a resent part of the stream?); not recorded again",
					e.Step, rid, i)
				return true
			}
		}
	}
	if len(e.EpisodeRecordIDs) == 0 || e.EpisodeRecordIDs[0] == "" {
		return false
	}
	last, ok := s.lane0, s.hasLane0
	if !ok || last.recordID != e.EpisodeRecordIDs[0] || e.Step > last.step {
		return false
	}
	if ep := s.episodeOn(0, last.recordID); ep == nil || ep.completed {
		// An action naming a completed episode records no step for it
		// anyway (a dropped step, as under NEXT_STEP autoreset, whose
		// counter a replayed stream does not keep).
		return false
	}
	clear(s.whole.pending)
	a.problem(s, probRepeatedStep, "ActionReceived at step %d repeats a step episode %s already has (last at step %d: a resent part of the stream?); not recorded again",
		e.Step, last.recordID, last.step)
	return true
}
