package recorder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/vfs"
)

// The recovery journal, journal in the state directory (ROOT/_rlrec), holds the markers of the one
// group of files a recovery publishes (commit.go): recovery writes no log,
// so the journal is where those markers are durable before the renames. It
// is written whole under a temp name, synced, renamed and its directory
// synced, and removed once recovery has emptied the log; an Open that finds
// it reads its markers with the log's (a crash during recovery). Its
// format is logrec's (logrec.AppendJournal). Its name is part of the
// on-disk format: do not change it.
const journalName = "journal"

func journalPath(state string) string { return filepath.Join(state, journalName) }

// writeJournal adds markers to the journal in the state directory state,
// durably.
func writeJournal(fsys vfs.FS, state string, markers [][]byte) error {
	old, err := readJournal(fsys, state)
	if err != nil {
		return err
	}
	b := logrec.AppendJournal(nil, append(old, markers...))
	if err := writeDurable(fsys, state, journalName, b); err != nil {
		return fmt.Errorf("write recovery journal: %w", err)
	}
	return nil
}

// writeDurable writes a small file of the recorder's state whole: under
// the temp name .NAME.tmp in dir, synced, renamed to name, dir synced.
func writeDurable(fsys vfs.FS, dir, name string, b []byte) error {
	if err := vfs.WriteFile(fsys, filepath.Join(dir, "."+name+".tmp"), filepath.Join(dir, name), b); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// readJournal returns the markers of the journal, none when there is none.
func readJournal(fsys vfs.FS, state string) ([][]byte, error) {
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
		return nil, fmt.Errorf("%s: %w: %w; it lists the files recovery was publishing: move it aside and run 'rlrec recover' again, then 'rlrec verify'", name, ErrCorruptJournal, err)
	}
	return out, nil
}

// removeJournal removes the journal once the log it stands beside is
// empty.
func removeJournal(fsys vfs.FS, state string) error {
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
// anything is written and a clean Close removes it last. An Open that
// finds it knows the previous recorder stopped without closing, and looks
// for the temp files it left even when its log is empty (a crash before
// the log's first sync). Part of the on-disk format: do not change it.
const openMarkerName = "open"

// markOpen creates the open marker and reports whether it was there.
func (r *Recorder) markOpen() (bool, error) {
	state := r.state
	name := filepath.Join(state, openMarkerName)
	if _, err := r.fs.Stat(name); err == nil {
		return true, nil
	}
	f, err := r.fs.Create(name)
	if err != nil {
		return false, fmt.Errorf("open %s: create %s: %w", r.root, name, err)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("open %s: close %s: %w", r.root, name, err)
	}
	if err := r.fs.SyncDir(state); err != nil {
		return false, fmt.Errorf("open %s: sync %s: %w", r.root, state, err)
	}
	return false, nil
}

// markClosed removes the open marker after a clean Close.
func (r *Recorder) markClosed() error {
	state := r.state
	if err := r.fs.Remove(filepath.Join(state, openMarkerName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", openMarkerName, err)
	}
	return r.fs.SyncDir(state)
}
