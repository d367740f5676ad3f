package recorder

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
)

// RecordInvalid records that a message of an event stream was well-formed
// protobuf but no valid event: err is what the stream's reader reported of
// it (it wraps an *events.InvalidEventError, as a StreamReader's error
// does) and t its recording time. Nothing of the message's content is
// recorded; it is logged and counted as an "invalid_event" problem in the
// sessions row of the recording it names. It goes through the recorder's
// log like an event, so that recovery after a crash counts it too, and
// SyncEach waits for it alike.
//
// An invalid event that names no recording (its session id or its route's
// env id is empty) is only logged: RecordInvalid returns an error wrapping
// ErrNoRecording, and the caller counts it where it reads the stream.
// Its log record and its event in the pipeline are internal/logrec's
// (logrec.InvalidEvent, logrec.DecodeEvent).
func (r *Recorder) RecordInvalid(ctx context.Context, err error, t time.Time) error {
	var bad *events.InvalidEventError
	if !errors.As(err, &bad) {
		return fmt.Errorf("record invalid event: %v: not an *events.InvalidEventError", err)
	}
	if bad.SessionID == "" || bad.Route.EnvID == "" {
		r.opts.logger.Warn("invalid event names no recording (no session id or env id); skipped",
			"session", bad.SessionID, "env_id", bad.Route.EnvID, "err", err)
		return fmt.Errorf("record invalid event: %w: %w", ErrNoRecording, err)
	}
	if rec := (hive.Recording{SessionID: bad.SessionID, EnvID: bad.Route.EnvID}); r.isRefused(rec) {
		return fmt.Errorf("invalid event of %s: %w in %s (its SessionStarted was refused)", rec, ErrRecordingExists, r.root)
	}
	ev := &logrec.InvalidEvent{SessionID: bad.SessionID, Route: bad.Route, EventKind: bad.Kind, Detail: err.Error()}
	bp := r.bufs.Get(len(ev.Detail))
	b := logrec.AppendInvalidEvent((*bp)[:0], ev, t)
	*bp = b
	if err := r.checkSize(ev, len(b)); err != nil {
		r.bufs.Put(bp)
		return err
	}
	return r.handOver(ctx, bp, nil)
}
