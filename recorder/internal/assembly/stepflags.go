package assembly

import "github.com/rlrec/rlrec/events"

// Per-lane step flags (rlmesh 0.1)
//
// A StepCompleted of rlmesh 0.1 says, per lane, whether the step ended
// the lane's episode (terminated, truncated: env-reported or a runtime
// cap) and whether it was the lane's NEXT_STEP roll (autoreset_roll: the
// new episode's reset, a step of no episode). The recorder takes the
// flags as they come and checks them against the episode events, never
// guessing which side is right:
//
//   - A step whose flags end its episode is that episode's last row
//     (is_last, terminated, truncated from the flags), and the episode
//     takes no further step: the next action on its lane (before its
//     EpisodeCompleted, which 0.1 defers to that roll step under
//     NEXT_STEP) is the roll step, counted in dropped_steps, and an
//     observation for it in between is its terminal observation
//     (final_observation_blob).
//   - The roll flag of a lane must be set exactly on the step after its
//     episode ended; the EpisodeCompleted must agree with the flags that
//     ended the episode (terminated and truncated), and an episode whose
//     flags never ended it must not complete after a flagged step. Each
//     disagreement is counted as step_flags_disagree in the sessions row
//     (and logged); the rows keep what the events said.
//
// A stream of producers before 0.1 has no flags: none of this applies,
// and its episodes end at their EpisodeCompleted as before.

// stepFlags applies the flags of a step that recorded row r of ep.
func (a *Assembler) stepFlags(s *session, ep *episode, r *stepRow, terminated, truncated bool) {
	ep.flagged = true
	if !terminated && !truncated {
		return
	}
	ep.flagEnded, ep.flagTerminated, ep.flagTruncated = true, terminated, truncated
	r.isLast, r.terminated, r.truncated = true, terminated, truncated
}

// checkRoll checks lane's roll flag of a step: set exactly when the step
// was dropped as the roll of an episode the step before ended. ep is the
// episode the step recorded a row of (nil: none).
func (a *Assembler) checkRoll(s *session, e *events.StepCompleted, lane int, ep *episode, rolled, roll bool) {
	switch {
	case roll && ep != nil:
		a.problem(s, probStepFlags, "StepCompleted at step %d flags lane %d's autoreset roll, but episode %s had not ended; its step is recorded",
			e.Step, lane, ep.recordID)
	case rolled && !roll:
		a.problem(s, probStepFlags, "StepCompleted at step %d: lane %d's episode ended on the step before, but the step is not flagged as its roll; not recorded as a step",
			e.Step, lane)
	}
}

// checkCompletion checks an EpisodeCompleted against the flags of ep's
// steps.
func (a *Assembler) checkCompletion(s *session, ep *episode, e *events.EpisodeCompleted) {
	switch {
	case !ep.flagged:
	case !ep.flagEnded:
		a.problem(s, probStepFlags, "EpisodeCompleted for %q, but no StepCompleted flagged its end", ep.recordID)
	case ep.flagTerminated != e.Terminated || ep.flagTruncated != e.Truncated:
		a.problem(s, probStepFlags, "EpisodeCompleted for %q says terminated=%v truncated=%v, its last step's flags terminated=%v truncated=%v",
			ep.recordID, e.Terminated, e.Truncated, ep.flagTerminated, ep.flagTruncated)
	}
}
