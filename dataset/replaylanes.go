package dataset

import (
	"fmt"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
)

// The replay of a lane-served env's recording (rlmesh 0.1 subset_step):
// each lane-step goes out as the runtime emitted it, one-element vectors
// under the lane's route lane (see ReplayEvents).

// emitLaneStep emits a lane-served batch: one lane-step (or one lane of an
// unfinished action): the lane's terminal observation still due, the
// row's observation, its action and, unless unfinished, its
// StepCompleted.
func (r *replayer) emitLaneStep(b *replayBatch, last bool) error {
	r.rep.Batches++
	if len(b.rows) != 1 {
		return fmt.Errorf("session %q: %w: a lane-served env's lane-step with %d rows", r.sid, ErrInconsistent, len(b.rows))
	}
	lr := b.rows[0]
	if err := r.emitLaneFinal(lr.lane); err != nil {
		return err
	}
	route := r.routeOf(lr.ep)
	ids, rids := []string{lr.ep.row.EpisodeID}, []string{lr.ep.rid}
	if lr.hasObs {
		if r.spaces.Observation == nil {
			return fmt.Errorf("session %q has observations but no observation space in its files' metadata; it cannot be replayed", r.sid)
		}
		leaves, err := r.observationOf(lr)
		if err != nil {
			return err
		}
		raw, err := r.rawOf(lr, true)
		if err != nil {
			return err
		}
		oe := &events.ObservationEmitted{SessionID: r.sid, Route: route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
			EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: lr.step, EnvIndex: lr.lane, IsReset: lr.step == 0 && !lr.ep.fromRoll, NumEnvs: 1,
			ObservationSpace: r.spaces.Observation.Spec}
		if oe.Observation, oe.RawObservation, err = r.joinOne(true, leaves, raw); err != nil {
			return err
		}
		if lr.obsInfos != nil {
			if m, err := ParseFinalInfo(string(lr.obsInfos)); err == nil {
				oe.Infos = m
			} else {
				r.note("episode %s step %d: observation_infos: %v; replayed without them", lr.ep.rid, lr.step, err)
			}
		}
		if err := r.send(oe, b.t); err != nil {
			return err
		}
	}
	leaves, err := r.actionOf(lr)
	if err != nil {
		return err
	}
	if leaves == nil {
		leaves = r.zeroAct
	}
	raw, err := r.rawOf(lr, false)
	if err != nil {
		return err
	}
	ae := &events.ActionReceived{SessionID: r.sid, Route: route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
		EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: b.sstep, EnvIndex: lr.lane, ActionSpace: r.spaces.Action.Spec}
	if ae.Action, ae.RawAction, err = r.joinOne(false, leaves, raw); err != nil {
		return err
	}
	if err := r.send(ae, b.t); err != nil {
		return err
	}
	if !lr.logged && lr.step == lr.ep.rows-1 {
		lr.ep.iter.Close()
		lr.ep.iter = nil
	}
	if b.unfinished || last && r.legacyUnfinished() {
		return nil
	}
	sc := &events.StepCompleted{SessionID: r.sid, Route: route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
		Step: b.sstep, EnvIndex: lr.lane, Rewards: []float64{lr.reward}}
	if r.v01 {
		sc.Terminated, sc.Truncated, sc.AutoresetRoll = []bool{false}, []bool{false}, []bool{false}
		if lr.isLast {
			sc.Terminated[0], sc.Truncated[0] = lr.terminated, lr.truncated
			lr.ep.ended = lr.terminated || lr.truncated
		}
		if lr.hasPredict {
			sc.PredictMs = events.Some(lr.predictMs)
		}
		if lr.hasStep {
			sc.StepMs = events.Some(lr.stepMs)
		}
		if lr.infos != nil {
			if m, err := ParseFinalInfo(string(lr.infos)); err == nil {
				sc.Infos = m
			} else {
				r.note("episode %s step %d: infos: %v; replayed without them", lr.ep.rid, lr.step, err)
			}
		}
	}
	return r.send(sc, b.t)
}

// joinOne joins one lane's leaves (and its raw leaves, nil when it kept
// none) into slabs.
func (r *replayer) joinOne(obs bool, leaves, raw [][]byte) ([][]byte, [][]byte, error) {
	l := r.spaces.Action
	if obs {
		l = r.spaces.Observation
	}
	slabs, err := blob.JoinLanesLayout(l, [][][]byte{leaves})
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w: a lane's payload does not join: %w", r.sid, ErrInconsistent, err)
	}
	if raw == nil {
		return slabs, nil, nil
	}
	rawSlabs, err := blob.JoinLanesLayout(l, [][][]byte{raw})
	if err != nil {
		return nil, nil, fmt.Errorf("session %q: %w: a lane's raw payload does not join: %w", r.sid, ErrInconsistent, err)
	}
	return slabs, rawSlabs, nil
}

// emitLaneFinal emits the terminal observation due on lane, if any, on
// that lane alone: its step is the episode's step count.
func (r *replayer) emitLaneFinal(lane int32) error {
	p := r.pendingFinal[lane]
	if p == nil {
		return nil
	}
	r.pendingFinal[lane] = nil
	if r.spaces.Observation == nil {
		return fmt.Errorf("session %q has observations but no observation space in its files' metadata; it cannot be replayed", r.sid)
	}
	leaves, err := blob.Decode(p.row.FinalObservationBlob)
	if err != nil {
		return fmt.Errorf("session %q episode %s: %w: final_observation_blob: %w", r.sid, p.rid, ErrInconsistent, err)
	}
	slabs, _, err := r.joinOne(true, leaves, nil)
	if err != nil {
		return err
	}
	t := p.row.StartedAt
	if p.row.EndedAt != nil {
		t = *p.row.EndedAt
	}
	ids, rids := []string{p.row.EpisodeID}, []string{p.rid}
	return r.send(&events.ObservationEmitted{SessionID: r.sid, Route: r.routeOf(p), EpisodeID: ids[0], EpisodeRecordID: rids[0],
		EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: p.rows, EnvIndex: lane, NumEnvs: 1,
		ObservationSpace: r.spaces.Observation.Spec, Observation: slabs}, t)
}

// emitLaneRoll emits the NEXT_STEP roll step of ep's lane (the zero
// action under ep's id, flagged autoreset_roll), which recorded no row.
func (r *replayer) emitLaneRoll(ep *replayEpisode, t time.Time) error {
	if r.spaces.Action == nil {
		return nil
	}
	lane := r.laneOf(ep)
	if err := r.emitLaneFinal(lane); err != nil {
		return err
	}
	// The episode's terminal observation came before its roll step,
	// under its id.
	if ep.row.FinalObservationBlob != nil {
		r.pendingFinal[lane], ep.finalSent = ep, true
		if err := r.emitLaneFinal(lane); err != nil {
			return err
		}
	}
	r.rep.Batches++
	r.rep.HiddenBatches++
	slabs, _, err := r.joinOne(false, r.zeroAct, nil)
	if err != nil {
		return err
	}
	route := r.routeOf(ep)
	ids, rids := []string{ep.row.EpisodeID}, []string{ep.rid}
	step := ep.rows + 1
	if err := r.send(&events.ActionReceived{SessionID: r.sid, Route: route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
		EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: step, EnvIndex: lane, ActionSpace: r.spaces.Action.Spec, Action: slabs}, t); err != nil {
		return err
	}
	return r.send(&events.StepCompleted{SessionID: r.sid, Route: route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
		Step: step, EnvIndex: lane, Rewards: []float64{0},
		Terminated: []bool{false}, Truncated: []bool{false}, AutoresetRoll: []bool{true}}, t)
}
