package verify

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// checkLock reports whether a recorder holds ROOT's lock, trying it and
// releasing it at once. A missing lock file means no recorder ever held it;
// it is not created.
//
// Verify never writes, so a ROOT it may only read (a read-only mount, a
// copy made read-only, another user's ROOT) is verified like any other:
// the lock is tried through a read-only open where it must (vfs.OS), and a
// lock that cannot be tried at all for want of access, or on a platform
// without locks, is no problem of the ROOT: it is checked as one that no
// recorder writes.
func (v *verifier) checkLock() bool {
	name := filepath.Join(v.root, hive.StateDir, hive.LockName)
	if _, err := v.fs.Stat(name); err != nil {
		return false
	}
	l, err := v.fs.Lock(name)
	if err != nil {
		switch {
		case errors.Is(err, vfs.ErrLocked):
			v.add(Problem{Check: CheckLock, Path: v.rel(name), Row: -1,
				Message: "a recorder is writing this ROOT (it holds the lock): files may be missing or in progress, and temp files and the log are not checked",
				Fix:     "verify again after the recorder has closed"})
			return true
		case errors.Is(err, vfs.ErrNoAccess), errors.Is(err, fs.ErrPermission), errors.Is(err, errors.ErrUnsupported):
			return false
		}
		v.add(Problem{Check: CheckLock, Path: v.rel(name), Row: -1, Message: "cannot try the lock: " + err.Error(),
			Fix: "check the permissions of ROOT/_rlrec"})
		return false
	}
	l.Close()
	return false
}

// checkLog reads the log read-only: a clean close leaves no records.
func (v *verifier) checkLog() {
	dir := filepath.Join(v.root, hive.StateDir, hive.LogDir)
	// What the log expects (its manifest, and the expectation beside the
	// log directory): a missing log directory, segment or pending file.
	var ce *wal.CorruptionError
	if err := wal.CheckExpected(v.fs, dir); errors.As(err, &ce) {
		v.add(Problem{Check: CheckLog, Path: v.rel(ce.Segment), Row: -1,
			Message: "the log lacks what it expects: " + ce.Err.Error(),
			Remedy:  findings.Recover, Fix: ": it refuses such a log and names what is lost, and a salvage writes what is left"})
	} else if err != nil {
		v.add(Problem{Check: CheckLog, Path: v.rel(dir), Row: -1, Message: "cannot read what the log expects: " + err.Error(),
			Remedy: findings.Recover, Fix: ", which names what is wrong"})
	}
	if _, err := v.fs.Stat(dir); err != nil {
		return
	}
	r, err := wal.NewReader(v.fs, dir)
	if err != nil {
		v.add(Problem{Check: CheckLog, Path: v.rel(dir), Row: -1, Message: "cannot read the log: " + err.Error(),
			Remedy: findings.Recover, Fix: ", which repairs the log and writes what it holds"})
		return
	}
	defer r.Close()
	var n int64
	for r.Next() {
		n++
	}
	if n > 0 {
		v.add(Problem{Check: CheckLog, Path: v.rel(dir), Row: -1,
			Message: fmt.Sprintf("the log holds %d records: a recorder did not close cleanly (crash or kill), so episodes and sessions may be missing or unfinished", n),
			Remedy:  findings.Recover, Fix: " to write them"})
	}
	err = r.Err()
	switch {
	case err == nil:
	case errors.As(err, &ce) && ce.Torn:
		v.add(Problem{Check: CheckLog, Path: v.rel(ce.Segment), Row: -1,
			Message: fmt.Sprintf("the log ends in a torn tail at offset %d (%v), as a crash leaves it", ce.Offset, ce.Err),
			Remedy:  findings.Recover, Fix: ": it cuts the tail (none of it was synced) and writes the rest"})
	case errors.As(err, &ce):
		v.add(Problem{Check: CheckLog, Path: v.rel(ce.Segment), Row: -1,
			Message: fmt.Sprintf("the log is corrupt at offset %d (%v): damage to records that were durable", ce.Offset, ce.Err),
			Remedy:  findings.Salvage, Fix: ": it drops the damaged records and keeps every intact one around them"})
	default:
		v.add(Problem{Check: CheckLog, Path: v.rel(dir), Row: -1, Message: "cannot read the log: " + err.Error(),
			Remedy: findings.Recover, Fix: " once the permissions of ROOT/_rlrec/log let it be read"})
	}
}
