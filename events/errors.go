package events

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors of package events; match them with errors.Is.
var (
	// ErrUnknownKind is returned for an event whose type or wire kind this
	// version does not know, including a wire message with no kind set.
	ErrUnknownKind = errors.New("events: unknown event kind")
	// ErrNilEvent is returned when a nil event is dispatched or encoded, or
	// a nil message is decoded.
	ErrNilEvent = errors.New("events: nil event")
	// ErrUnknownEnum is returned by ToProto and FromProto (and so by every
	// encoder and decoder) for a log level, telemetry horizon or metric
	// kind outside the values this version defines, including the
	// unspecified value 0.
	ErrUnknownEnum = errors.New("events: unknown enum value")
	// ErrTimeOutOfRange is returned by ToProto for an observation time that
	// nanoseconds since the Unix epoch cannot hold in an int64 (before 1678
	// or after 2262).
	ErrTimeOutOfRange = errors.New("events: time out of range")
	// ErrMalformed is returned for bytes that do not decode as an event
	// message, or a length prefix that is not a valid varint.
	ErrMalformed = errors.New("events: malformed message")
	// ErrTruncated is returned by a StreamReader when its input ends inside
	// a message's length prefix or body.
	ErrTruncated = errors.New("events: truncated stream")
	// ErrMessageTooLarge is returned by a StreamReader for a length prefix
	// above its maximum message size; nothing is allocated for it.
	ErrMessageTooLarge = errors.New("events: message too large")
)

// StreamError reports where a StreamReader met bad input. Every message
// before Index (that is, every byte before Offset) decoded; a reader that
// wants to keep the good prefix of a damaged stream truncates at Offset.
// When Err is an *InvalidEventError the stream is not damaged, only that
// message is bad, and the reader can go on past it.
type StreamError struct {
	// Index is the 0-based index of the message that failed.
	Index int
	// Offset is the byte offset of that message's length prefix.
	Offset int64
	// Err wraps the cause: ErrTruncated, ErrMessageTooLarge, ErrMalformed,
	// an *InvalidEventError (wrapping ErrUnknownKind or ErrUnknownEnum),
	// or an error of the underlying reader.
	Err error
}

func (e *StreamError) Error() string {
	return fmt.Sprintf("event stream: message %d at byte %d: %v", e.Index, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *StreamError) Unwrap() error { return e.Err }

// InvalidEventError reports a message that is well-formed protobuf but not
// a valid event: it sets no kind, or one this version does not know
// (ErrUnknownKind), or an enum field holds a value this version does not
// define, 0 (unspecified) included (ErrUnknownEnum). The framing around it
// is intact, so a StreamReader can read on past it (see StreamReader.Next).
// Its fields are what the message carried, for counting it against the
// recording it names.
type InvalidEventError struct {
	// SessionID and Route are the message's header ("" where it has none).
	SessionID string
	Route     RuntimeEnvContext
	// Kind is the event type the message set, 0 when it set none this
	// version knows.
	Kind Kind
	// Time is when the event was observed, the zero time when the message
	// does not say.
	Time time.Time
	// Err wraps ErrUnknownKind or ErrUnknownEnum and says which field.
	Err error
}

func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("invalid event of session %q (env_id %q): %v", e.SessionID, e.Route.EnvID, e.Err)
}

// Unwrap returns the cause.
func (e *InvalidEventError) Unwrap() error { return e.Err }
