package recorder

import (
	"context"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/published"
)

// Sequence numbers
//
// A producer that may resend events after a lost connection (rlrec serve's
// clients) numbers the events of each recording 1, 2, 3, ...
// RecordSequenced keeps that number in the event's log record (the
// eventsv1.Event sequence field), and the assembler keeps the highest one
// per recording in its state and in snapshots (the Session's sequence
// field), so that after a crash recovery knows the last event of each
// recording that reached the log (a decoded record carries its number as
// a logrec.Sequenced). Under WithResume, RecoveredSequence reports it to
// the server, which then drops the resent events it already has.
//
// A recording that ended, was published and left the log (its log
// segments reclaimed) is no longer in the log; its sessions, logs and
// telemetry files keep, under rlrec.last_sequence, the highest number of
// the events applied when their rows were taken, and PublishedSequence
// reads it back (internal/published), so that a server started later
// still knows which resent events of it are in ROOT.

// RecordSequenced hands over an event observed at time t like RecordAt,
// with its producer's sequence number seq: the event's number within its
// recording (its session id and route env id), counted from 1. The log
// record keeps it, so that a recorder opened WithResume after a crash
// reports, through RecoveredSequence, the highest number of each
// recording that reached the log. The recorder does not check the
// numbers; dropping duplicates is the caller's work. A seq of 0 is
// RecordAt.
func (r *Recorder) RecordSequenced(ctx context.Context, ev events.Event, t time.Time, seq uint64) error {
	return r.record(ctx, ev, t, seq, t.IsZero(), Run{})
}

// RecoveredSequence returns the highest sequence number (RecordSequenced)
// among the events of the recording (sessionID, envID) that Open found in
// the log and resumed, or 0 when it found none. It is set only under
// WithResume; it does not change after Open.
func (r *Recorder) RecoveredSequence(sessionID, envID string) uint64 {
	return r.recovSeqs[hive.Recording{SessionID: sessionID, EnvID: envID}]
}

// PublishedSequence returns the highest sequence number (RecordSequenced)
// that the published sessions, logs and telemetry files of the recording
// (sessionID, envID) in ROOT record under rlrec.last_sequence. For a
// recording that ended and left the log (RecoveredSequence is 0), every
// event of it up to that number is in ROOT's published files. It is 0 when
// ROOT holds none of the recording's files, or only files of unnumbered
// events. It reads the files' footers on every call
// (internal/published.LastSequence); an error names the file that could
// not be read.
func (r *Recorder) PublishedSequence(sessionID, envID string) (uint64, error) {
	return published.LastSequence(r.st, hive.Recording{SessionID: sessionID, EnvID: envID})
}
