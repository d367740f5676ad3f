package assembly

import "github.com/rlrec/rlrec/schema"

// Handing over: an episode's buffered rows (takeChunk, stepsFull), a
// finished episode (finishEpisode) and a session write (sessionDone) leave
// for the Output (output.go) as values it owns. The rule files call these;
// these call no rule.

// sessionDone hands s's logs and telemetry, and its sessions row once it
// ended, to the output as the next session write.
func (a *Assembler) sessionDone(s *session) {
	w := SessionWrite{Rec: s.rec(), K: s.writes, FirstPos: s.firstPos, Seq: s.seq, Nonce: s.run.nonce, Chain: s.run.chain,
		Logs: make([]schema.LogRow, len(s.logs)), Tele: make([]schema.TelemetryRow, len(s.telemetry))}
	s.writes++
	for i, l := range s.logs {
		w.Logs[i] = schema.LogRow{Time: l.time, Level: l.level, Message: l.message, Source: l.source, Lane: l.lane}
	}
	for i, t := range s.telemetry {
		r := t.row
		w.Tele[i] = schema.TelemetryRow{Time: t.time, Horizon: t.horizon, Op: r.Op, Component: r.Component, Metric: r.Metric,
			Kind: r.Kind.String(), Count: int64(r.Count), Avg: r.Avg, P50: r.P50, P95: r.P95, P99: r.P99}
	}
	s.logs, s.telemetry, s.logBytes = nil, nil, 0
	s.logRows += int64(len(w.Logs))
	s.teleRows += int64(len(w.Tele))
	w.LogRows, w.TeleRows = s.logRows, s.teleRows
	if s.ended && !s.rowDone {
		s.rowDone = true
		w.Row = sessionRow(s)
	}
	a.out.SessionDone(w)
}

// takeChunk takes ep's buffered rows.
func takeChunk(s *session, ep *episode) Chunk {
	c := Chunk{
		Episode:  Episode{Rec: s.rec(), RecordID: ep.recordID, ID: ep.id, Index: ep.index, Env: ep.envIndex, Lane: ep.route},
		FirstPos: ep.firstPos, Obs: s.obsLayout, Act: s.actLayout, Streamed: ep.flushedRows,
		rows: ep.rows, arena: ep.arena,
	}
	ep.rows, ep.arena = nil, nil
	ep.flushedRows += int64(len(c.rows))
	return c
}

// stepsFull streams ep's buffered rows out.
func (a *Assembler) stepsFull(s *session, ep *episode) { a.out.StepsFull(takeChunk(s, ep)) }

// finalizeCompleted hands every completed episode to the output.
func (a *Assembler) finalizeCompleted(s *session) {
	for _, ep := range s.toFinalize {
		a.finishEpisode(s, ep, episodeCompleted)
	}
	s.toFinalize = s.toFinalize[:0]
}

func (a *Assembler) finishEpisode(s *session, ep *episode, status string) {
	if _, ok := s.episodes[ep.recordID]; !ok {
		return
	}
	delete(s.episodes, ep.recordID)
	ep.gone = true
	a.open--
	s.done[ep.recordID] = struct{}{}
	if ep.endedAt.IsZero() {
		ep.endedAt = ep.lastAt
	}
	s.episodesRecorded++
	a.out.EpisodeDone(Finished{Chunk: takeChunk(s, ep), Status: status, Row: episodeRow(s, ep, status)})
}
