package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
)

// whatIsRoot is the sentence every refusal of a path that is no ROOT ends
// with.
var whatIsRoot = func() string {
	names := make([]string, len(hive.Tables))
	for i, t := range hive.Tables {
		names[i] = t.Name + "/"
	}
	return fmt.Sprintf("a ROOT is a directory rlrec recorded into ('rlrec demo --out DIR', 'rlrec ingest --out DIR'): "+
		"it holds %s/ (the recorder's state) or the table directories %s", hive.StateDir, strings.Join(names, ", "))
}()

// checkRoot returns nil when root is a ROOT: a directory that holds the
// recorder's state directory or a table directory. Otherwise the error says
// what root is instead (missing, a file, empty, a directory inside a ROOT)
// and what a ROOT is. It only reads.
//
// An s3://bucket/prefix ROOT is only parsed here: the bucket is listed by
// the command, and an empty prefix holds no recording.
func checkRoot(root string) error {
	if store.IsURL(root) {
		_, err := store.ParseURL(root)
		return err
	}
	info, err := os.Stat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist; check the path (%s)", root, whatIsRoot)
	case err != nil:
		return fmt.Errorf("cannot read %s: %v; check the path and its permissions", root, err)
	case !info.IsDir():
		return fmt.Errorf("%s is a file, not a ROOT directory (%s)", root, whatIsRoot)
	}
	ok, entries, err := isRoot(root)
	if err != nil {
		return fmt.Errorf("cannot list %s: %v; check its permissions", root, err)
	}
	if ok {
		return nil
	}
	what := "is not an rlrec ROOT"
	switch {
	case len(entries) == 0:
		what = "is an empty directory, not an rlrec ROOT"
	default:
		if parent := enclosingRoot(root); parent != "" {
			what = fmt.Sprintf("is a directory inside the ROOT %s, not a ROOT itself: give %s", parent, parent)
		}
	}
	return fmt.Errorf("%s %s (%s)", root, what, whatIsRoot)
}

// openRecorder opens a recorder on root: a directory, or an s3:// ROOT
// written through the S3 store (the standard AWS configuration chain)
// with its log and lock in the local directory logDir (stateDir), where
// it removes the spool files a killed recorder left (log says when it
// cannot). A ROOT
// another recorder holds is refused with what to do: the holder is
// another process (or another recorder of this one), whoever the user.
func openRecorder(ctx context.Context, log *slog.Logger, root, logDir string, opts ...recorder.Option) (*recorder.Recorder, error) {
	state, err := stateDir(root, logDir)
	if err != nil {
		return nil, err
	}
	var st *store.S3
	if store.IsURL(root) {
		// The store outlives a cancelled command: Close publishes.
		r, err := store.OpenRoot(context.WithoutCancel(ctx), vfs.OS(), root, store.S3Options{SpoolDir: filepath.Join(state, spoolDir)})
		if err != nil {
			return nil, err
		}
		st = r.(*store.S3)
		if err := os.MkdirAll(filepath.Join(state, spoolDir), 0o755); err != nil {
			return nil, fmt.Errorf("create the log directory of %s: %w; give another --log-dir", root, err)
		}
		opts = append(opts, recorder.WithStore(st, state))
	}
	rec, err := recorder.Open(root, opts...)
	if errors.Is(err, recorder.ErrLocked) {
		return nil, fmt.Errorf("%s is in use: another process is recording into it (it holds the lock %s); "+
			"wait for it to finish, or choose another directory", root, filepath.Join(state, hive.LockName))
	}
	if err == nil && st != nil {
		// Under the lock: the spool files of a process killed while it
		// held parts are nobody's.
		if err := st.RemoveStaleSpool(); err != nil {
			log.Warn("could not remove the spool files a killed recorder left; remove them by hand", "dir", filepath.Join(state, spoolDir), "err", err)
		}
	}
	return rec, err
}

// spoolDir is where, under an s3:// ROOT's log directory, the parts too
// large for memory wait for their upload.
const spoolDir = "spool"

// logDirFlag defines --log-dir, the local directory of an s3:// ROOT's
// log and lock.
func logDirFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "log-dir", *p, "the local `DIR` of the log and lock of an s3:// ROOT (default: one per ROOT URL under the user's cache directory, as 'rlrec inspect' shows it); a ROOT directory keeps them in ROOT/"+hive.StateDir)
}

// stateDir returns the directory of root's log and lock: ROOT/_rlrec for
// a directory, and for an s3:// ROOT logDir, or when it is empty the
// default of the ROOT's URL (store.DefaultStateDir). --log-dir with a
// directory ROOT is a usage error.
func stateDir(root, logDir string) (string, error) {
	if !store.IsURL(root) {
		if logDir != "" {
			return "", usagef("--log-dir is for an s3:// ROOT; the ROOT directory %s keeps its log in %s", root, filepath.Join(root, hive.StateDir))
		}
		return filepath.Join(root, hive.StateDir), nil
	}
	if logDir != "" {
		return logDir, nil
	}
	return store.DefaultStateDir(root)
}

// openRecordings opens the ROOT root and selects its recordings: all of
// them, or those --session and --env select (see selectRecordings). A ROOT that
// needs recovery is refused unless published (checkRecovered). A ROOT without a recording, or a session or env not in it, is an
// error saying what to do. The caller closes the Dataset.
func openRecordings(root, session, env string, published bool) (*dataset.Dataset, []dataset.Recording, error) {
	if err := checkRoot(root); err != nil {
		return nil, nil, err
	}
	if err := checkRecovered(root, published); err != nil {
		return nil, nil, err
	}
	d, err := dataset.Open(root)
	if err != nil {
		return nil, nil, err
	}
	recs, err := selectRecordings(d, selectBy(session, env))
	if err != nil {
		d.Close()
		return nil, nil, err
	}
	if len(recs) == 0 {
		d.Close()
		if st := findings.ReadState(root); st.LogRecords {
			if st.Writing {
				return nil, nil, fmt.Errorf("%s holds no finished recording yet: a recorder is writing it now; read it once the recorder has closed", root)
			}
			return nil, nil, fmt.Errorf("%s holds no published recording: %s", root, needsRecoveryText(root))
		}
		return nil, nil, fmt.Errorf("%s holds no recording; record into it first ('rlrec demo -o %s')", root, root)
	}
	return d, recs, nil
}

// isRoot reports whether dir holds the recorder's state directory or a
// table directory, and returns its entries.
func isRoot(dir string) (bool, []fs.DirEntry, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, nil, err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if e.Name() == hive.StateDir {
			return true, entries, nil
		}
		if _, ok := hive.Lookup(e.Name()); ok {
			return true, entries, nil
		}
	}
	return false, entries, nil
}

// enclosingRoot returns the nearest ROOT above dir when dir is a table or
// partition directory of it (at most hive.MaxDepth deep), or "".
func enclosingRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	for range hive.MaxDepth {
		parent := filepath.Dir(abs)
		if parent == abs {
			return ""
		}
		base := filepath.Base(abs)
		_, table := hive.Lookup(base)
		if !table && !strings.Contains(base, "=") {
			return ""
		}
		if ok, _, _ := isRoot(parent); ok && table {
			return relOrAbs(parent, dir)
		}
		abs = parent
	}
	return ""
}

// relOrAbs returns p relative to the directory the user named a path from
// (the working directory) when the user's path was relative.
func relOrAbs(p, given string) string {
	if filepath.IsAbs(given) {
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, p); err == nil {
		return rel
	}
	return p
}

// publishedFlag defines --published, with which a read command reads a
// ROOT whose log holds records recovery has not written out.
func publishedFlag(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "published", *p, "read what ROOT's files hold even when its log holds records 'rlrec recover' would add")
}

// checkRecovered is every read command's check of ROOT's log: when it
// holds records no recorder is writing out (a recorder crashed or was
// killed), the files lack what recovery would add, and the command stops
// saying so, unless published (--published): then it reads the files as
// they are.
func checkRecovered(root string, published bool) error {
	if published {
		return nil
	}
	if st := findings.ReadState(root); st.NeedsRecovery() {
		return fmt.Errorf("%s needs recovery: %s", root, needsRecoveryText(root))
	}
	return nil
}

// needsRecoveryText says what a ROOT that needs recovery lacks and what
// to do, the same words in every command.
func needsRecoveryText(root string) string {
	logDir := filepath.Join(root, hive.StateDir, hive.LogDir)
	if store.IsURL(root) {
		if d, err := store.DefaultStateDir(root); err == nil {
			logDir = filepath.Join(d, hive.LogDir)
		}
	}
	if st := findings.ReadState(root); st.LogLost != "" {
		return fmt.Sprintf("its log %s lacks what it expects (%s), so sessions and episodes may be missing or unfinished; "+
			"run 'rlrec recover %s' first, which names what is lost (and writes what is left with --salvage), or give --published to read only what its files hold now",
			logDir, st.LogLost, root)
	}
	return fmt.Sprintf("its log %s holds records a recorder never wrote out (it crashed or was killed), so sessions and episodes are missing or unfinished; "+
		"run 'rlrec recover %s' first, or give --published to read only what its files hold now",
		logDir, root)
}
