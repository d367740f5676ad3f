package recorder

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Sequence numbers
//
// A producer that may resend events after a lost connection (rlrec serve's
// clients) numbers the events of each recording 1, 2, 3, ...
// RecordSequenced keeps that number in the event's log record (the
// eventsv1.Event sequence field), and the assembler keeps the highest one
// per recording in its state and in snapshots (the Session's sequence
// field), so that after a crash recovery knows the last event of each
// recording that reached the log. Under WithResume, RecoveredSequence reports it to the
// server, which then drops the resent events it already has.
//
// A recording that ended, was published and left the log (its log
// segments reclaimed) is no longer in the log; its sessions, logs and
// telemetry files keep, under rlrec.last_sequence, the highest number of
// the events applied when their rows were taken, and PublishedSequence
// reads it back, so that a server started later still knows which resent
// events of it are in ROOT.

// sequenced is a logged event with the sequence number its record
// carries, and whether its time is the recorder's clock (the record's
// recorder_clock field): decodeRecord wraps events that have either, and
// the assembler unwraps them (unsequence).
type sequenced struct {
	events.Event
	seq      uint64
	recClock bool
}

// unsequence returns the event inside a sequenced one, its number and
// recorder-clock flag, or ev itself, 0 and false.
func unsequence(ev events.Event) (events.Event, uint64, bool) {
	if s, ok := ev.(*sequenced); ok {
		return s.Event, s.seq, s.recClock
	}
	return ev, 0, false
}

// RecordSequenced hands over an event observed at time t like RecordAt,
// with its producer's sequence number seq: the event's number within its
// recording (its session id and route env id), counted from 1. The log
// record keeps it, so that a recorder opened WithResume after a crash
// reports, through RecoveredSequence, the highest number of each
// recording that reached the log. The recorder does not check the
// numbers; dropping duplicates is the caller's work. A seq of 0 is
// RecordAt.
func (r *Recorder) RecordSequenced(ctx context.Context, ev events.Event, t time.Time, seq uint64) error {
	return r.record(ctx, ev, t, seq, t.IsZero())
}

// RecoveredSequence returns the highest sequence number (RecordSequenced)
// among the events of the recording (sessionID, envID) that Open found in
// the log and resumed, or 0 when it found none. It is set only under
// WithResume; it does not change after Open.
func (r *Recorder) RecoveredSequence(sessionID, envID string) uint64 {
	return r.recovSeqs[hive.Recording{SessionID: sessionID, EnvID: envID}]
}

// publishedTables are the tables whose files carry rlrec.last_sequence.
var publishedTables = []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry}

// PublishedSequence returns the highest sequence number (RecordSequenced)
// that the published sessions, logs and telemetry files of the recording
// (sessionID, envID) in ROOT record under rlrec.last_sequence. For a
// recording that ended and left the log (RecoveredSequence is 0), every
// event of it up to that number is in ROOT's published files. It is 0 when
// ROOT holds none of the recording's files, or only files of unnumbered
// events. It reads the files' footers on every call; an error names the
// file that could not be read.
func (r *Recorder) PublishedSequence(sessionID, envID string) (uint64, error) {
	rec := hive.Recording{SessionID: sessionID, EnvID: envID}
	var last uint64
	for _, table := range publishedTables {
		parts, err := r.st.Parts(hive.RecordingPartition(table, rec).Rel())
		if err != nil {
			return 0, fmt.Errorf("recorder: last sequence of %s: %w", rec, err)
		}
		for _, p := range parts {
			path := r.st.Path(p.Rel)
			v, ok, err := readKeyValue(r.st, p, schema.MetaLastSequence)
			if err != nil {
				return 0, fmt.Errorf("recorder: last sequence of %s: %w", rec, err)
			}
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("recorder: last sequence of %s: %s has %s %q, not a number", rec, path, schema.MetaLastSequence, v)
			}
			last = max(last, n)
		}
	}
	return last, nil
}

// readKeyValue reads the key-value metadata key of the published part p
// of st (parquetout.ReadKeyValue).
func readKeyValue(st store.Root, p hive.Object, key string) (string, bool, error) {
	f, err := st.Open(p.Rel, p.Size)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return parquetout.ReadKeyValue(f, f.Size(), st.Path(p.Rel), key)
}
