package recorder

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// Failure isolation. An I/O error on the files of one recording (its
// partition directories and part files) fails that recording, not the
// recorder:
//
//   - per recording: any error creating a partition directory or part file
//     of the recording, writing, closing, syncing or publishing one
//     (ENAMETOOLONG, EACCES or EPERM on its directory, EIO on its file, a
//     published name already taken, an injected fault), unless it is one
//     of the file-system-wide errors below. A file-system sync of a group
//     (syncfs) is not one recording's: when it fails, every file of the
//     group is synced on its own (store.Store.Sync), and only the
//     files that still fail are charged to their recordings;
//   - for the whole recorder (ErrFailed, as before): ENOSPC, EDQUOT and
//     EROFS wherever they come from (they are the ROOT's, not a
//     directory's), and every error of the log, of the recovery journal,
//     of the layout file and of anything else under _rlrec, and of a
//     directory shared by recordings (ROOT or a table directory).
//
// A failed recording's later events are still logged and assembled (a
// hook does not fail for them; they are counted), but none of its writes
// is committed any more, and a write of it in flight is aborted. Every
// write of it stays in flight (writer.live), so that the log keeps its
// records: no log segment holding them is removed, and no snapshot is
// sealed after them (a sealed snapshot lets recovery skip what lies
// before it). Its events are therefore all in the log, and the log is not
// emptied by Close. The failure is logged when it happens (session, env,
// path and cause), and Flush and Close return it as a *RecordingError
// (with every other failed recording, joined). Once the operator has
// fixed the cause, 'rlrec recover' (any Open) replays the log, skips what
// the markers show published, and writes the failed recordings. Recovery
// isolates failures the same way: a recording it cannot write stays in
// the log for the next recovery, and Open goes on (its Close returns the
// error, so that 'rlrec recover' exits non-zero); while such a log is
// kept, the ROOT's log grows until a recovery succeeds.

// The whole recorder's failure (ErrFailed).

// err returns the error that failed the recorder, or nil.
func (r *Recorder) err() error { return r.fatal.get() }

// fail records the first write or sync error (fatal.set).
func (r *Recorder) fail(err error) { r.fatal.set(err) }

// rootWide reports whether an I/O error is the whole file system's, not
// one directory's or file's.
func rootWide(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// errPath returns the path an I/O error names, or def.
func errPath(err error, def string) string {
	var pe *fs.PathError
	var le *os.LinkError
	var ie *vfs.InjectedError
	var pf *partFailure
	switch {
	case errors.As(err, &pf):
		return pf.path
	case errors.As(err, &ie):
		return ie.Name
	case errors.As(err, &pe):
		return pe.Path
	case errors.As(err, &le):
		return le.New
	}
	return def
}

// errRecordingFailed is what a write of a failed recording returns; it is
// not charged again.
var errRecordingFailed = errors.New("recording failed earlier")

// recKey names a recording in the failure set by its directory
// (hive.RecordingDir): a temp file found by recovery names its recording
// only by that.
func recKey(rec hive.Recording) string { return hive.RecordingDir(rec) }

// failRec charges err to rec: the recording is failed (see above), or the
// whole recorder when err is not one recording's.
func (w *writer) failRec(rec hive.Recording, err error) {
	if errors.Is(err, errRecordingFailed) {
		return
	}
	if rootWide(err) || errors.Is(err, ErrFailed) {
		w.fail(err)
		return
	}
	dir := w.st.Path(hive.RecordingPartition(hive.Tables[0].Name, rec).Rel())
	w.failKey(recKey(rec), &RecordingError{SessionID: rec.SessionID, EnvID: rec.EnvID, Path: errPath(err, dir), Err: err})
}

func (w *writer) failKey(key string, re *RecordingError) {
	w.mu.Lock()
	if w.failed[key] != nil {
		w.mu.Unlock()
		return
	}
	w.failed[key] = &recFailure{err: re}
	w.failedN.Add(1)
	w.mu.Unlock()
	w.log.Error("recording failed: its events go on to the log only, the other recordings go on; fix the cause and recover the ROOT",
		"root", w.root, "session", re.SessionID, "env", re.EnvID, "path", re.Path, "err", re.Err)
}

// recFailed reports whether rec failed.
func (w *writer) recFailed(rec hive.Recording) bool {
	if w.failedN.Load() == 0 {
		return false
	}
	key := recKey(rec)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed[key] != nil
}

// blocked returns why a write of rec must not go on: the recorder or the
// recording failed.
func (w *writer) blocked(rec hive.Recording) error {
	if err := w.err(); err != nil {
		return err
	}
	if w.recFailed(rec) {
		return errRecordingFailed
	}
	return nil
}

// countFailed counts an event of a failed recording.
func (w *writer) countFailed(ev events.Event) {
	if w.failedN.Load() == 0 {
		return
	}
	sid, route := ev.Header()
	key := recKey(hive.Recording{SessionID: sid, EnvID: route.EnvID})
	w.mu.Lock()
	if f := w.failed[key]; f != nil {
		f.events++
	}
	w.mu.Unlock()
}

// recordingErrors returns the failed recordings, ordered by session and
// env, and logs how many events each received after it failed when
// final is set.
func (w *writer) recordingErrors(final bool) []*RecordingError {
	w.mu.Lock()
	out := make([]*RecordingError, 0, len(w.failed))
	counts := make(map[*RecordingError]int64, len(w.failed))
	for _, f := range w.failed {
		out = append(out, f.err)
		counts[f.err] = f.events
	}
	w.mu.Unlock()
	slices.SortFunc(out, func(a, b *RecordingError) int {
		if a.SessionID != b.SessionID {
			if a.SessionID < b.SessionID {
				return -1
			}
			return 1
		}
		if a.EnvID < b.EnvID {
			return -1
		}
		if a.EnvID > b.EnvID {
			return 1
		}
		return 0
	})
	if final {
		for _, e := range out {
			w.log.Error("recording not written; its events are kept in the log for the next recovery", "root", w.root,
				"session", e.SessionID, "env", e.EnvID, "events_after_failure", counts[e], "path", e.Path, "err", e.Err)
		}
	}
	return out
}

// joinRecordingErrors joins errs as one error (nil when empty).
func joinRecordingErrors(errs []*RecordingError) error {
	if len(errs) == 0 {
		return nil
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}
