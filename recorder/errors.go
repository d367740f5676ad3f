package recorder

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

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

// RecordingError is the failure of one recording's files: its events are
// durable in the log but not all in Parquet files; 'rlrec recover' writes
// them once the cause is fixed. It wraps ErrRecordingFailed and the cause.
type RecordingError struct {
	SessionID, EnvID string
	// Path is the file or directory that failed.
	Path string
	Err  error
}

func (e *RecordingError) Error() string {
	return fmt.Sprintf("recording session_id=%q env_id=%q could not be written (%s): %v; its events are kept in the log: fix the cause and recover the ROOT",
		e.SessionID, e.EnvID, e.Path, e.Err)
}

func (e *RecordingError) Unwrap() []error { return []error{ErrRecordingFailed, e.Err} }

// RecordingErrors returns the recording failures err consists of (as
// Flush and Close return them, joined), or nil when err is nil or holds
// any other error: with only recording failures, every event handed over
// is still durable in the log.
func RecordingErrors(err error) []*RecordingError {
	if err == nil {
		return nil
	}
	var out []*RecordingError
	var walk func(error) bool
	walk = func(err error) bool {
		if re, ok := err.(*RecordingError); ok {
			out = append(out, re)
			return true
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				if !walk(e) {
					return false
				}
			}
			return true
		}
		if u := errors.Unwrap(err); u != nil {
			return walk(u)
		}
		return false
	}
	if !walk(err) {
		return nil
	}
	return out
}

// fatal holds the error that failed a recorder: the first write or sync
// error, after which it refuses further events, since what it was handed
// can no longer be made durable. The Recorder and its writer share it.
type fatal struct {
	err  atomic.Pointer[error]
	root string
	log  *slog.Logger
}

// get returns the error that failed the recorder, or nil.
func (f *fatal) get() error {
	if p := f.err.Load(); p != nil {
		return *p
	}
	return nil
}

// set records err, wrapped in ErrFailed, unless an error came first.
func (f *fatal) set(err error) {
	err = fmt.Errorf("%w: %w", ErrFailed, err)
	if f.err.CompareAndSwap(nil, &err) {
		f.log.Error("recorder failed; events are no longer accepted, reopen the root to recover", "root", f.root, "err", err)
	}
}
