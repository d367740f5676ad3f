package events

import "errors"

// Sentinel errors of package events; match them with errors.Is.
var (
	// ErrUnknownKind is returned for an event whose type or wire kind this
	// version does not know.
	ErrUnknownKind = errors.New("events: unknown event kind")
	// ErrNilEvent is returned when a nil event is dispatched or encoded.
	ErrNilEvent = errors.New("events: nil event")
)
