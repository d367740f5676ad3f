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
}

// NeedsRecovery reports whether the log holds records that no running
// recorder will write out: 'rlrec recover ROOT' writes them.
func (s State) NeedsRecovery() bool { return s.LogRecords && !s.Writing }

// ReadState reads ROOT's lock and log without changing them: the lock is
// tried and released at once (as 'rlrec verify' does), and the log is
// read only up to its first record. A ROOT without a state directory has
// the zero State.
func ReadState(root string) State {
	var st State
	if store.IsURL(root) {
		// A bucket's log and lock are on the recorder's disk.
		return st
	}
	fsys := vfs.OS()
	lock := filepath.Join(root, hive.StateDir, hive.LockName)
	if _, err := fsys.Stat(lock); err == nil {
		l, err := fsys.Lock(lock)
		if errors.Is(err, vfs.ErrLocked) {
			st.Writing = true
		} else if err == nil {
			l.Close()
		}
	}
	dir := filepath.Join(root, hive.StateDir, hive.LogDir)
	if _, err := fsys.Stat(dir); err != nil {
		return st
	}
	r, err := wal.NewReader(fsys, dir)
	if err != nil {
		st.LogRecords = true // unreadable: recover repairs it
		return st
	}
	defer r.Close()
	var ce *wal.CorruptionError
	st.LogRecords = r.Next() || errors.As(r.Err(), &ce)
	return st
}
