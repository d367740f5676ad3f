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

// invalidEvent stands, in the pipeline and the assembly, for a message of
// an ingested stream that was well-formed but no valid event (an
// events.InvalidEventError): only what names its recording and why it was
// refused are kept. It is an events.Event so that it finds its session as
// every event does; the assembler counts it and applies nothing.
type invalidEvent struct {
	sessionID string
	route     events.RuntimeEnvContext
	// kind is the event type the message set, 0 when none this version
	// knows.
	kind   events.Kind
	detail string
}

func (e *invalidEvent) Kind() events.Kind { return e.kind }

func (e *invalidEvent) Header() (string, events.RuntimeEnvContext) { return e.sessionID, e.route }

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
	ev := &invalidEvent{sessionID: bad.SessionID, route: bad.Route, kind: bad.Kind, detail: err.Error()}
	bp := r.bufs.get(len(ev.detail))
	b := appendInvalid((*bp)[:0], ev, t)
	*bp = b
	if err := r.checkSize(ev, len(b)); err != nil {
		r.bufs.put(bp)
		return err
	}
	return r.handOver(ctx, bp, nil)
}

// appendInvalid appends the log record of an invalid event
// (logrec.TypeInvalid) recorded at t.
func appendInvalid(dst []byte, e *invalidEvent, t time.Time) []byte {
	return logrec.AppendInvalid(dst, &logrec.Invalid{SessionID: e.sessionID, Route: e.route, At: t, Kind: e.kind, Detail: e.detail})
}

// parseInvalid decodes the body of a logrec.TypeInvalid record.
func parseInvalid(b []byte) (*invalidEvent, time.Time, error) {
	m, err := logrec.ParseInvalid(b)
	if err != nil {
		return nil, time.Time{}, err
	}
	return &invalidEvent{sessionID: m.SessionID, route: m.Route, kind: m.Kind, detail: m.Detail}, m.At, nil
}

// decodeRecord decodes a logged event record (logrec.TypeEvent or
// TypeInvalid, with its type byte) with dec.
func decodeRecord(dec *events.Decoder, rec []byte) (events.Event, time.Time, error) {
	if logrec.Of(rec) != logrec.TypeInvalid {
		ev, at, err := dec.Decode(rec[1:])
		if err == nil && (dec.Sequence() != 0 || dec.RecorderClock()) {
			ev = &sequenced{Event: ev, seq: dec.Sequence(), recClock: dec.RecorderClock()}
		}
		return ev, at, err
	}
	ev, at, err := parseInvalid(rec[1:])
	if err != nil {
		return nil, time.Time{}, err
	}
	return ev, at, nil
}
