package recorder

import (
	"errors"

	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// Sentinel errors of package recorder; match them with errors.Is.
var (
	// ErrClosed is returned by a hook, Flush or Close called after Close.
	ErrClosed = errors.New("recorder: closed")
	// ErrLocked is returned by Open when another recorder holds the ROOT.
	ErrLocked = errors.New("recorder: root is locked by another recorder")
	// ErrInvalidOption is returned by Open for an option out of range.
	ErrInvalidOption = errors.New("recorder: invalid option")
	// ErrEventTooLarge is returned by a hook whose event encodes to more
	// than the maximum event size (WithMaxEventSize; by default a
	// sixteenth of the memory budget); the event is not recorded and the
	// recorder goes on.
	ErrEventTooLarge = errors.New("recorder: event too large")
	// ErrNoRecording is returned by RecordInvalid for an invalid event
	// that names no recording (its session id or env id is empty): it is
	// logged and not recorded, and the caller counts it where it reads the
	// stream.
	ErrNoRecording = errors.New("recorder: event names no recording")
	// ErrFailed wraps the first write or sync error after which the
	// recorder stops accepting events: fsync errors cannot be retried
	// safely.
	ErrFailed = errors.New("recorder: failed")
	// ErrRecordingFailed is wrapped by every *RecordingError: the files
	// of one recording could not be written (failure.go). Its events stay
	// in the log for 'rlrec recover'; the recorder goes on with the
	// others.
	ErrRecordingFailed = errors.New("recorder: recording could not be written")
	// ErrRecordingExists is returned by OnSessionStarted (and RecordAt)
	// for a recording, a (session_id, env_id) pair, that ROOT already
	// holds, and by every later event of that recording; none of them is
	// recorded, and the recorder goes on with the others.
	ErrRecordingExists = errors.New("recorder: recording already in ROOT")
	// ErrDamagedLog is returned by Open for a log damaged where cutting
	// it would drop records reported durable (inside a sealed segment):
	// recovery with WithSalvage(true) drops the damaged records and keeps
	// every intact one. It wraps the log's *wal.CorruptionError.
	ErrDamagedLog = errors.New("recorder: log damaged inside a sealed segment")
	// ErrCorruptJournal is returned by Open for a recovery journal
	// (_rlrec/journal) that is damaged (internal/recovery.ReadJournal).
	ErrCorruptJournal = recovery.ErrCorruptJournal
	// ErrLayout is returned by Open for a ROOT of another schema version
	// or steps layout (internal/store.OpenLayout).
	ErrLayout = store.ErrLayout
)
