package logrec

import (
	"bytes"
	"time"

	"github.com/rlrec/rlrec/events"
)

// The events of event records. A TypeEvent record's body is an encoded
// events.Event (events.AppendMarshal) with its time, and with a sequence
// number and recorder-clock flag when the producer set them; a TypeInvalid
// record's body is an Invalid. DecodeEvent turns either back into an
// events.Event, so that a recorder's pipeline and recovery handle both
// alike: Sequenced carries the number and flag, InvalidEvent an invalid
// message.

// Sequenced is a logged event with the sequence number its record
// carries, and whether its time is the recorder's clock (the record's
// recorder_clock field): DecodeEvent wraps events that have either, and
// the recorder's assembler unwraps them (Unsequence).
type Sequenced struct {
	events.Event
	Seq           uint64
	RecorderClock bool
	// Nonce is the record's run_nonce (its run's, drawn or derived), nil
	// when it has none; Hash its content_hash, 0 when none (events/runid.go).
	Nonce []byte
	Hash  uint64
}

// RunOf returns the run nonce and content hash of a logged event (a
// Sequenced one), or nil and 0.
func RunOf(ev events.Event) ([]byte, uint64) {
	if s, ok := ev.(*Sequenced); ok {
		return s.Nonce, s.Hash
	}
	return nil, 0
}

// Unsequence returns the event inside a Sequenced one, its number and
// recorder-clock flag, or ev itself, 0 and false.
func Unsequence(ev events.Event) (events.Event, uint64, bool) {
	if s, ok := ev.(*Sequenced); ok {
		return s.Event, s.Seq, s.RecorderClock
	}
	return ev, 0, false
}

// InvalidEvent stands, in a recorder's pipeline and assembly, for a
// message of an ingested stream that was well-formed but no valid event
// (an events.InvalidEventError): only what names its recording and why it
// was refused are kept. It is an events.Event so that it finds its
// session as every event does; the assembler counts it and applies
// nothing.
type InvalidEvent struct {
	SessionID string
	Route     events.RuntimeEnvContext
	// EventKind is the event type the message set, 0 when none this
	// version knows.
	EventKind events.Kind
	Detail    string
}

// Kind implements events.Event.
func (e *InvalidEvent) Kind() events.Kind { return e.EventKind }

// Header implements events.Event.
func (e *InvalidEvent) Header() (string, events.RuntimeEnvContext) { return e.SessionID, e.Route }

// AppendInvalidEvent appends the log record of an invalid event
// (TypeInvalid, with its type byte) recorded at t.
func AppendInvalidEvent(dst []byte, e *InvalidEvent, t time.Time) []byte {
	return AppendInvalid(dst, &Invalid{SessionID: e.SessionID, Route: e.Route, At: t, Kind: e.EventKind, Detail: e.Detail})
}

// DecodeEvent decodes a logged event record (TypeEvent or TypeInvalid,
// with its type byte) with dec: an event with a sequence number or the
// recorder's clock comes wrapped in a Sequenced, an invalid one as an
// *InvalidEvent.
func DecodeEvent(dec *events.Decoder, rec []byte) (events.Event, time.Time, error) {
	if Of(rec) != TypeInvalid {
		ev, at, err := dec.Decode(rec[1:])
		if err == nil && (dec.Sequence() != 0 || dec.RecorderClock() || dec.RunNonce() != nil || dec.ContentHash() != 0) {
			ev = &Sequenced{Event: ev, Seq: dec.Sequence(), RecorderClock: dec.RecorderClock(), Hash: dec.ContentHash()}
			if n := dec.RunNonce(); n != nil {
				ev.(*Sequenced).Nonce = bytes.Clone(n)
			}
		}
		return ev, at, err
	}
	m, err := ParseInvalid(rec[1:])
	if err != nil {
		return nil, time.Time{}, err
	}
	return &InvalidEvent{SessionID: m.SessionID, Route: m.Route, EventKind: m.Kind, Detail: m.Detail}, m.At, nil
}
