package logrec

import "errors"

// Sentinel errors of package logrec; match them with errors.Is. Every
// error a parser returns wraps one of them and says what was wrong.
var (
	// ErrMarker is returned for a marker or seal record body that does not
	// parse.
	ErrMarker = errors.New("logrec: malformed marker record")
	// ErrInvalid is returned for an invalid-event record body that does
	// not parse.
	ErrInvalid = errors.New("logrec: malformed invalid-event record")
	// ErrSnapshot is returned for a snapshot record body that does not
	// parse.
	ErrSnapshot = errors.New("logrec: malformed snapshot record")
	// ErrJournal is returned for a recovery journal that is not one, fails
	// its checksum or is cut short.
	ErrJournal = errors.New("logrec: malformed recovery journal")
)
