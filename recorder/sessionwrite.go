package recorder

import (
	"context"
	"fmt"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// The writes of a recording's session files: its logs, telemetry and
// sessions row, at its end and for late data after it.

// sessionDone hands a recording's session write to its batch: at its end
// the logs, telemetry and session row (the commit point), later any late
// telemetry or logs. It is published after the episodes finished before
// it.
func (w *writer) sessionDone(s *session) {
	k := s.writes
	s.writes++
	if err := w.now().sessionWrite(s.rec(), k); err != nil {
		w.fail(err)
		return
	}
	final := s.ended && !s.rowDone
	if final {
		s.rowDone = true
	}
	if w.now().skipSession(s.rec(), k, final) {
		s.logRows += int64(len(s.logs))
		s.teleRows += int64(len(s.telemetry))
		s.logs, s.telemetry, s.logBytes = nil, nil, 0
		return
	}
	job := &sessionWriteJob{k: k, seq: s.seq, nonce: s.run.nonce, logs: make([]schema.LogRow, len(s.logs)), tele: make([]schema.TelemetryRow, len(s.telemetry))}
	for i, l := range s.logs {
		job.logs[i] = schema.LogRow{Time: l.time, Level: l.level, Message: l.message, Source: l.source, Lane: l.lane}
	}
	for i, t := range s.telemetry {
		r := t.row
		job.tele[i] = schema.TelemetryRow{Time: t.time, Horizon: t.horizon, Op: r.Op, Component: r.Component, Metric: r.Metric,
			Kind: r.Kind.String(), Count: int64(r.Count), Avg: r.Avg, P50: r.P50, P95: r.P95, P99: r.P99}
	}
	s.logs, s.telemetry, s.logBytes = nil, nil, 0
	w.chargeSession(job)
	s.logRows += int64(len(job.logs))
	s.teleRows += int64(len(job.tele))
	if final {
		job.row = sessionRow(s)
		job.logRows, job.teleRows = s.logRows, s.teleRows
		if s.problemCount() > 0 {
			w.log.Warn("recording has problems in its input", "session", s.id, "env", s.route.EnvID, "problems", s.problemSummary(), "dropped_steps", s.droppedSteps)
		}
	}
	token := new(byte)
	job.token = token
	w.addLive(token, s.firstPos, true)
	b := w.batchOf(s)
	e := &batchEntry{session: job}
	b.add(e)
	w.ready(b, e, false)
}

// writeSession writes a session write's files and hands them to the
// committer.
func (w *writer) writeSession(rec hive.Recording, job *sessionWriteJob) {
	if err := w.blocked(rec); err != nil {
		// Its write stays in flight, and so in the log.
		return
	}
	meta := w.meta(rec)
	meta.LastSequence = job.seq
	if job.nonce != nil {
		meta.RunNonce = runid.Format(job.nonce)
	}
	var parts []store.Part
	var files []string
	write := func(table string, what string, finish func(p hive.Partition, n int) (store.Part, error)) bool {
		p := hive.RecordingPartition(table, rec)
		n := w.nextPart(p)
		part, err := finish(p, n)
		if err != nil {
			store.AbortAll(parts)
			w.failRec(rec, fmt.Errorf("%s of %s: %w", what, rec, err))
			return false
		}
		parts, files = append(parts, part), append(files, p.File(n))
		return true
	}
	if len(job.logs) > 0 || job.row != nil {
		if !write(schema.TableLogs, "logs", func(p hive.Partition, n int) (store.Part, error) {
			return finishTable(w.st, p, n, meta, w.cfg, job.logs)
		}) {
			return
		}
	}
	if len(job.tele) > 0 || job.row != nil {
		if !write(schema.TableTelemetry, "telemetry", func(p hive.Partition, n int) (store.Part, error) {
			return finishTable(w.st, p, n, meta, w.cfg, job.tele)
		}) {
			return
		}
	}
	if job.row != nil {
		if !write(schema.TableSessions, "session row", func(p hive.Partition, n int) (store.Part, error) {
			m := meta
			m.LogRows, m.TelemetryRows = &job.logRows, &job.teleRows
			req := store.RecordingRequests(w.st, rec)
			if req != nil && !w.now().replays() {
				w.com.flush() // publish the recording's earlier files first: all but this write's puts are counted
				req = store.RecordingRequests(w.st, rec)
			}
			if req != nil {
				b, _ := req.MarshalJSON() // never fails
				m.StoreRequests = string(b)
			}
			return finishTable(w.st, p, n, m, w.cfg, []schema.SessionRow{*job.row})
		}) {
			return
		}
	}
	marker := logrec.AppendSessionMarker(nil, logrec.TypeSessionDone, logrec.Marker{Recording: rec, Write: job.k, Files: files})
	w.commit(commitItem{rec: rec, parts: parts, markers: [][]byte{marker}, live: []any{job.token}, hold: w.now().replays()})
}

func sessionRow(s *session) *schema.SessionRow {
	row := &schema.SessionRow{
		EnvComponentID:   s.route.EnvComponentID,
		ModelComponentID: s.route.ModelComponentID,
		Status:           s.status,
		StartedAt:        s.startedAt,
		EpisodesRecorded: s.episodesRecorded,
		StepsRecorded:    s.stepsRecorded,
		DroppedSteps:     s.droppedSteps,
		Problems:         s.problemCount(),
		Clock:            s.clock(),
		SurplusSteps:     ptr(s.surplusSteps),
	}
	if s.reason != "" {
		reason := s.reason
		row.Reason = &reason
	}
	if s.hasTotals {
		steps, eps := s.totalSteps, s.totalEpisodes
		row.TotalSteps, row.TotalEpisodes = &steps, &eps
	}
	if summary := s.problemSummary(); summary != "" {
		row.ProblemSummary = &summary
	}
	if s.status != statusOpen || !s.endedAt.IsZero() {
		end := s.endedAt
		if end.IsZero() {
			end = s.lastAt
		}
		row.EndedAt = &end
	}
	return row
}

// newSession numbers the file writes of a session seen for the first time.
// A session whose files exist already (recorded before the log was
// reclaimed, or by an earlier recorder) continues their part numbers: its
// first event, when it is late telemetry or a log line, makes it a finished
// session receiving late data.
func (w *writer) newSession(s *session, first events.Event) {
	late := first.Kind() == events.KindTelemetrySnapshot || first.Kind() == events.KindLog
	if p := w.now(); p.replays() {
		if k, ok := p.firstWrite(s.rec()); ok && late {
			s.writes, s.ended, s.finalTelemetry, s.rowDone = k, true, true, true
			return
		}
		if !late {
			// Replayed from its start: writes are numbered from 0 again
			// and replace what a crash may have left.
			return
		}
	}
	n := 0
	for _, table := range []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
		p, err := w.st.Next(hive.RecordingPartition(table, s.rec()))
		if err == nil && p > n {
			n = p
		}
	}
	if n == 0 {
		w.own.add(s.rec())
		return
	}
	s.writes = n
	if late {
		s.ended, s.finalTelemetry, s.rowDone = true, true, true
		return
	}
	w.log.Warn("recording already under this root, and its stream does not start with SessionStarted; its new files get further part numbers",
		"session", s.id, "env", s.route.EnvID, "first_part", n)
}

// problem logs input that did not fit; the assembler counts it.
func (w *writer) problem(s *session, kind problemKind, detail string) {
	w.log.Warn("input did not fit the recording; counted and skipped", "session", s.id, "env", s.route.EnvID, "problem", string(kind), "detail", detail)
}

// chargeSession charges a session write's log and telemetry rows to the
// rows in flight, as an episode's rows are (takeRows), waiting until there
// is room: a producer of many large log events then waits for their files
// instead of queueing session writes without bound. Recovery charges
// nothing: it flushes its batches only at its end, so a charge there would
// wait for ever (its replay is bounded by the log it reads instead).
func (w *writer) chargeSession(job *sessionWriteJob) {
	if w.now().replays() {
		return
	}
	n := int64(len(job.tele)) * logRowBytes
	for _, l := range job.logs {
		n += logRowBytes + int64(len(l.Message))
	}
	job.charge = min(n, w.rowsMax)
	w.rows.Acquire(context.Background(), job.charge)
}
