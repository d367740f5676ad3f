package recorder

import (
	"context"
	"errors"
	"fmt"
	"github.com/rlrec/rlrec/internal/hive"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/wal"
)

var errBadInvalid = errors.New("malformed invalid-event record")

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
	if len(b) > wal.MaxRecordSize {
		r.bufs.put(bp)
		return fmt.Errorf("record invalid event of session %q: %d bytes encoded, over the %d-byte limit of one log record: %w",
			bad.SessionID, len(b), wal.MaxRecordSize, ErrEventTooLarge)
	}
	return r.handOver(ctx, bp, nil)
}

// appendInvalid appends the log record of an invalid event (recInvalid)
// recorded at t. Its body is protobuf wire data: 1 session id, 2 route
// (1 env_id, 2 env_component_id, 3 model_component_id), 3 recording time
// (Unix nanoseconds, varint; absent for the zero time), 4 kind (varint;
// absent when 0), 5 detail (why it was refused). The field numbers are
// part of the on-disk format: do not change them.
func appendInvalid(dst []byte, e *invalidEvent, t time.Time) []byte {
	dst = append(dst, recInvalid)
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, e.sessionID)
	var route []byte
	for i, s := range []string{e.route.EnvID, e.route.EnvComponentID, e.route.ModelComponentID} {
		if s != "" {
			route = protowire.AppendTag(route, protowire.Number(i+1), protowire.BytesType)
			route = protowire.AppendString(route, s)
		}
	}
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendBytes(dst, route)
	if !t.IsZero() {
		dst = protowire.AppendTag(dst, 3, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(t.UnixNano()))
	}
	if e.kind != 0 {
		dst = protowire.AppendTag(dst, 4, protowire.VarintType)
		dst = protowire.AppendVarint(dst, uint64(e.kind))
	}
	dst = protowire.AppendTag(dst, 5, protowire.BytesType)
	return protowire.AppendString(dst, e.detail)
}

// parseInvalid decodes the body of a recInvalid record.
func parseInvalid(b []byte) (*invalidEvent, time.Time, error) {
	e := &invalidEvent{}
	var at time.Time
	bad := func(what string) error { return fmt.Errorf("%w: %s", errBadInvalid, what) }
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, at, bad(protowire.ParseError(n).Error())
		}
		b = b[n:]
		switch {
		case typ == protowire.BytesType && (num == 1 || num == 2 || num == 5):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, at, bad(protowire.ParseError(n).Error())
			}
			b = b[n:]
			switch num {
			case 1:
				e.sessionID = string(v)
			case 2:
				if err := parseRoute(v, &e.route); err != nil {
					return nil, at, bad(err.Error())
				}
			case 5:
				e.detail = string(v)
			}
		case typ == protowire.VarintType && (num == 3 || num == 4):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, at, bad(protowire.ParseError(n).Error())
			}
			b = b[n:]
			if num == 3 {
				at = time.Unix(0, int64(v)).UTC()
			} else {
				e.kind = events.Kind(v)
			}
		default:
			return nil, at, bad(fmt.Sprintf("unexpected field %d", num))
		}
	}
	return e, at, nil
}

func parseRoute(b []byte, r *events.RuntimeEnvContext) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 3 {
			return fmt.Errorf("route: unexpected field %d", num)
		}
		v, m := protowire.ConsumeString(b[n:])
		if m < 0 {
			return fmt.Errorf("route: %v", protowire.ParseError(m))
		}
		b = b[n+m:]
		switch num {
		case 1:
			r.EnvID = v
		case 2:
			r.EnvComponentID = v
		case 3:
			r.ModelComponentID = v
		}
	}
	return nil
}

// decodeRecord decodes a logged event record (recEvent or recInvalid,
// with its type byte) with dec.
func decodeRecord(dec *events.Decoder, rec []byte) (events.Event, time.Time, error) {
	if rec[0] != recInvalid {
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
