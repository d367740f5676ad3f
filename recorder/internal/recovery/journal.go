package recovery

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
)

// The recovery journal, journal in a recorder's state directory
// (ROOT/_rlrec, or an s3:// ROOT's local log directory), holds the markers of the one
// group of files a recorder's recovery publishes: recovery writes no log,
// so the journal is where those markers are durable before the renames. It
// is written whole under a temp name, synced, renamed and its directory
// synced, and removed once recovery has emptied the log; an Open that finds
// it reads its markers with the log's (a crash during recovery). Its
// format is logrec's (logrec.AppendJournal); its name is
// hive.JournalName.
func journalPath(state string) string { return filepath.Join(state, hive.JournalName) }

// ErrCorruptJournal is returned by ReadJournal for a recovery journal
// (_rlrec/journal) that is damaged.
var ErrCorruptJournal = errors.New("recovery: damaged journal")

// WriteJournal adds markers to the journal in the state directory
// state, durably.
func WriteJournal(fsys vfs.FS, state string, markers [][]byte) error {
	old, err := ReadJournal(fsys, state)
	if err != nil {
		return err
	}
	b := logrec.AppendJournal(nil, append(old, markers...))
	if err := store.WriteState(fsys, state, hive.JournalName, b); err != nil {
		return fmt.Errorf("write recovery journal: %w", err)
	}
	return nil
}

// ReadJournal returns the markers of the journal in the state directory
// state, none when there is none; a damaged journal is ErrCorruptJournal.
func ReadJournal(fsys vfs.FS, state string) ([][]byte, error) {
	name := journalPath(state)
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read recovery journal: %w", err)
	}
	b, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read recovery journal %s: %w", name, err)
	}
	out, err := logrec.ParseJournal(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w; it lists the files recovery was publishing: move it aside, recover the ROOT again and verify it", name, ErrCorruptJournal, err)
	}
	return out, nil
}

// RemoveJournal removes the journal in the state directory state once
// the log it stands beside is empty.
func RemoveJournal(fsys vfs.FS, state string) error {
	if err := fsys.Remove(journalPath(state)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove recovery journal: %w", err)
	}
	if err := fsys.SyncDir(state); err != nil {
		return fmt.Errorf("sync %s: %w", state, err)
	}
	return nil
}

// The open marker, open in the state directory (ROOT/_rlrec), exists while a recorder may have
// files under temp names in ROOT: Open creates it (durably) before
// anything is written (MarkOpen) and a clean Close removes it last
// (MarkClosed). An Open that
// finds it knows the previous recorder stopped without closing, and looks
// for the temp files it left even when its log is empty (a crash before
// the log's first sync). Its name is hive.OpenMarkerName.

// MarkOpen creates the open marker in the state directory state and
// reports whether it was there.
func MarkOpen(fsys vfs.FS, state string) (bool, error) {
	name := filepath.Join(state, hive.OpenMarkerName)
	if _, err := fsys.Stat(name); err == nil {
		return true, nil
	}
	f, err := fsys.Create(name)
	if err != nil {
		return false, fmt.Errorf("create %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("close %s: %w", name, err)
	}
	if err := fsys.SyncDir(state); err != nil {
		return false, fmt.Errorf("sync %s: %w", state, err)
	}
	return false, nil
}

// MarkClosed removes the open marker in the state directory state after
// a clean Close.
func MarkClosed(fsys vfs.FS, state string) error {
	if err := fsys.Remove(filepath.Join(state, hive.OpenMarkerName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", hive.OpenMarkerName, err)
	}
	return fsys.SyncDir(state)
}
