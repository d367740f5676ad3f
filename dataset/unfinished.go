package dataset

import (
	"fmt"
	"strings"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// Unfinished actions in a replay. An ActionReceived that no StepCompleted
// followed has no steps rows: the recorder keeps each lane it named an
// open episode on as a logs row (schema.UnfinishedAction). The replay
// turns those rows back into the batch they were: an ObservationEmitted
// with the lanes' observations, the ActionReceived at the rows' time (the
// other lanes get the zero action, as in every batch), and no
// StepCompleted. Rows with equal time and step are one action.
//
// Recordings written before unfinished actions were kept this way hold
// the action as a steps row with reward 0 and count it as the problem
// action_without_step_completed; for a session that did not end, the
// last batch then goes out without its StepCompleted, as it came
// (legacyUnfinished).

// planUnfinished adds a batch for each unfinished action in logs.
func (r *replayer) planUnfinished(logs []schema.LogRow) error {
	byRid := make(map[string]*replayEpisode, len(r.eps))
	for _, ep := range r.eps {
		byRid[ep.rid] = ep
	}
	type key struct {
		t     int64
		sstep int64
	}
	index := map[key][]*replayBatch{}
	for _, l := range logs {
		if l.Source == nil || *l.Source != schema.SourceEvent {
			continue
		}
		u, err := schema.ParseUnfinishedAction(l.Message)
		if err != nil {
			continue
		}
		ep := byRid[u.EpisodeRecordID]
		if ep == nil {
			r.note("an unfinished action of episode %s, which has no episodes row, is not replayed", u.EpisodeRecordID)
			continue
		}
		lane := u.EnvIndex
		if r.laneServed {
			// One batch per lane-step; the lane is the episode's route lane.
			lane = r.laneOf(ep)
		} else if u.EnvIndex != ep.row.EnvIndex {
			return fmt.Errorf("session %q episode %s: %w: an unfinished action on lane %d, the episode's env_index is %d",
				r.sid, ep.rid, ErrInconsistent, u.EnvIndex, ep.row.EnvIndex)
		}
		r.unfinished++
		k := key{l.Time.UnixNano(), u.Step}
		var b *replayBatch
		for _, c := range index[k] {
			if !r.laneServed && !c.hasLane(lane) {
				b = c
				break
			}
		}
		if b == nil {
			b = &replayBatch{t: l.Time, sstep: u.Step, unfinished: true}
			index[k] = append(index[k], b)
			r.batches = append(r.batches, b)
		}
		lr := laneRow{ep: ep, lane: lane, step: u.EpisodeStep, hasObs: u.Observation != nil,
			logged: true, obs: u.Observation, act: u.Action}
		if u.ObservationInfos != "" {
			lr.obsInfos = []byte(u.ObservationInfos)
		}
		b.rows = append(b.rows, lr)
	}
	return nil
}

// legacyUnfinished reports whether the session's last batch is an action
// that a recorder of an earlier version wrote as a steps row although no
// StepCompleted followed it.
func (r *replayer) legacyUnfinished() bool {
	return r.unfinished == 0 && r.row.Status != schema.SessionEnded &&
		strings.Contains(derefString(r.row.ProblemSummary), "action_without_step_completed=")
}

// observationOf returns the observation leaves of a batch row.
func (r *replayer) observationOf(lr laneRow) ([][]byte, error) {
	if lr.logged {
		leaves, err := blob.Decode(lr.obs)
		if err != nil {
			return nil, fmt.Errorf("session %q episode %s: %w: the observation of its unfinished action: %w", r.sid, lr.ep.rid, ErrInconsistent, err)
		}
		return leaves, nil
	}
	s, err := r.stepOf(lr)
	if err != nil {
		return nil, err
	}
	return s.ObservationLeaves()
}

// actionOf returns the action leaves of a batch row, nil for a null
// action_blob.
func (r *replayer) actionOf(lr laneRow) ([][]byte, error) {
	if lr.logged {
		leaves, err := blob.Decode(lr.act)
		if err != nil {
			return nil, fmt.Errorf("session %q episode %s: %w: its unfinished action: %w", r.sid, lr.ep.rid, ErrInconsistent, err)
		}
		return leaves, nil
	}
	s, err := r.stepOf(lr)
	if err != nil {
		return nil, err
	}
	if s.Step().ActionBlob == nil {
		return nil, nil
	}
	return s.ActionLeaves()
}
