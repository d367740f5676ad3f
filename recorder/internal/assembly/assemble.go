package assembly

import (
	"fmt"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/schema"
)

// The assembler turns one session's events into step rows and episode rows,
// following the recording semantics of the design contract:
//
//   - Per lane, the last observation emitted is the one the next action is
//     computed from.
//   - An ActionReceived opens one step row for every lane whose id names an
//     open episode; the following StepCompleted fills its reward. An action
//     that no StepCompleted followed is no step: its rows are taken back and
//     kept as logs rows (unfinished.go).
//   - An EpisodeCompleted marks that episode's last row and completes it; the
//     episode is finalised once the session's next observation has been seen
//     (under NEXT_STEP autoreset that observation carries the terminal
//     observation, kept as final_observation_blob) or the session ends.
//   - Anything that does not fit is counted in the session row and logged,
//     never silently dropped, and never stops the rest of the recording.
//
// The assembler does no I/O: finished episodes and sessions are handed to an
// Output (output.go) as values it owns.

// sessionFor returns the session of an event, creating it on first sight.
func (a *Assembler) sessionFor(ev events.Event, at time.Time, pos uint64) *session {
	id, route := ev.Header()
	if s := a.last; s != nil && s.id == id && s.route.EnvID == route.EnvID {
		s.lastAt = at
		return s
	}
	key := hive.Recording{SessionID: id, EnvID: route.EnvID}
	s := a.sessions[key]
	if s == nil {
		s = &session{
			id:        id,
			route:     route,
			status:    statusOpen,
			startedAt: at,
			episodes:  make(map[string]*episode),
			done:      make(map[string]struct{}),
			problems:  make(map[problemKind]int64),
			firstPos:  pos,
		}
		a.sessions[key] = s
		c := a.out.NewSession(key, ev.Kind() == events.KindTelemetrySnapshot || ev.Kind() == events.KindLog)
		s.writes = c.FirstWrite
		if c.Ended {
			s.ended, s.finalTelemetry, s.rowDone = true, true, true
		}
	}
	s.lastAt = at
	a.last = s
	return s
}

// apply folds one event into the state. at is the event's recording time
// and pos its log position.
func (a *Assembler) apply(ev events.Event, at time.Time, pos uint64) {
	a.applyClocked(ev, at, pos, false)
}

// applyClocked is apply of an event whose time is the recorder's own
// clock reading when recClock is set (or its log record says so).
func (a *Assembler) applyClocked(ev events.Event, at time.Time, pos uint64, recClock bool) {
	nonce, hash := logrec.RunOf(ev)
	ev, seq, logged := logrec.Unsequence(ev)
	s := a.sessionFor(ev, at, pos)
	s.seq = max(s.seq, seq)
	a.noteRun(s, seq, nonce, hash)
	if e, ok := ev.(*logrec.InvalidEvent); ok {
		// A message of the stream that was no valid event: counted, and
		// nothing of it applied.
		a.problem(s, probInvalidEvent, "%s; skipped", e.Detail)
		return
	}
	if recClock || logged {
		s.clocks |= clockRecorder
	} else {
		s.clocks |= clockEvent
	}
	if s.ended {
		// Only telemetry (the final snapshot, late window ones) and logs
		// are expected after a session's end; once its files are written
		// they go to further part files. Anything else is counted.
		switch e := ev.(type) {
		case *events.TelemetrySnapshot:
			a.telemetry(s, e, at)
			return
		case *events.Log:
			s.logs = append(s.logs, logRow{time: at, level: e.Level.String(), message: e.Message, source: e.Source, lane: routeLane(e.Route)})
			if s.finalTelemetry {
				a.sessionDone(s)
			}
			return
		}
		a.problem(s, probAfterEnd, "%s after the session ended", ev.Kind())
		return
	}
	if !s.started {
		a.notStarted(s, ev)
	}
	switch e := ev.(type) {
	case *events.EnvConnected, *events.ModelConnected, *events.RelayAdvisory:
		// No table of their own: kept as logs rows (schema.SourceEvent).
		a.eventLog(s, ev, at)
	case *events.SessionStarted:
		if s.started {
			a.problem(s, probDuplicateSession, "second SessionStarted")
			return
		}
		s.started = true
		s.startedAt = at
		s.envID = e.EnvID
		s.route = e.Route
	case *events.SessionEnded:
		s.totalSteps, s.totalEpisodes, s.hasTotals = e.TotalSteps, e.TotalEpisodes, true
		a.endSession(s, statusEnded, e.Reason, at)
		if s.sawFinalTelemetry {
			// The final snapshot came first (not the runtime's order, but
			// nothing else is to come).
			s.finalTelemetry = true
			a.sessionDone(s)
		}
	case *events.SessionFailed:
		a.endSession(s, statusFailed, e.Reason, at)
		// The final telemetry precedes SessionFailed.
		s.finalTelemetry = true
		a.sessionDone(s)
	case *events.Log:
		a.noteV01(s, e.Route)
		s.logs = append(s.logs, logRow{time: at, level: e.Level.String(), message: e.Message, source: e.Source, lane: routeLane(e.Route)})
		s.logBytes += logRowBytes + len(e.Message)
		a.logChunk(s)
	case *events.TelemetrySnapshot:
		a.telemetry(s, e, at)
		a.logChunk(s)
	case *events.EpisodeStarted:
		a.episodeStarted(s, e, at, pos)
	case *events.EpisodeCompleted:
		a.episodeCompleted(s, e, at)
	case *events.ActionReceived:
		a.actionReceived(s, e, at)
	case *events.StepCompleted:
		a.stepCompleted(s, e)
	case *events.ObservationEmitted:
		a.observationEmitted(s, e, at)
	}
}

// notStarted counts an event of a session that no SessionStarted opened
// (EnvConnected and ModelConnected may come first). The event is applied
// all the same. Every such event is counted; only the first is logged, as
// a session whose start is missing from the stream has nothing else.
func (a *Assembler) notStarted(s *session, ev events.Event) {
	switch ev.(type) {
	case *events.SessionStarted, *events.EnvConnected, *events.ModelConnected:
		return
	}
	s.problems[probNotStarted]++
	a.problems.Add(1)
	if s.problems[probNotStarted] == 1 {
		a.out.Problem(s.rec(), string(probNotStarted), fmt.Sprintf("%s before any SessionStarted of the session; it is recorded, "+
			"and it and every later event before a SessionStarted are counted in the session row but not logged", ev.Kind()))
	}
}

// laneOutOfRange counts an episode whose env_index is not a lane of the
// session: negative, or N or more once N is known.
func (a *Assembler) laneOutOfRange(s *session, kind events.Kind, rid string, envIndex int32) {
	if envIndex < 0 || (s.numEnvs > 0 && envIndex >= s.numEnvs) {
		a.problem(s, probLaneOutOfRange, "%s for %q: env_index %d is not a lane of the session's %d", kind, rid, envIndex, s.numEnvs)
	}
}

// logChunk hands a running session's logs and telemetry over once they
// reach the bounds.
func (a *Assembler) logChunk(s *session) {
	if len(s.logs)+len(s.telemetry) >= logChunkRows || s.logBytes >= logChunkBytes {
		a.sessionDone(s)
	}
}

func (a *Assembler) telemetry(s *session, e *events.TelemetrySnapshot, at time.Time) {
	h := e.Snapshot.Horizon.String()
	for _, r := range e.Snapshot.Rows {
		s.telemetry = append(s.telemetry, telemetryRow{time: at, horizon: h, row: r})
	}
	s.logBytes += logRowBytes * len(e.Snapshot.Rows)
	switch {
	case s.ended && s.finalTelemetry:
		// Late rows (a window snapshot in flight at the end): written as a
		// further part file of the session's telemetry.
		a.sessionDone(s)
	case e.Snapshot.Horizon == events.HorizonSession:
		s.sawFinalTelemetry = true
		if s.ended {
			s.finalTelemetry = true
			a.sessionDone(s)
		}
	}
}

// endSession finalises every episode of s: completed ones as completed,
// open ones as incomplete.
func (a *Assembler) endSession(s *session, status, reason string, at time.Time) {
	if s.ended {
		a.problem(s, probAfterEnd, "second session end (%s)", status)
		return
	}
	s.ended = true
	s.status = status
	s.reason = reason
	s.endedAt = at
	a.closeAllPending(s)
	a.finalizeCompleted(s)
	for _, ep := range sortedOpen(s) {
		a.finishEpisode(s, ep, episodeIncomplete)
	}
}

// finishOpen finalises every episode of a session that will get no more
// events (recovery after a crash, or Close), and the session itself.
func (a *Assembler) finishOpen(s *session, status string, at time.Time) {
	if s.ended {
		if !s.finalTelemetry {
			s.finalTelemetry = true
			a.sessionDone(s)
		}
		return
	}
	a.endSession(s, status, "", at)
	s.finalTelemetry = true
	a.sessionDone(s)
}

func (a *Assembler) episodeStarted(s *session, e *events.EpisodeStarted, at time.Time, pos uint64) {
	if _, dup := s.episodes[e.EpisodeRecordID]; dup || e.EpisodeRecordID == "" {
		a.problem(s, probDuplicateStart, "EpisodeStarted for %q (episode %s) which is already open or has no record id", e.EpisodeRecordID, e.EpisodeID)
		return
	}
	if _, dup := s.done[e.EpisodeRecordID]; dup {
		a.problem(s, probDuplicateStart, "EpisodeStarted for %q which was already recorded", e.EpisodeRecordID)
		return
	}
	a.noteV01(s, e.Route)
	a.noteV01Fields(s, e.Seed.Set || e.TrialIndex.Set)
	if !e.Route.Lane.Set {
		a.laneOutOfRange(s, events.KindEpisodeStarted, e.EpisodeRecordID, e.EnvIndex)
	}
	a.open++
	ep := &episode{
		id:        e.EpisodeID,
		recordID:  e.EpisodeRecordID,
		index:     e.EpisodeIndex,
		envIndex:  e.EnvIndex,
		autoReset: e.StartedFromAutoReset,
		startedAt: at,
		lastAt:    at,
		firstPos:  pos,
		seed:      e.Seed,
		trial:     e.TrialIndex,
		route:     e.Route.Lane,
	}
	if t := s.adopt[e.EpisodeRecordID]; t != nil {
		// Recovery's catch-up: build into the restored episode.
		delete(s.adopt, e.EpisodeRecordID)
		*t = *ep
		ep = t
	}
	s.episodes[e.EpisodeRecordID] = ep
}

func (a *Assembler) episodeCompleted(s *session, e *events.EpisodeCompleted, at time.Time) {
	ep := s.episodes[e.EpisodeRecordID]
	if ep == nil {
		if _, done := s.done[e.EpisodeRecordID]; done {
			if schema.RepeatedCompletion(e) {
				// rlmesh's env server reporting an episode a reset
				// interrupted: kept as it came, in the logs table.
				a.eventLog(s, e, at)
				return
			}
			a.problem(s, probDuplicateEnd, "EpisodeCompleted for %q, which was already completed", e.EpisodeRecordID)
		} else {
			a.problem(s, probUnknownEpisode, "EpisodeCompleted for %q (episode %s), which never started", e.EpisodeRecordID, e.EpisodeID)
		}
		return
	}
	if ep.completed {
		if schema.RepeatedCompletion(e) {
			a.eventLog(s, e, at)
			return
		}
		a.problem(s, probDuplicateEnd, "EpisodeCompleted for %q, which was already completed", e.EpisodeRecordID)
		return
	}
	if !e.Route.Lane.Set {
		a.laneOutOfRange(s, events.KindEpisodeCompleted, e.EpisodeRecordID, e.EnvIndex)
	}
	a.checkCompletion(s, ep, e)
	ep.completed = true
	c := *e
	ep.completion = &c
	ep.endedAt = at
	ep.lastAt = at
	if n := len(ep.rows); n > 0 && ep.rows[n-1].step == ep.nextStep-1 && !ep.flagEnded {
		// (An episode rlmesh 0.1's step flags ended keeps what they
		// said: see stepflags.go.)
		r := &ep.rows[n-1]
		r.isLast, r.terminated, r.truncated = true, e.Terminated, e.Truncated
	}
	s.toFinalize = append(s.toFinalize, ep)
}

// eventLog keeps an event that no table row holds (EnvConnected,
// ModelConnected, a repeated EpisodeCompleted) as a logs row with source
// schema.SourceEvent, at the event's time.
func (a *Assembler) eventLog(s *session, ev events.Event, at time.Time) {
	msg, ok := schema.EventLogMessage(ev)
	if !ok {
		return
	}
	src := schema.SourceEvent
	s.logs = append(s.logs, logRow{time: at, level: schema.EventLogLevel(ev), message: msg, source: &src})
	s.logBytes += logRowBytes + len(msg)
	a.logChunk(s)
}
