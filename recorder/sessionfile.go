package recorder

import (
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// The files of a session write (its logs, telemetry and sessions row),
// written when its batch publishes it (batch.go).

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
	if job.chain.Events > 0 {
		meta.ContentChain = job.chain.String()
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
	w.com.commit(commitItem{rec: rec, parts: parts, markers: [][]byte{marker}, live: []any{job.token}, hold: w.now().replays()})
}
