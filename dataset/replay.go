package dataset

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
)

// ReplayReport says what ReplayEvents had to infer.
type ReplayReport struct {
	// Events is the number of events emitted.
	Events int
	// Lanes is N, the lane count of the batches (1 + the highest
	// env_index of the session's episodes).
	Lanes int
	// Batches is the number of ActionReceived events emitted;
	// HiddenBatches of them rebuild batches that recorded no row (every
	// lane dropped), from the session's dropped_steps.
	Batches, HiddenBatches int
	// Notes lists what could not be rebuilt exactly, for the user.
	Notes []string
}

// ReplayEvents rebuilds the hook event stream a session was recorded from
// and hands each event, with the time it was recorded at, to emit (events
// and their slices are reused after emit returns). Recording the emitted
// stream again (rlrec ingest) gives tables equal to the session's, row for
// row, for a session that ended or failed.
//
// # How the stream is rebuilt
//
// A batch step is the set of steps rows with equal recorded_at and
// session_step (one ActionReceived stamped them all), ordered by
// recorded_at; N is 1 + the highest env_index among the session's
// episodes, and a row's lane is its episode's env_index. Each batch gives:
//
//   - an ObservationEmitted with the observation of every lane whose row
//     has one, and the terminal observation (final_observation_blob) of
//     any lane whose episode completed before it; a lane with neither gets
//     the zero value of the space under the id "" (the recorder skips
//     it). When a lane has both, the terminal observation goes out in an
//     ObservationEmitted of its own first;
//   - an ActionReceived of N lanes, the lanes without a row carrying the
//     zero action under the id of the lane's completed episode (or ""),
//     which the recorder counts as a dropped step, as it did originally;
//   - a StepCompleted with the rows' rewards (0 for other lanes).
//
// An unfinished action (an ActionReceived no StepCompleted followed, kept
// as logs rows: schema.UnfinishedAction) is a batch of its own, at its
// time, with the observations and actions of its rows and no
// StepCompleted (unfinished.go). A recording of an earlier version holds
// it as a steps row instead: when such a session did not end and counted
// action_without_step_completed, its last batch gets no StepCompleted, as
// originally.
//
// EpisodeStarted events go out at started_at, at the latest just before
// the episode's first batch; EpisodeCompleted (for every episode with a
// step_count) at ended_at, at the earliest just after its last batch, with
// final_info parsed by ParseFinalInfo. Logs and telemetry snapshots (rows
// with equal time and horizon, in file order) go out at their time; a
// logs row of source schema.SourceEvent goes out as the event it holds
// (EnvConnected and ModelConnected, before SessionStarted at an equal
// time, and the repeated EpisodeCompleted of rlmesh's env server).
// SessionStarted opens the stream; SessionEnded or SessionFailed (from the
// sessions row) closes the episode events. Events at equal times keep
// the runtime's order.
//
// Batches in which every lane was dropped (under next-step autoreset,
// the step after all lanes finished together) recorded no row. When the
// session's dropped_steps exceeds the dropped lanes of the visible
// batches by N per batch at which every lane's row is its episode's last,
// one all-dropped batch is rebuilt after each of those; otherwise the
// missing dropped steps are emitted as one batch of that many "" lanes
// at the end, so dropped_steps still agrees.
//
// What cannot be rebuilt: sessions with status crashed or open replay
// without a closing event (recording the stream again gives status
// "open" and a new ended_at); problems other than dropped steps and a
// missing StepCompleted (unknown ids, bad slabs) are not re-created; a
// null action_blob replays as the zero action. Notes in the report say
// when any of these applies.
//
// rlmesh 0.1 (schema version 3): the episode events carry the seed, the
// trial index, the runtime's success (where success_source says
// "runtime") and the per-step mean times; the observation and action
// events carry the raw payloads the rows kept (a lane without one gets its
// transformed payload); and in a recording of 0.1 (its rows carry step
// times, or its episodes a lane, seed or trial index, or it counted
// surplus steps) each StepCompleted carries the step's times and infos
// and per-lane flags: terminated and truncated from the rows' is_last,
// and autoreset_roll on the lanes whose episode ended on the step before
// (the lane names that episode until its completion, which follows).
// Surplus episodes are not recorded, only counted (surplus_steps): the
// replay names the lanes of its batches that have no row and no episode
// of their own (none started
// yet, or the last completed) as a surplus episode's ("surplus-lane-N"),
// as many as were counted, so that recording the stream again counts them
// again (a note says when fewer such lanes are found). The terminal
// observation of an episode whose flags ended it goes out right after
// that step, as in 0.1, so an episode the session's failure left
// incomplete keeps it.
//
// A lane-served env's recording (episodes with a lane) is replayed per
// lane, as rlmesh 0.1 emits it: every steps row is a lane-step of its own
// (ObservationEmitted, ActionReceived and StepCompleted with the route
// lane set, one-element vectors, num_envs 1 and env_index the lane; the
// episode events with the route lane and the episode's env_index), a
// terminal observation goes out on its lane alone, and under NEXT_STEP
// each episode whose last row ended it gets its roll step (the zero action
// under its id, flagged autoreset_roll, reward 0) just before its
// EpisodeCompleted, when the session's dropped steps beyond its surplus
// steps are exactly those. N is then 1 + the highest lane.
//
// Memory: the fixed columns of the session's rows without their blobs
// (about 60 bytes a row) plus one open steps file per lane.
func (d *Dataset) ReplayEvents(rec Recording, emit func(ev events.Event, at time.Time) error) (ReplayReport, error) {
	var rep ReplayReport
	s, err := d.Session(rec)
	if err != nil {
		return rep, err
	}
	row := s.Row()
	if row == nil {
		return rep, fmt.Errorf("%s: %w in %s", rec, ErrNoSessionRow, d.root)
	}
	eps, err := d.Episodes(rec)
	if err != nil {
		return rep, err
	}
	logs, err := d.Logs(rec)
	if err != nil {
		return rep, err
	}
	tele, err := d.Telemetry(rec)
	if err != nil {
		return rep, err
	}
	sp, err := d.SessionSpaces(rec)
	if err != nil {
		return rep, err
	}
	r := &replayer{d: d, rec: rec, sid: rec.SessionID, row: row, spaces: sp, emit: emit, rep: &rep}
	if err := r.plan(eps, logs); err != nil {
		return rep, err
	}
	err = r.run(logs, tele)
	r.closeAll()
	return rep, err
}

// replayEpisode is one episode being replayed.
type replayEpisode struct {
	row       schema.EpisodeRow
	rid       string
	first     int // index of its first and last batch; -1 without rows
	last      int
	rows      int64
	iter      *Steps
	completed bool // its EpisodeCompleted has gone out
	// ended: its last row went out with is_last (rlmesh 0.1: its lane
	// names it until its EpisodeCompleted, at the roll step).
	ended bool
	// finalQueued: (rlmesh 0.1) its terminal observation was queued as
	// its last row went out, at finalAt, before its completion.
	finalQueued bool
	finalAt     time.Time
	// fromRoll: a lane-served env's episode that a NEXT_STEP roll started
	// (its first observation is no reset observation).
	fromRoll bool
	// finalSent: its terminal observation went out (before its roll step)
	finalSent bool
}

// laneRow is one steps row of a batch, or one lane of an unfinished
// action (logged).
type laneRow struct {
	ep     *replayEpisode
	lane   int32
	step   int64
	reward float64
	hasObs bool
	// logged: the lane of an unfinished action, kept in the logs table
	// with its observation and action blobs (obs, act), not in a steps
	// file.
	logged   bool
	obs, act []byte

	// schema version 3
	isLast, terminated, truncated bool
	infos                         []byte
	obsInfos                      []byte // the infos of the row's observation
	predictMs, stepMs             float64
	hasPredict, hasStep           bool
}

type replayBatch struct {
	t     time.Time
	sstep int64
	rows  []laneRow
	// unfinished: an action no StepCompleted followed (rebuilt from the
	// logs table): no StepCompleted goes out after it.
	unfinished bool
}

// item is an event placed in a slot (before batch slot, or after the last).
type item struct {
	slot int
	t    time.Time
	// sortT is t, or later for the closing event (see run).
	sortT time.Time
	rank  int
	seq   int
	ev    events.Event
	ep    *replayEpisode // EpisodeCompleted: the episode
	// hidden: an all-dropped batch rebuilt at this place, hstep its
	// step
	hidden int
	hstep  int64
	// roll: the roll step of this episode of a lane-served env
	roll *replayEpisode
}

// Ranks order events at equal times as the runtime does.
const (
	rankConnected = iota // EnvConnected, ModelConnected: before SessionStarted
	rankSessionStarted
	rankEpisodeStarted
	rankLaneRoll // a lane-served env's roll step: before the completion
	rankEpisodeCompleted
	rankHiddenBatch
	rankLogTelemetry
	rankSessionEnded
	rankSessionFailed
)

type replayer struct {
	d      *Dataset
	rec    Recording
	sid    string
	row    *schema.SessionRow
	spaces Spaces
	emit   func(events.Event, time.Time) error
	rep    *ReplayReport

	route   events.RuntimeEnvContext
	n       int
	eps     []*replayEpisode
	byLane  [][]*replayEpisode // episodes of each lane in index order
	batches []*replayBatch
	items   []item

	// pendingFinal holds, per lane, an episode whose terminal observation
	// is still to go out.
	pendingFinal []*replayEpisode
	// lastStarted is, per lane, the latest episode started so far.
	lastStarted []*replayEpisode

	// unfinished counts the lanes of unfinished actions in the logs.
	unfinished int

	// v01: the recording is of rlmesh 0.1 (see ReplayEvents); roll marks,
	// per lane, the batch's roll lanes.
	v01  bool
	roll []bool
	// surplus is the number of surplus lane-steps (rlmesh 0.1) still to
	// be replayed: lanes of visible batches that had no episode.
	surplus int64
	// laneServed: the recording is of a lane-served env (its episodes
	// have a lane), replayed per lane (see ReplayEvents).
	laneServed bool

	zeroObs, zeroAct [][]byte
	laneBuf          [][][]byte
	idBuf, ridBuf    []string
	rewards          []float64
}

func (r *replayer) note(format string, args ...any) {
	r.rep.Notes = append(r.rep.Notes, fmt.Sprintf(format, args...))
}

// plan reads the fixed columns of every episode's steps, and the
// unfinished actions of the logs, and builds the batches and the slots of
// the other events.
func (r *replayer) plan(rows []Episode, logs []schema.LogRow) error {
	r.route = events.RuntimeEnvContext{EnvID: r.rec.EnvID, EnvComponentID: r.row.EnvComponentID, ModelComponentID: r.row.ModelComponentID}
	r.n = 1
	for _, e := range rows {
		r.laneServed = r.laneServed || e.Row.Lane != nil
	}
	for _, e := range rows {
		if e.Row.EnvIndex < 0 || e.Row.EnvIndex >= blob.MaxLanes {
			return fmt.Errorf("%s: env_index %d out of range; the episode cannot be replayed", e.Path, e.Row.EnvIndex)
		}
		if r.laneServed && (e.Row.Lane == nil || *e.Row.Lane < 0 || *e.Row.Lane >= blob.MaxLanes) {
			return fmt.Errorf("%s: episode %s of a lane-served env has lane %v; the recording cannot be replayed", e.Path, e.EpisodeRecordID, derefLane(e.Row.Lane))
		}
		r.n = max(r.n, int(r.laneOfRow(&e.Row))+1)
	}
	r.rep.Lanes = r.n
	r.byLane = make([][]*replayEpisode, r.n)
	r.pendingFinal = make([]*replayEpisode, r.n)
	r.lastStarted = make([]*replayEpisode, r.n)

	type key struct {
		t     int64
		sstep int64
	}
	index := map[key][]int{}
	if n := r.row.SurplusSteps; n != nil && *n > 0 {
		r.v01 = true
		r.surplus = *n
	}
	for _, e := range rows {
		x := &e.Row
		r.v01 = r.v01 || x.Lane != nil || x.Seed != nil || x.TrialIndex != nil || x.PredictMs != nil
	}
	for _, e := range rows {
		ep := &replayEpisode{row: e.Row, rid: e.EpisodeRecordID, first: -1, last: -1}
		r.eps = append(r.eps, ep)
		r.byLane[r.laneOf(ep)] = append(r.byLane[r.laneOf(ep)], ep)
		if !r.d.HasSteps(r.rec, e.EpisodeRecordID) {
			continue
		}
		st, err := r.d.Steps(r.rec, e.EpisodeRecordID)
		if err != nil {
			return err
		}
		for st.Next() {
			s := st.Step()
			lane := r.laneOf(ep)
			k := key{s.RecordedAt.UnixMicro(), s.SessionStep}
			var b *replayBatch
			for _, bi := range index[k] {
				// A lane-served env's rows are lane-steps of their own.
				if !r.laneServed && !r.batches[bi].hasLane(lane) {
					b = r.batches[bi]
					break
				}
			}
			if b == nil {
				b = &replayBatch{t: s.RecordedAt, sstep: s.SessionStep}
				index[k] = append(index[k], len(r.batches))
				r.batches = append(r.batches, b)
			}
			if s.ActionBlob == nil {
				r.note("%s row %d: null action_blob replays as the zero action", st.Path(), st.Row())
			}
			lr := laneRow{ep: ep, lane: lane, step: s.Step, reward: s.Reward, hasObs: s.ObservationBlob != nil,
				isLast: s.IsLast, terminated: s.Terminated, truncated: s.Truncated,
				predictMs: s.PredictMs, stepMs: s.StepMs, hasPredict: s.HasPredictMs, hasStep: s.HasStepMs}
			if s.Infos != nil {
				lr.infos = append([]byte{}, s.Infos...)
			}
			if s.ObservationInfos != nil {
				lr.obsInfos = append([]byte{}, s.ObservationInfos...)
			}
			r.v01 = r.v01 || s.HasPredictMs || s.HasLane
			b.rows = append(b.rows, lr)
			ep.rows++
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return err
		}
	}
	if err := r.planUnfinished(logs); err != nil {
		return err
	}
	sortBatches(r.batches)
	for bi, b := range r.batches {
		sort.Slice(b.rows, func(i, j int) bool { return b.rows[i].lane < b.rows[j].lane })
		for _, lr := range b.rows {
			if lr.ep.first < 0 {
				lr.ep.first = bi
			}
			lr.ep.last = bi
		}
	}
	// Each episode's rows must come in step order across the batches.
	next := map[*replayEpisode]int64{}
	for _, b := range r.batches {
		for _, lr := range b.rows {
			if lr.logged {
				continue
			}
			if lr.step != next[lr.ep] {
				return fmt.Errorf("session %q episode %s: %w: steps are not consecutive in recording order (step %d where %d was due)",
					r.sid, lr.ep.rid, ErrInconsistent, lr.step, next[lr.ep])
			}
			next[lr.ep]++
		}
	}
	r.planHidden()
	r.planItems()
	var err error
	if r.spaces.Observation != nil {
		r.zeroObs = zeroLeaves(r.spaces.Observation)
	}
	if r.spaces.Action != nil {
		r.zeroAct = zeroLeaves(r.spaces.Action)
	} else if len(r.batches) > 0 {
		err = fmt.Errorf("session %q has steps but no action space in its files' metadata; it cannot be replayed", r.sid)
	}
	return err
}

// laneOfRow is an episode's lane in the batches: its route lane in a
// lane-served env's recording, else its env_index.
func (r *replayer) laneOfRow(e *schema.EpisodeRow) int32 {
	if r.laneServed && e.Lane != nil {
		return int32(*e.Lane)
	}
	return e.EnvIndex
}

func (r *replayer) laneOf(ep *replayEpisode) int32 { return r.laneOfRow(&ep.row) }

// routeOf is the route of ep's events: a lane-served env's name the lane.
func (r *replayer) routeOf(ep *replayEpisode) events.RuntimeEnvContext {
	route := r.route
	if r.laneServed {
		route.Lane = events.Some(uint32(r.laneOf(ep)))
	}
	return route
}

func endOf(ep *replayEpisode) time.Time {
	if ep.row.EndedAt != nil {
		return *ep.row.EndedAt
	}
	return ep.row.StartedAt
}

// logRoute is the route of a Log event whose row says lane (nil: none).
func (r *replayer) logRoute(lane *int64) events.RuntimeEnvContext {
	route := r.route
	if lane != nil && *lane >= 0 && *lane <= 1<<32-1 {
		route.Lane = events.Some(uint32(*lane))
	}
	return route
}

func derefLane(p *int64) any {
	if p == nil {
		return "null"
	}
	return *p
}

func (b *replayBatch) hasLane(lane int32) bool {
	for _, lr := range b.rows {
		if lr.lane == lane {
			return true
		}
	}
	return false
}

// sortBatches orders batches by time, then by their rows' position in
// their episodes (for batches stamped in the same microsecond).
func sortBatches(bs []*replayBatch) {
	minKey := func(b *replayBatch) (int64, int64) {
		ei, st := int64(1<<62), int64(1<<62)
		for _, lr := range b.rows {
			if lr.ep.row.EpisodeIndex < ei || lr.ep.row.EpisodeIndex == ei && lr.step < st {
				ei, st = lr.ep.row.EpisodeIndex, lr.step
			}
		}
		return ei, st
	}
	sort.SliceStable(bs, func(i, j int) bool {
		if !bs[i].t.Equal(bs[j].t) {
			return bs[i].t.Before(bs[j].t)
		}
		ei, si := minKey(bs[i])
		ej, sj := minKey(bs[j])
		if ei != ej {
			return ei < ej
		}
		return si < sj
	})
}

// slotBefore returns the number of batches stamped before t (strictly, or
// also at t when incl).
func (r *replayer) slotOf(t time.Time, incl bool) int {
	return sort.Search(len(r.batches), func(i int) bool {
		if incl {
			return r.batches[i].t.After(t)
		}
		return !r.batches[i].t.Before(t)
	})
}

// planHidden works out the all-dropped batches that recorded no row.
func (r *replayer) planHidden() {
	if r.laneServed {
		r.planLaneRolls()
		return
	}
	var visible int64
	for _, b := range r.batches {
		visible += int64(r.n - len(b.rows))
	}
	deficit := r.row.DroppedSteps - visible
	if deficit <= 0 {
		if deficit < 0 {
			r.note("the session counted %d dropped steps, the batches replayed drop %d: the replayed session's dropped_steps will differ", r.row.DroppedSteps, visible)
		}
		return
	}
	var cands []int
	for bi, b := range r.batches {
		if len(b.rows) != r.n || b.unfinished {
			continue
		}
		all := true
		for _, lr := range b.rows {
			// (rlmesh 0.1: an episode its flags ended has its roll step
			// next, whether or not it completed before the session's end.)
			all = all && lr.step == lr.ep.rows-1 && (lr.ep.row.StepCount != nil || r.v01 && lr.isLast)
		}
		if all {
			cands = append(cands, bi)
		}
	}
	n := int64(r.n)
	switch {
	case deficit == n*int64(len(cands)):
	case len(cands) > 0 && cands[len(cands)-1] == len(r.batches)-1 && deficit == n*int64(len(cands)-1):
		cands = cands[:len(cands)-1]
	default:
		r.items = append(r.items, item{slot: len(r.batches), t: r.row.StartedAt, rank: rankHiddenBatch, hidden: int(deficit)})
		r.note("%d dropped steps could not be placed; they are replayed as one batch of that many lanes at the end", deficit)
		return
	}
	for _, bi := range cands {
		// Just after the episodes of batch bi completed (or, when none
		// did, just after the batch).
		t := r.batches[bi].t
		for _, lr := range r.batches[bi].rows {
			if e := lr.ep.row.EndedAt; e != nil && e.After(t) {
				t = *e
			}
		}
		// rlmesh 0.1's roll step counts on from the step that ended
		// the episodes (a step the recorder does not take for a
		// repeat of one it has); rc.5's is replayed as step 0.
		var hstep int64
		if r.v01 {
			hstep = r.batches[bi].sstep + 1
		}
		r.items = append(r.items, item{slot: bi + 1, t: t, rank: rankHiddenBatch, hidden: r.n, hstep: hstep})
	}
}

// planLaneRolls places the roll steps of a lane-served env's NEXT_STEP
// episodes: no batch of it drops a lane, so its dropped steps are its
// surplus steps and its roll steps, one per episode whose last row ended
// it (and which completed).
func (r *replayer) planLaneRolls() {
	var surplus int64
	if n := r.row.SurplusSteps; n != nil {
		surplus = *n
	}
	deficit := r.row.DroppedSteps - surplus
	if deficit == 0 {
		return
	}
	var cands []*replayEpisode
	for _, ep := range r.eps {
		if ep.last < 0 || ep.row.StepCount == nil {
			continue
		}
		b := r.batches[ep.last]
		if lr := b.rows[0]; lr.ep == ep && lr.isLast && (lr.terminated || lr.truncated) {
			cands = append(cands, ep)
		}
	}
	if int64(len(cands)) < deficit {
		r.note("%d dropped steps of a lane-served env could not be placed as roll steps (%d episodes ended on a flagged step); they are not replayed", deficit, len(cands))
		return
	}
	// rlmesh 0.1 completes the episodes still awaiting their roll at once
	// when the budget is spent, without a roll step: those are the
	// latest completions.
	sort.SliceStable(cands, func(i, j int) bool { return endOf(cands[i]).Before(endOf(cands[j])) })
	cands = cands[:deficit]
	for _, lane := range r.byLane {
		sort.SliceStable(lane, func(i, j int) bool { return lane[i].row.EpisodeIndex < lane[j].row.EpisodeIndex })
	}
	for _, ep := range cands {
		lane := r.byLane[r.laneOf(ep)]
		for i, x := range lane {
			if x == ep && i+1 < len(lane) {
				lane[i+1].fromRoll = true
			}
		}
		t := ep.row.StartedAt
		if ep.row.EndedAt != nil {
			t = *ep.row.EndedAt
		}
		r.items = append(r.items, item{slot: ep.last + 1, t: t, rank: rankLaneRoll, roll: ep})
	}
}

func (r *replayer) planItems() {
	row := r.row
	r.items = append(r.items, item{slot: 0, t: row.StartedAt, rank: rankSessionStarted,
		ev: &events.SessionStarted{SessionID: r.sid, Route: r.route, EnvID: r.rec.EnvID}})
	last := len(r.batches)
	for _, ep := range r.eps {
		e := &ep.row
		slot := r.slotOf(e.StartedAt, false)
		if ep.first >= 0 {
			slot = min(slot, ep.first)
		}
		r.items = append(r.items, item{slot: slot, t: e.StartedAt, rank: rankEpisodeStarted, ep: ep,
			ev: &events.EpisodeStarted{SessionID: r.sid, Route: r.routeOf(ep), EpisodeID: e.EpisodeID, EpisodeRecordID: ep.rid,
				EpisodeIndex: e.EpisodeIndex, EnvIndex: e.EnvIndex, StartedFromAutoReset: e.StartedFromAutoReset,
				Seed: optOf(e.Seed), TrialIndex: optOf(e.TrialIndex)}})
		if e.StepCount == nil {
			continue
		}
		end := e.StartedAt
		if e.EndedAt != nil {
			end = *e.EndedAt
		}
		slot = r.slotOf(end, true)
		if ep.last >= 0 {
			slot = max(slot, ep.last+1)
		}
		envIndex := e.EnvIndex
		if r.laneServed {
			// rlmesh 0.1.0 names a lane's episode by env_index 0 (its index
			// in the lane's group) when it starts, by the lane when it
			// completes.
			envIndex = r.laneOf(ep)
		}
		c := &events.EpisodeCompleted{SessionID: r.sid, Route: r.routeOf(ep), EpisodeID: e.EpisodeID, EpisodeRecordID: ep.rid,
			EpisodeIndex: e.EpisodeIndex, EnvIndex: envIndex, StepCount: *e.StepCount,
			Terminated: e.Terminated, Truncated: e.Truncated,
			Seed: optOf(e.Seed), TrialIndex: optOf(e.TrialIndex), PredictMs: optOf(e.PredictMs), StepMs: optOf(e.StepMs)}
		if e.Success != nil && e.SuccessSource != nil && *e.SuccessSource == schema.SuccessFromRuntime {
			c.Success = events.Some(*e.Success)
		}
		if e.CumulativeReward != nil {
			c.CumulativeReward = *e.CumulativeReward
		}
		if e.DurationMs != nil {
			c.DurationMs = *e.DurationMs
		}
		if e.FinalInfo != nil {
			m, err := ParseFinalInfo(*e.FinalInfo)
			if err != nil {
				r.note("episode %s: %v; replayed without final_info", ep.rid, err)
			} else {
				c.FinalInfo = m
			}
		}
		r.items = append(r.items, item{slot: slot, t: end, rank: rankEpisodeCompleted, ep: ep, ev: c})
	}
	switch row.Status {
	case schema.SessionEnded, schema.SessionFailed:
		end := row.StartedAt
		if row.EndedAt != nil {
			end = *row.EndedAt
		}
		var ev events.Event
		rank := rankSessionEnded
		if row.Status == schema.SessionEnded {
			se := &events.SessionEnded{SessionID: r.sid, Route: r.route}
			if row.Reason != nil {
				se.Reason = *row.Reason
			}
			if row.TotalSteps != nil {
				se.TotalSteps = *row.TotalSteps
			}
			if row.TotalEpisodes != nil {
				se.TotalEpisodes = *row.TotalEpisodes
			}
			ev = se
		} else {
			sf := &events.SessionFailed{SessionID: r.sid, Route: r.route}
			if row.Reason != nil {
				sf.Reason = *row.Reason
			}
			ev, rank = sf, rankSessionFailed
		}
		r.items = append(r.items, item{slot: last, t: end, rank: rank, ev: ev})
	default:
		r.note("session status %q: replayed without a closing event; recording the stream again gives status %q", row.Status, schema.SessionOpen)
	}
	if row.Problems > 0 {
		var other []string
		for _, kv := range strings.Fields(derefString(row.ProblemSummary)) {
			if !strings.HasPrefix(kv, "action_without_step_completed=") {
				other = append(other, kv)
			}
		}
		if len(other) > 0 {
			r.note("problems %s are not re-created by the replay", strings.Join(other, " "))
		}
	}
}

// optOf is a nullable column's value as an event's Option.
func optOf[T any](p *T) events.Option[T] {
	if p == nil {
		return events.Option[T]{}
	}
	return events.Some(*p)
}

func derefString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// logAndTelemetryItems places the logs and telemetry snapshots.
func (r *replayer) logAndTelemetryItems(logs []schema.LogRow, tele []schema.TelemetryRow) error {
	for _, l := range logs {
		if l.Source != nil && *l.Source == schema.SourceEvent {
			if _, err := schema.ParseUnfinishedAction(l.Message); err == nil {
				continue // a batch of its own (planUnfinished)
			}
			// An event kept as a logs row: replayed as that event.
			ev, err := schema.ParseEventLog(r.sid, r.route, l.Message)
			if err == nil {
				rank := rankConnected
				if ev.Kind() == events.KindEpisodeCompleted {
					rank = rankEpisodeCompleted
				}
				r.items = append(r.items, item{slot: r.slotOf(l.Time, false), t: l.Time, rank: rank, ev: ev})
				continue
			}
			r.note("a logs row of source %s holds no event (%v); replayed as a log line", schema.SourceEvent, err)
		}
		lv, ok := parseLevel(l.Level)
		if !ok {
			return fmt.Errorf("session %q: %w: log level %q unknown", r.sid, ErrInconsistent, l.Level)
		}
		r.items = append(r.items, item{slot: r.slotOf(l.Time, false), t: l.Time, rank: rankLogTelemetry,
			ev: &events.Log{SessionID: r.sid, Route: r.logRoute(l.Lane), Level: lv, Message: l.Message, Source: l.Source}})
	}
	for i := 0; i < len(tele); {
		j := i
		for j < len(tele) && tele[j].Time.Equal(tele[i].Time) && tele[j].Horizon == tele[i].Horizon {
			j++
		}
		h, ok := parseHorizon(tele[i].Horizon)
		if !ok {
			return fmt.Errorf("session %q: %w: telemetry horizon %q unknown", r.sid, ErrInconsistent, tele[i].Horizon)
		}
		snap := events.Snapshot{Horizon: h, Rows: make([]events.TelemetryRow, 0, j-i)}
		for _, t := range tele[i:j] {
			k, ok := parseMetricKind(t.Kind)
			if !ok {
				return fmt.Errorf("session %q: %w: telemetry kind %q unknown", r.sid, ErrInconsistent, t.Kind)
			}
			snap.Rows = append(snap.Rows, events.TelemetryRow{Op: t.Op, Component: t.Component, Metric: t.Metric, Kind: k,
				Count: uint64(t.Count), Avg: t.Avg, P50: t.P50, P95: t.P95, P99: t.P99})
		}
		r.items = append(r.items, item{slot: r.slotOf(tele[i].Time, false), t: tele[i].Time, rank: rankLogTelemetry,
			ev: &events.TelemetrySnapshot{SessionID: r.sid, Route: r.route, Snapshot: snap}})
		i = j
	}
	return nil
}

func parseLevel(s string) (events.LogLevel, bool) {
	for _, l := range []events.LogLevel{events.LogDebug, events.LogInfo, events.LogWarn, events.LogError} {
		if l.String() == s {
			return l, true
		}
	}
	return 0, false
}

func parseHorizon(s string) (events.TelemetryHorizon, bool) {
	for _, h := range []events.TelemetryHorizon{events.HorizonWindow, events.HorizonSession} {
		if h.String() == s {
			return h, true
		}
	}
	return 0, false
}

func parseMetricKind(s string) (events.MetricKind, bool) {
	for _, k := range []events.MetricKind{events.MetricDurationMs, events.MetricBytes, events.MetricCount} {
		if k.String() == s {
			return k, true
		}
	}
	return 0, false
}

// zeroLeaves is the zero value of a space: zero bytes for fixed leaves,
// empty text.
func zeroLeaves(l *schema.Layout) [][]byte {
	out := make([][]byte, len(l.Leaves))
	for i, lf := range l.Leaves {
		if lf.Fixed() {
			out[i] = make([]byte, lf.Stride)
		} else {
			out[i] = []byte{}
		}
	}
	return out
}

// run emits everything in order.
func (r *replayer) run(logs []schema.LogRow, tele []schema.TelemetryRow) error {
	if err := r.logAndTelemetryItems(logs, tele); err != nil {
		return err
	}
	for i := range r.items {
		r.items[i].seq = i
	}
	// Within a slot: by time, then rank, then plan order. The session's
	// closing event sorts after every episode event and hidden batch of the
	// last slot, whatever their times; logs and telemetry by time.
	closing := func(it *item) bool { return it.rank == rankSessionEnded || it.rank == rankSessionFailed }
	var endT time.Time
	for i := range r.items {
		it := &r.items[i]
		it.sortT = it.t
		if it.slot == len(r.batches) && (it.ep != nil || it.hidden > 0) && it.t.After(endT) {
			endT = it.t
		}
	}
	for i := range r.items {
		if it := &r.items[i]; closing(it) && endT.After(it.t) {
			it.sortT = endT
		}
	}
	sort.SliceStable(r.items, func(i, j int) bool {
		a, b := &r.items[i], &r.items[j]
		if a.slot != b.slot {
			return a.slot < b.slot
		}
		if !a.sortT.Equal(b.sortT) {
			return a.sortT.Before(b.sortT)
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.rank == rankEpisodeCompleted && a.ep != nil && b.ep != nil && a.ep.row.EnvIndex != b.ep.row.EnvIndex {
			// Completions at one time come in lane order (both rlmesh
			// orders report a step's completions so).
			return a.ep.row.EnvIndex < b.ep.row.EnvIndex
		}
		return a.seq < b.seq
	})
	r.laneBuf = make([][][]byte, r.n)
	r.idBuf = make([]string, r.n)
	r.ridBuf = make([]string, r.n)
	r.rewards = make([]float64, r.n)
	k := 0
	for bi := 0; bi <= len(r.batches); bi++ {
		for ; k < len(r.items) && r.items[k].slot == bi; k++ {
			it := &r.items[k]
			if closing(it) {
				// Terminal observations still due go out before the end.
				if err := r.emitObservation(nil); err != nil {
					return err
				}
			}
			if err := r.emitItem(it); err != nil {
				return err
			}
		}
		if bi < len(r.batches) {
			if err := r.emitBatch(r.batches[bi], bi == len(r.batches)-1); err != nil {
				return err
			}
		}
	}
	if r.surplus > 0 {
		r.note("%d steps of surplus episodes (rlmesh 0.1) could not be placed on lanes without an episode; the replayed session's surplus_steps will differ", r.surplus)
	}
	return nil
}

func (r *replayer) send(ev events.Event, t time.Time) error {
	r.rep.Events++
	return r.emit(ev, t)
}

func (r *replayer) emitItem(it *item) error {
	if it.hidden > 0 {
		return r.emitHidden(it.hidden, it.hstep, it.t)
	}
	if it.roll != nil {
		return r.emitLaneRoll(it.roll, it.t)
	}
	switch it.ev.(type) {
	case *events.EpisodeStarted:
		r.lastStarted[r.laneOf(it.ep)] = it.ep
	case *events.EpisodeCompleted:
		if it.ep == nil {
			// A repeated completion kept in the logs table.
			break
		}
		it.ep.completed = true
		if it.ep.row.FinalObservationBlob != nil && !it.ep.finalQueued && !it.ep.finalSent {
			lane := r.laneOf(it.ep)
			if r.pendingFinal[lane] != nil {
				// Two terminal observations due on one lane: the first
				// goes out now.
				if err := r.emitObservation(nil); err != nil {
					return err
				}
			}
			r.pendingFinal[lane] = it.ep
		}
	}
	return r.send(it.ev, it.t)
}

// emitObservation emits one ObservationEmitted: the batch rows'
// observations (b may be nil) and the pending terminal observations. A
// lane with both gets its terminal observation in an event of its own
// first.
func (r *replayer) emitObservation(b *replayBatch) error {
	if r.laneServed {
		for lane := range r.pendingFinal {
			if err := r.emitLaneFinal(int32(lane)); err != nil {
				return err
			}
		}
		return nil
	}
	conflict := false
	has := false
	for _, p := range r.pendingFinal {
		has = has || p != nil
	}
	if b != nil {
		for _, lr := range b.rows {
			if lr.hasObs {
				has = true
				conflict = conflict || r.pendingFinal[lr.lane] != nil
			}
		}
	}
	if !has {
		return nil
	}
	if conflict {
		if err := r.emitObservation(nil); err != nil {
			return err
		}
	}
	if r.spaces.Observation == nil {
		return fmt.Errorf("session %q has observations but no observation space in its files' metadata; it cannot be replayed", r.sid)
	}
	eps := make([]*replayEpisode, r.n)
	lanes := r.laneBuf
	for i := range lanes {
		lanes[i] = r.zeroObs
		r.idBuf[i], r.ridBuf[i] = "", ""
	}
	var raw [][][]byte // the raw observation's lanes, once a row has one
	var infos []byte   // the observation's infos: the first row's that has any
	var infosOf *laneRow
	var t time.Time
	isReset := false
	var step int64
	for lane, p := range r.pendingFinal {
		if p == nil {
			continue
		}
		leaves, err := blob.Decode(p.row.FinalObservationBlob)
		if err != nil {
			return fmt.Errorf("session %q episode %s: %w: final_observation_blob: %w", r.sid, p.rid, ErrInconsistent, err)
		}
		lanes[lane], eps[lane] = leaves, p
		r.pendingFinal[lane] = nil
		at := p.row.EndedAt
		if p.finalQueued {
			at = &p.finalAt
		}
		if at != nil && at.After(t) {
			t = *at
		}
	}
	if b != nil {
		t = b.t
		for _, lr := range b.rows {
			if !lr.hasObs {
				continue
			}
			leaves, err := r.observationOf(lr)
			if err != nil {
				return err
			}
			lanes[lr.lane], eps[lr.lane] = leaves, lr.ep
			if rl, err := r.rawOf(lr, true); err != nil {
				return err
			} else if rl != nil {
				if raw == nil {
					raw = make([][][]byte, r.n)
				}
				raw[lr.lane] = rl
			}
			isReset = isReset || lr.step == 0
			if infos == nil && lr.obsInfos != nil {
				infos, infosOf = lr.obsInfos, &lr
			}
			if lr.lane == 0 {
				step = lr.step
			}
		}
	}
	for i, ep := range eps {
		if ep != nil {
			r.idBuf[i], r.ridBuf[i] = ep.row.EpisodeID, ep.rid
		}
	}
	rawSlabs, err := r.joinRaw(r.spaces.Observation, raw, lanes)
	if err != nil {
		return err
	}
	slabs, err := blob.JoinLanesLayout(r.spaces.Observation, lanes)
	if err != nil {
		return fmt.Errorf("session %q: %w: observation lanes do not join: %w", r.sid, ErrInconsistent, err)
	}
	oe := &events.ObservationEmitted{SessionID: r.sid, Route: r.route, EpisodeID: r.idBuf[0], EpisodeRecordID: r.ridBuf[0],
		EpisodeIDs: r.idBuf, EpisodeRecordIDs: r.ridBuf, Step: step, IsReset: isReset, NumEnvs: uint32(r.n),
		ObservationSpace: r.spaces.Observation.Spec, Observation: slabs, RawObservation: rawSlabs}
	if infos != nil {
		if m, err := ParseFinalInfo(string(infos)); err == nil {
			oe.Infos = m
		} else {
			r.note("episode %s step %d: observation_infos: %v; replayed without them", infosOf.ep.rid, infosOf.step, err)
		}
	}
	return r.send(oe, t)
}

// rawOf returns a batch row's raw observation (obs) or raw action
// leaves, nil when the row kept none (equal to the transformed one).
func (r *replayer) rawOf(lr laneRow, obs bool) ([][]byte, error) {
	if lr.logged {
		return nil, nil
	}
	s, err := r.stepOf(lr)
	if err != nil {
		return nil, err
	}
	b := s.Step().RawActionBlob
	if obs {
		b = s.Step().RawObservationBlob
	}
	if b == nil {
		return nil, nil
	}
	leaves, err := blob.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("session %q episode %s: %w: raw payload of step %d: %w", r.sid, lr.ep.rid, ErrInconsistent, lr.step, err)
	}
	return leaves, nil
}

// joinRaw joins the raw payload's lanes (raw, nil when no lane has one),
// each lane without one taking its transformed leaves.
func (r *replayer) joinRaw(l *schema.Layout, raw, lanes [][][]byte) ([][]byte, error) {
	if raw == nil {
		return nil, nil
	}
	for i := range raw {
		if raw[i] == nil {
			raw[i] = lanes[i]
		}
	}
	slabs, err := blob.JoinLanesLayout(l, raw)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w: raw payload lanes do not join: %w", r.sid, ErrInconsistent, err)
	}
	return slabs, nil
}

// stepOf advances the row's episode iterator to the row (opening it at its
// first row) and returns the iterator positioned on it.
func (r *replayer) stepOf(lr laneRow) (*Steps, error) {
	ep := lr.ep
	if ep.iter == nil {
		st, err := r.d.Steps(r.rec, ep.rid)
		if err != nil {
			return nil, err
		}
		ep.iter = st
		if !st.Next() {
			return nil, r.stepsChanged(ep, st.Err())
		}
	}
	if ep.iter.Step().Step != lr.step {
		if !ep.iter.Next() {
			return nil, r.stepsChanged(ep, ep.iter.Err())
		}
	}
	if ep.iter.Step().Step != lr.step {
		return nil, r.stepsChanged(ep, nil)
	}
	return ep.iter, nil
}

func (r *replayer) stepsChanged(ep *replayEpisode, err error) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("session %q episode %s: its steps changed while replaying; run the replay again", r.sid, ep.rid)
}

// emitBatch emits a batch's observation, action and rewards.
func (r *replayer) emitBatch(b *replayBatch, last bool) error {
	if r.laneServed {
		return r.emitLaneStep(b, last)
	}
	r.rep.Batches++
	if err := r.emitObservation(b); err != nil {
		return err
	}
	lanes := r.laneBuf
	if len(r.roll) != r.n {
		r.roll = make([]bool, r.n)
	}
	for i := range lanes {
		lanes[i] = r.zeroAct
		r.idBuf[i], r.ridBuf[i] = "", ""
		r.rewards[i] = 0
		r.roll[i] = false
		// A lane without a row names its completed episode, as under
		// next-step autoreset; the recorder drops the step. In rlmesh
		// 0.1 it is the roll step of an episode that ended on the step
		// before, whose completion follows it; no lane names a completed
		// episode (the recorder takes that for a repeat).
		if ep := r.lastStarted[i]; ep != nil && r.names(ep) {
			r.idBuf[i], r.ridBuf[i] = ep.row.EpisodeID, ep.rid
			r.roll[i] = r.v01 && ep.ended && !ep.completed
		}
	}
	r.surplusLanes(b)
	var raw [][][]byte
	for _, lr := range b.rows {
		leaves, err := r.actionOf(lr)
		if err != nil {
			return err
		}
		if leaves != nil {
			lanes[lr.lane] = leaves
		}
		if rl, err := r.rawOf(lr, false); err != nil {
			return err
		} else if rl != nil {
			if raw == nil {
				raw = make([][][]byte, r.n)
			}
			raw[lr.lane] = rl
		}
		r.idBuf[lr.lane], r.ridBuf[lr.lane] = lr.ep.row.EpisodeID, lr.ep.rid
		r.rewards[lr.lane] = lr.reward
	}
	rawSlabs, err := r.joinRaw(r.spaces.Action, raw, lanes)
	if err != nil {
		return err
	}
	slabs, err := blob.JoinLanesLayout(r.spaces.Action, lanes)
	if err != nil {
		return fmt.Errorf("session %q: %w: action lanes do not join: %w", r.sid, ErrInconsistent, err)
	}
	if err := r.send(&events.ActionReceived{SessionID: r.sid, Route: r.route, EpisodeID: r.idBuf[0], EpisodeRecordID: r.ridBuf[0],
		EpisodeIDs: r.idBuf, EpisodeRecordIDs: r.ridBuf, Step: b.sstep, ActionSpace: r.spaces.Action.Spec, Action: slabs,
		RawAction: rawSlabs}, b.t); err != nil {
		return err
	}
	for _, lr := range b.rows {
		if !lr.logged && lr.step == lr.ep.rows-1 {
			lr.ep.iter.Close()
			lr.ep.iter = nil
		}
	}
	if b.unfinished || last && r.legacyUnfinished() {
		return nil
	}
	sc := &events.StepCompleted{SessionID: r.sid, Route: r.route, EpisodeID: r.idBuf[0], EpisodeRecordID: r.ridBuf[0],
		Step: b.sstep, Rewards: r.rewards}
	if r.v01 {
		r.stepFlags(sc, b)
	}
	if err := r.send(sc, b.t); err != nil {
		return err
	}
	if r.v01 {
		return r.queueFinals(b)
	}
	return nil
}

// names reports whether a lane without a row names ep, its latest
// episode: rc.5 names it once completed (its next-step autoreset step),
// 0.1 from the step its flags ended it until its completion (its roll
// step).
func (r *replayer) names(ep *replayEpisode) bool {
	if r.v01 {
		return ep.ended && !ep.completed
	}
	return ep.completed
}

// surplusLanes names, in a recording of rlmesh 0.1 that counted surplus
// steps, the lanes of batch b without a row and without an episode of
// their own (none started on the lane yet, or its last one completed and
// rolled) as a surplus episode's (an id no episode has), so that the
// recorder counts them in surplus_steps again, until as many as the
// session counted are placed. A roll lane still names its ended episode.
func (r *replayer) surplusLanes(b *replayBatch) {
	if r.surplus <= 0 {
		return
	}
	for i := range r.n {
		if r.surplus <= 0 {
			return
		}
		if b.hasLane(int32(i)) || r.roll[i] {
			continue
		}
		if ep := r.lastStarted[i]; ep != nil && !ep.completed {
			continue
		}
		r.idBuf[i], r.ridBuf[i] = surplusID(i), surplusID(i)
		r.surplus--
	}
}

// surplusID is the id replay gives lane's surplus episodes: no recorded
// episode's record id (those are ep-NNNNNN).
func surplusID(lane int) string { return fmt.Sprintf("surplus-lane-%d", lane) }

// queueFinals queues (rlmesh 0.1) the terminal observations of the
// episodes batch b ended: 0.1 sends one right after the step that ended
// the episode, before its roll step and its deferred completion, so an
// episode that never completed (the session failed at its roll step)
// has one too.
func (r *replayer) queueFinals(b *replayBatch) error {
	for _, lr := range b.rows {
		ep := lr.ep
		if lr.logged || !ep.ended || ep.finalQueued || ep.row.FinalObservationBlob == nil {
			continue
		}
		if r.pendingFinal[lr.lane] != nil {
			if err := r.emitObservation(nil); err != nil {
				return err
			}
		}
		ep.finalQueued, ep.finalAt = true, b.t
		r.pendingFinal[lr.lane] = ep
	}
	return nil
}

// stepFlags sets what a StepCompleted of rlmesh 0.1 carries beyond the
// rewards: per-lane flags, the step's times and its infos.
func (r *replayer) stepFlags(sc *events.StepCompleted, b *replayBatch) {
	sc.Terminated, sc.Truncated = make([]bool, r.n), make([]bool, r.n)
	sc.AutoresetRoll = append([]bool(nil), r.roll...)
	for _, lr := range b.rows {
		if lr.logged {
			continue
		}
		if lr.isLast {
			sc.Terminated[lr.lane], sc.Truncated[lr.lane] = lr.terminated, lr.truncated
			lr.ep.ended = lr.terminated || lr.truncated
		}
		if lr.hasPredict {
			sc.PredictMs = events.Some(lr.predictMs)
		}
		if lr.hasStep {
			sc.StepMs = events.Some(lr.stepMs)
		}
		if lr.infos != nil && sc.Infos == nil {
			if m, err := ParseFinalInfo(string(lr.infos)); err == nil {
				sc.Infos = m
			} else {
				r.note("episode %s step %d: infos: %v; replayed without them", lr.ep.rid, lr.step, err)
			}
		}
	}
}

// emitHidden emits an all-dropped batch of n lanes at step.
func (r *replayer) emitHidden(n int, step int64, t time.Time) error {
	if r.spaces.Action == nil {
		return nil
	}
	if err := r.emitObservation(nil); err != nil {
		return err
	}
	for n > 0 {
		k := min(n, blob.MaxLanes)
		n -= k
		r.rep.Batches++
		r.rep.HiddenBatches++
		lanes := make([][][]byte, k)
		ids := make([]string, k)
		rids := make([]string, k)
		for i := range lanes {
			lanes[i] = r.zeroAct
			if i < len(r.lastStarted) {
				if ep := r.lastStarted[i]; ep != nil && r.names(ep) {
					ids[i], rids[i] = ep.row.EpisodeID, ep.rid
				}
			}
		}
		slabs, err := blob.JoinLanesLayout(r.spaces.Action, lanes)
		if err != nil {
			return err
		}
		if err := r.send(&events.ActionReceived{SessionID: r.sid, Route: r.route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
			EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: step, ActionSpace: r.spaces.Action.Spec, Action: slabs}, t); err != nil {
			return err
		}
		if err := r.send(&events.StepCompleted{SessionID: r.sid, Route: r.route, EpisodeID: ids[0], EpisodeRecordID: rids[0],
			Rewards: make([]float64, k)}, t); err != nil {
			return err
		}
	}
	return nil
}

func (r *replayer) closeAll() {
	for _, ep := range r.eps {
		if ep.iter != nil {
			ep.iter.Close()
			ep.iter = nil
		}
	}
}

// RecorderClocked reports whether a replayed event's time is to be marked
// as a recorder's clock reading (the stream's recorder_clock field,
// recorder.RecordStamped), given its recording's clock column: every
// event of a recording whose clock is "recorder", and the SessionStarted
// of a "mixed" one (which events of it had their own time is not in the
// tables), so that recording the replayed stream again gives the same
// clock. Replay emits every event with its recorded time either way.
func RecorderClocked(clock string, ev events.Event) bool {
	switch clock {
	case schema.ClockRecorder:
		return true
	case schema.ClockMixed:
		return ev.Kind() == events.KindSessionStarted
	}
	return false
}
