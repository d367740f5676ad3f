package recorder

import (
	"context"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/schema"
)

// The writes of a recording's session files as the assembly hands them
// over: its logs, telemetry and sessions row, at its end and for late
// data after it, queued to its recording's batch; sessionfile.go writes
// the files.

// SessionDone hands a recording's session write to its batch: at its end
// the logs, telemetry and session row (the commit point), later any late
// telemetry or logs. It is published after the episodes finished before
// it.
func (w *writer) SessionDone(sw assembly.SessionWrite) {
	if err := w.now().sessionWrite(sw.Rec, sw.K); err != nil {
		w.fail(err)
		return
	}
	job := &sessionWriteJob{k: sw.K, seq: sw.Seq, nonce: sw.Nonce, chain: sw.Chain, logs: sw.Logs, tele: sw.Tele}
	w.chargeSession(job)
	if sw.Row != nil {
		job.row = sw.Row
		job.logRows, job.teleRows = sw.LogRows, sw.TeleRows
		if sw.Row.Problems > 0 {
			w.log.Warn("recording has problems in its input", "session", sw.Rec.SessionID, "env", sw.Rec.EnvID,
				"problems", *sw.Row.ProblemSummary, "dropped_steps", sw.Row.DroppedSteps)
		}
	}
	token := new(byte)
	job.token = token
	w.addLive(token, sw.FirstPos, true)
	b := w.batchOf(sw.Rec)
	e := &batchEntry{session: job}
	b.add(e)
	w.ready(b, e, false)
}

// NewSession numbers the file writes of a recording seen for the first
// time. A recording whose files exist already (recorded before the log
// was reclaimed, or by an earlier recorder) continues their part numbers:
// its first event, when it is late telemetry or a log line, makes it a
// finished recording receiving late data.
func (w *writer) NewSession(rec hive.Recording, late bool) assembly.Continuation {
	n := 0
	for _, table := range []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
		p, err := w.st.Next(hive.RecordingPartition(table, rec))
		if err == nil && p > n {
			n = p
		}
	}
	if n == 0 {
		w.own.add(rec)
		return assembly.Continuation{}
	}
	if late {
		return assembly.Continuation{FirstWrite: n, Ended: true}
	}
	w.log.Warn("recording already under this root, and its stream does not start with SessionStarted; its new files get further part numbers",
		"session", rec.SessionID, "env", rec.EnvID, "first_part", n)
	return assembly.Continuation{FirstWrite: n}
}

// Problem logs input that did not fit; the assembler counts it.
func (w *writer) Problem(rec hive.Recording, kind, detail string) {
	w.log.Warn("input did not fit the recording; counted and skipped", "session", rec.SessionID, "env", rec.EnvID, "problem", kind, "detail", detail)
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
	n := int64(len(job.tele)) * assembly.LogRowBytes
	for _, l := range job.logs {
		n += assembly.LogRowBytes + int64(len(l.Message))
	}
	job.charge = min(n, w.rowsMax)
	w.rows.Acquire(context.Background(), job.charge)
}
