package findings

import (
	"errors"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// State is what the recorder's state directory says of a ROOT.
type State struct {
	// LogRecords: the log holds records (a recorder did not close, or is
	// writing), or it cannot be read (recovery repairs it).
	LogRecords bool
	// Writing: a recorder holds the lock.
	Writing bool
	// LogLost says what the log lacks of what it expects (a deleted log
	// directory, segment or pending file: wal.CheckExpected), "" when
	// nothing.
	LogLost string
}

// NeedsRecovery reports whether the log holds records that no running
// recorder will write out: 'rlrec recover ROOT' writes them.
func (s State) NeedsRecovery() bool { return (s.LogRecords || s.LogLost != "") && !s.Writing }

// ReadState reads ROOT's lock and log without changing them: the lock is
// tried and released at once (as 'rlrec verify' does), and the log is
// read only up to its first record. A ROOT without a state directory has
// the zero State.
//
// A bucket's ROOT (s3://...) keeps its log and lock on the disk of the
// machine that records it: ReadState reads those of the default log
// directory (store.DefaultStateDir), which holds them when this machine
// recorded without --log-dir; ReadStateDir reads another.
func ReadState(root string) State {
	if store.IsURL(root) {
		dir, err := store.DefaultStateDir(root)
		if err != nil {
			return State{}
		}
		return ReadStateDir(dir)
	}
	return ReadStateDir(filepath.Join(root, hive.StateDir))
}

// ReadStateDir is ReadState of the recorder's state directory dir
// (ROOT/_rlrec, or an s3:// ROOT's log directory).
func ReadStateDir(dir string) State {
	var st State
	fsys := vfs.OS()
	lock := filepath.Join(dir, hive.LockName)
	if _, err := fsys.Stat(lock); err == nil {
		l, err := fsys.Lock(lock)
		if errors.Is(err, vfs.ErrLocked) {
			st.Writing = true
		} else if err == nil {
			l.Close()
		}
	}
	logDir := filepath.Join(dir, hive.LogDir)
	var ce *wal.CorruptionError
	if err := wal.CheckExpected(fsys, logDir); errors.As(err, &ce) {
		st.LogLost = ce.Err.Error()
	} else if err != nil {
		st.LogLost = err.Error()
	}
	if _, err := fsys.Stat(logDir); err != nil {
		return st
	}
	r, err := wal.NewReader(fsys, logDir)
	if err != nil {
		st.LogRecords = true // unreadable: recover repairs it
		return st
	}
	defer r.Close()
	st.LogRecords = r.Next() || errors.As(r.Err(), &ce)
	return st
}
