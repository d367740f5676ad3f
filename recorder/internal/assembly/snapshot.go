package assembly

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"google.golang.org/protobuf/proto"
)

// A snapshot record (logrec.TypeSnapshot) holds the whole assembly state
// as of one log position: every session the assembler holds, with its open
// episodes' buffered rows. Recovery restores it and replays only the event
// records after that position, and the log before it can be removed
// (the recorder's checkpoint.go says when one is taken and when it may be relied on). Its
// body is a logrec.Snapshot (internal/logrec/snapshot.proto); this file
// converts the assembly state to it and back.
//
// A snapshot holds only open episodes: it is taken when no completed
// episode awaits finalisation, and a completed episode is in the state only
// until then. An open episode's rows are in the snapshot unless it streams
// rows to its steps file (those are in no durable file yet) or buffers more
// than inlineRowsMax: then the snapshot names the log position of its first
// event, the log is kept from there, and recovery rebuilds its rows by
// replaying the log from there to the snapshot (catchup.go).

// snapshotable reports whether the whole assembly state can be put in a
// snapshot now, and its approximate size: not while an episode awaits
// finalisation or streams rows to a steps file being written (those rows
// are only in the log until the file is durable).
func (a *Assembler) snapshotable() (size int, ok bool) {
	for _, s := range a.sessions {
		if len(s.toFinalize) > 0 {
			return 0, false
		}
		size += 256 + len(s.done)*16 + len(s.logs)*128 + len(s.telemetry)*160
		for _, ep := range s.episodes {
			size += 128
			if !external(ep) {
				size += len(ep.arena) + len(ep.rows)*48
			}
		}
		for _, l := range s.lanes {
			size += 32 + len(l.obs) + len(l.rawObs) + len(l.obsInfos)
		}
		size += len(s.byLane) * 32
	}
	return size, true
}

// inlineRowsMax is the most buffered row bytes an open episode puts in a
// snapshot; a larger one is rebuilt from the log (see external).
const inlineRowsMax = 64 << 10

// external reports whether a snapshot leaves ep's rows to be rebuilt from
// the log: rows streamed to a steps file not yet durable are only there,
// and a large buffer would make snapshots large and slow.
func external(ep *episode) bool {
	return ep.flushedRows > 0 || len(ep.arena) > inlineRowsMax
}

// oldestOpen returns the log position of the first event of the oldest
// open episode (0: none). The log is kept from there: a later snapshot may
// leave any episode open now to the log, even one an earlier snapshot held
// with its rows.
func (a *Assembler) oldestOpen() uint64 {
	var from uint64
	for _, s := range a.sessions {
		for _, ep := range s.episodes {
			if from == 0 || ep.firstPos < from {
				from = ep.firstPos
			}
		}
	}
	return from
}

// appendSnapshot appends a snapshot record of every session in a, as of
// log position asOf.
func (a *Assembler) appendSnapshot(dst []byte, asOf uint64) ([]byte, error) {
	snap := &logrec.Snapshot{AsOf: asOf}
	for _, s := range a.sortedSessions() {
		m, err := snapshotSession(s)
		if err != nil {
			return nil, fmt.Errorf("snapshot session %s: %w", s.id, err)
		}
		snap.Sessions = append(snap.Sessions, m)
	}
	return logrec.AppendSnapshot(dst, snap)
}

// snapshotSession is s as a snapshot holds it. Its byte fields alias s's
// buffers: it must be encoded before s changes.
func snapshotSession(s *session) (*logrec.Session, error) {
	m := &logrec.Session{
		Id: []byte(s.id), EnvId: []byte(s.envID), Status: []byte(s.status), Reason: []byte(s.reason),
		Started:   s.started,
		StartedAt: logrec.UnixNanos(s.startedAt), EndedAt: logrec.UnixNanos(s.endedAt), LastAt: logrec.UnixNanos(s.lastAt),
		TotalSteps: s.totalSteps, TotalEpisodes: s.totalEpisodes, HasTotals: s.hasTotals,
		Ended: s.ended, FinalTelemetry: s.finalTelemetry, SawFinalTelemetry: s.sawFinalTelemetry,
		HavePending:      s.whole.have,
		EpisodesRecorded: s.episodesRecorded, StepsRecorded: s.stepsRecorded, DroppedSteps: s.droppedSteps,
		Writes: int64(s.writes), NumEnvs: int64(s.numEnvs),
		RowDone: s.rowDone, LogRows: s.logRows, TelemetryRows: s.teleRows,
		Sequence: s.seq, Clocks: uint32(s.clocks),
		RunNonce: s.run.nonce, ChainEvents: s.run.chain.Events, ContentChain: s.run.chain.Hash,
		V01: s.v01, HeldProblems: s.heldProblems, HeldSteps: s.heldSteps, SurplusSteps: s.surplusSteps,
	}
	m.Route = logrec.RouteOf(s.route)
	for _, ep := range sortedOpen(s) {
		e, err := snapshotEpisode(ep)
		if err != nil {
			return nil, fmt.Errorf("episode %s: %w", ep.recordID, err)
		}
		m.Episodes = append(m.Episodes, e)
	}
	for rid := range s.done {
		m.Done = append(m.Done, []byte(rid))
	}
	slices.SortFunc(m.Done, bytes.Compare)
	for _, l := range s.lanes {
		ml := &logrec.Lane{RecordId: []byte(l.obsRecord)}
		if l.hasObs {
			ml.Observation = logrec.Present(l.obs)
			if l.hasRawObs {
				ml.RawObservation = logrec.Present(l.rawObs)
			}
			if l.hasObsInfos {
				ml.ObservationInfos = logrec.Present(l.obsInfos)
			}
		}
		m.Lanes = append(m.Lanes, ml)
	}
	if s.whole.have {
		m.Pending = pendingIDs(s.whole.pending)
		if slices.Contains(s.whole.rolled, true) {
			m.Rolled = s.whole.rolled
		}
	}
	for i := range s.byLane {
		g := &s.byLane[i]
		mg := &logrec.StepGroup{HavePending: g.have}
		if g.have {
			mg.Pending = pendingIDs(g.pending)
			if slices.Contains(g.rolled, true) {
				mg.Rolled = g.rolled
			}
		}
		m.LaneGroups = append(m.LaneGroups, mg)
	}
	var err error
	if m.ObservationSpace, err = logrec.SpecBytes(s.obsSpec); err != nil {
		return nil, err
	}
	if m.ActionSpace, err = logrec.SpecBytes(s.actSpec); err != nil {
		return nil, err
	}
	for k, n := range s.problems {
		m.Problems = append(m.Problems, &logrec.Problem{Kind: []byte(k), Count: n})
	}
	slices.SortFunc(m.Problems, func(a, b *logrec.Problem) int { return bytes.Compare(a.Kind, b.Kind) })
	for _, l := range s.logs {
		ml := logrec.LogOf(l.time, l.level, l.message, l.source)
		ml.Lane = l.lane
		m.Logs = append(m.Logs, ml)
	}
	for _, t := range s.telemetry {
		m.Telemetry = append(m.Telemetry, logrec.TelemetryOf(t.time, t.horizon, t.row))
	}
	return m, nil
}

// pendingIDs is a step group's pending episodes as their record ids ("":
// a lane whose step was dropped).
func pendingIDs(pending []*episode) [][]byte {
	out := make([][]byte, len(pending))
	for i, ep := range pending {
		out[i] = []byte{}
		if ep != nil {
			out[i] = []byte(ep.recordID)
		}
	}
	return out
}

// restorePending is the step group a snapshot's pending ids, have and
// rolled flags describe, its episodes looked up in s.
func restorePending(s *session, ids [][]byte, have bool, rolled []bool) (stepGroup, error) {
	g := stepGroup{have: have}
	if !have {
		return g, nil
	}
	if len(rolled) != 0 && len(rolled) != len(ids) {
		return g, fmt.Errorf("%w: session %s: %d roll flags for %d pending lanes", logrec.ErrSnapshot, s.id, len(rolled), len(ids))
	}
	g.pending = make([]*episode, len(ids))
	g.rolled = make([]bool, len(ids))
	copy(g.rolled, rolled)
	for i, rid := range ids {
		if len(rid) == 0 {
			continue
		}
		if g.pending[i] = s.episodes[string(rid)]; g.pending[i] == nil {
			return g, fmt.Errorf("%w: session %s: pending step of %q, which is not open", logrec.ErrSnapshot, s.id, rid)
		}
	}
	return g, nil
}

// optionPtr is an Option as a snapshot's optional field.
func optionPtr[T any](o events.Option[T]) *T {
	if v, ok := o.Get(); ok {
		return &v
	}
	return nil
}

// optionOf is a snapshot's optional field as an Option.
func optionOf[T any](p *T) events.Option[T] {
	if p == nil {
		return events.Option[T]{}
	}
	return events.Some(*p)
}

func snapshotEpisode(ep *episode) (*logrec.Episode, error) {
	if ep.completed {
		return nil, fmt.Errorf("episode %s is completed: snapshots hold open episodes only", ep.recordID)
	}
	m := &logrec.Episode{Id: []byte(ep.id), RecordId: []byte(ep.recordID), Index: ep.index, EnvIndex: int64(ep.envIndex),
		AutoReset: ep.autoReset, StartedAt: logrec.UnixNanos(ep.startedAt), LastAt: logrec.UnixNanos(ep.lastAt),
		NextStep: ep.nextStep, StepsRecorded: ep.stepsRecorded, RewardSum: ep.rewardSum,
		Seed: optionPtr(ep.seed), TrialIndex: optionPtr(ep.trial), RouteLane: optionPtr(ep.route),
		Flagged: ep.flagged, FlagEnded: ep.flagEnded, FlagTerminated: ep.flagTerminated, FlagTruncated: ep.flagTruncated}
	if ep.finalObs != nil {
		m.FinalObservation = logrec.Present(ep.finalObs)
	}
	if external(ep) {
		from := ep.firstPos
		m.ReplayFrom = &from
		return m, nil
	}
	rows := make([]logrec.Row, len(ep.rows))
	m.Rows = make([]*logrec.Row, len(ep.rows))
	for i, r := range ep.rows {
		mr := &rows[i]
		mr.Step, mr.SessionStep = r.step, r.sessionStep
		if r.obs.set() {
			mr.Observation = logrec.Present(r.obs.bytes(ep.arena))
		}
		mr.Action = r.act.bytes(ep.arena)
		mr.Reward = r.reward
		mr.Flags = logrec.RowFlags(r.isFirst, r.isLast, r.terminated, r.truncated)
		mr.RecordedAt = r.recordedAt.time().UnixNano()
		if r.infos.set() {
			mr.Infos = logrec.Present(r.infos.bytes(ep.arena))
		}
		if r.rawObs.set() {
			mr.RawObservation = logrec.Present(r.rawObs.bytes(ep.arena))
		}
		if r.rawAct.set() {
			mr.RawAction = logrec.Present(r.rawAct.bytes(ep.arena))
		}
		if r.obsInfos.set() {
			mr.ObservationInfos = logrec.Present(r.obsInfos.bytes(ep.arena))
		}
		if r.hasPredict {
			mr.PredictMs = &r.predictMs
		}
		if r.hasStep {
			mr.StepMs = &r.stepMs
		}
		m.Rows[i] = mr
	}
	return m, nil
}

// parseSnapshot decodes a snapshot record's body (after its type byte).
// The sessions it returns own copies of every byte they hold.
func parseSnapshot(b []byte) (asOf uint64, sessions []*session, err error) {
	snap, err := logrec.ParseSnapshot(b)
	if err != nil {
		return 0, nil, err
	}
	for _, m := range snap.Sessions {
		s, err := restoreSession(m)
		if err != nil {
			return 0, nil, err
		}
		sessions = append(sessions, s)
	}
	return snap.AsOf, sessions, nil
}

// restoreSession is the session a snapshot's m holds.
func restoreSession(m *logrec.Session) (*session, error) {
	s := &session{
		id: string(m.Id), envID: string(m.EnvId), status: statusOpen, reason: string(m.Reason),
		started:   m.Started,
		startedAt: logrec.TimeOf(m.StartedAt), endedAt: logrec.TimeOf(m.EndedAt), lastAt: logrec.TimeOf(m.LastAt),
		totalSteps: m.TotalSteps, totalEpisodes: m.TotalEpisodes, hasTotals: m.HasTotals,
		ended: m.Ended, finalTelemetry: m.FinalTelemetry, sawFinalTelemetry: m.SawFinalTelemetry,
		episodesRecorded: m.EpisodesRecorded, stepsRecorded: m.StepsRecorded, droppedSteps: m.DroppedSteps,
		writes: int(m.Writes), numEnvs: int32(m.NumEnvs),
		rowDone: m.RowDone, logRows: m.LogRows, teleRows: m.TelemetryRows,
		seq: m.Sequence,
		run: runState{nonce: m.RunNonce, chain: runid.Chain{Events: m.ChainEvents, Hash: m.ContentChain}},
		v01: m.V01, heldProblems: m.HeldProblems, heldSteps: m.HeldSteps, surplusSteps: m.SurplusSteps,
		clocks:   uint8(m.Clocks & uint32(clockEvent|clockRecorder)),
		episodes: make(map[string]*episode, len(m.Episodes)),
		done:     make(map[string]struct{}, len(m.Done)),
		problems: make(map[problemKind]int64, len(m.Problems)),
	}
	if len(m.Status) > 0 {
		s.status = string(m.Status)
	}
	s.route = m.Route.Context()
	for _, e := range m.Episodes {
		ep, err := restoreEpisode(e)
		if err != nil {
			return nil, err
		}
		s.episodes[ep.recordID] = ep
	}
	for _, rid := range m.Done {
		s.done[string(rid)] = struct{}{}
	}
	for _, l := range m.Lanes {
		s.lanes = append(s.lanes, lane{obs: l.Observation, hasObs: l.Observation != nil, obsRecord: string(l.RecordId),
			rawObs: l.RawObservation, hasRawObs: l.Observation != nil && l.RawObservation != nil,
			obsInfos: l.ObservationInfos, hasObsInfos: l.Observation != nil && l.ObservationInfos != nil})
	}
	for _, p := range m.Problems {
		s.problems[problemKind(p.Kind)] = p.Count
	}
	for _, l := range m.Logs {
		row := logRow{time: logrec.TimeOf(l.Time), level: string(l.Level), message: string(l.Message), source: l.SourceOf(), lane: l.Lane}
		s.logs = append(s.logs, row)
		s.logBytes += logRowBytes + len(row.message)
	}
	for _, t := range m.Telemetry {
		s.telemetry = append(s.telemetry, telemetryRow{time: logrec.TimeOf(t.Time), horizon: string(t.Horizon), row: t.Row()})
	}
	s.logBytes += logRowBytes * len(s.telemetry)
	var err error
	if s.whole, err = restorePending(s, m.Pending, m.HavePending, m.Rolled); err != nil {
		return nil, err
	}
	if len(m.LaneGroups) > maxLanes {
		return nil, fmt.Errorf("%w: session %s: %d lane groups", logrec.ErrSnapshot, s.id, len(m.LaneGroups))
	}
	for _, g := range m.LaneGroups {
		sg, err := restorePending(s, g.Pending, g.HavePending, g.Rolled)
		if err != nil {
			return nil, err
		}
		s.byLane = append(s.byLane, sg)
	}
	for _, w := range []struct {
		wire []byte
		obs  bool
	}{{m.ObservationSpace, true}, {m.ActionSpace, false}} {
		if w.wire == nil {
			continue
		}
		spec := &spacesv1.SpaceSpec{}
		if err := proto.Unmarshal(w.wire, spec); err != nil {
			return nil, fmt.Errorf("%w: session %s: space: %v", logrec.ErrSnapshot, s.id, err)
		}
		if _, ok := (&Assembler{out: discard{}}).layoutFor(s, spec, w.obs); !ok {
			return nil, fmt.Errorf("%w: session %s: a space that does not compile", logrec.ErrSnapshot, s.id)
		}
	}
	return s, nil
}

// restoreEpisode is the open episode a snapshot's m holds.
func restoreEpisode(m *logrec.Episode) (*episode, error) {
	ep := &episode{id: string(m.Id), recordID: string(m.RecordId), index: m.Index, envIndex: int32(m.EnvIndex),
		autoReset: m.AutoReset, startedAt: logrec.TimeOf(m.StartedAt), lastAt: logrec.TimeOf(m.LastAt),
		nextStep: m.NextStep, stepsRecorded: m.StepsRecorded, rewardSum: m.RewardSum,
		seed: optionOf(m.Seed), trial: optionOf(m.TrialIndex), route: optionOf(m.RouteLane),
		flagged: m.Flagged, flagEnded: m.FlagEnded, flagTerminated: m.FlagTerminated, flagTruncated: m.FlagTruncated,
		finalObs: m.FinalObservation}
	if m.ReplayFrom != nil {
		if ep.replayFrom = *m.ReplayFrom; ep.replayFrom == 0 {
			return nil, fmt.Errorf("%w: episode replayed from position 0", logrec.ErrSnapshot)
		}
	}
	size := 0
	for _, r := range m.Rows {
		size += len(r.Observation) + len(r.Action) + len(r.Infos) + len(r.RawObservation) + len(r.RawAction) + len(r.ObservationInfos)
	}
	if size > 0 {
		ep.arena = make([]byte, 0, size)
	}
	for _, r := range m.Rows {
		row := stepRow{step: r.Step, sessionStep: r.SessionStep, reward: r.Reward,
			isFirst: r.Flags&logrec.RowFirst != 0, isLast: r.Flags&logrec.RowLast != 0,
			terminated: r.Flags&logrec.RowTerminated != 0, truncated: r.Flags&logrec.RowTruncated != 0,
			recordedAt: stampOf(time.Unix(0, r.RecordedAt).UTC())}
		if r.Observation != nil {
			row.obs = appendRef(ep, r.Observation)
		}
		row.act = appendRef(ep, r.Action)
		if r.Infos != nil {
			row.infos = appendRef(ep, r.Infos)
		}
		if r.RawObservation != nil {
			row.rawObs = appendRef(ep, r.RawObservation)
		}
		if r.RawAction != nil {
			row.rawAct = appendRef(ep, r.RawAction)
		}
		if r.ObservationInfos != nil {
			row.obsInfos = appendRef(ep, r.ObservationInfos)
		}
		if r.PredictMs != nil {
			row.predictMs, row.hasPredict = *r.PredictMs, true
		}
		if r.StepMs != nil {
			row.stepMs, row.hasStep = *r.StepMs, true
		}
		ep.rows = append(ep.rows, row)
	}
	if ep.recordID == "" {
		return nil, fmt.Errorf("%w: an episode without a record id", logrec.ErrSnapshot)
	}
	return ep, nil
}

// restore makes sessions, decoded from a snapshot as of position from-1,
// the assembler's state; from is the first log position they are built
// from on. Episodes whose rows the snapshot left to the log keep their
// replayFrom until the CatchUp rebuilds them.
func (a *Assembler) restore(sessions []*session, from uint64) {
	a.last = nil
	for _, s := range sessions {
		s.firstPos = from
		for _, ep := range s.episodes {
			ep.firstPos = from
			if ep.replayFrom != 0 {
				ep.firstPos = ep.replayFrom
			}
			a.open++
		}
		a.sessions[s.rec()] = s
	}
}
