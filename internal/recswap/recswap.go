// Package recswap replaces the files of whole recordings in a ROOT on
// disk by those a staging ROOT holds: 'rlrec ingest' resuming a recording
// the ROOT held in part derives all of its files again from the stream
// into a staging ROOT, then swaps them in.
//
// # What a reader sees
//
// A recording's files of one table live in one directory,
// TABLE/session_id=S/env_id=E. Each such directory is exchanged with the
// staged one in one atomic rename (Linux renameat2 RENAME_EXCHANGE), so a
// reader of a table sees either every old file of the recording or every
// new one, never a mix. The tables are exchanged in the order steps,
// episodes, logs, telemetry, sessions: the sessions row, the commit point
// of a recording, comes last, so a reader that sees the new sessions row
// sees the new files of every table. (Where the file system cannot
// exchange, the old directory is first moved aside, and a reader may for
// a moment find the table without the recording.)
//
// # Crash safety
//
// Before the first exchange, the plan is written durably (temp file,
// fsync, rename, fsync of its directory) to the journal,
// ROOT/_rlrec/resume/swap. Each of its lines names one directory to swap
// and the inode of the staged directory:
//
//	rlrec-swap 1                       (the first line; the format version)
//	<inode> <ROOT-relative directory>  (one line per directory, in order;
//	                                    inode 0: the staged side is empty,
//	                                    the live directory is moved out)
//
// The journal's format is part of the on-disk format: do not change it.
// Each exchange is made durable (fsync of both parent directories) before
// the next. Finish, run under the ROOT's lock before anything else writes,
// completes a swap a crash interrupted: a directory whose live inode is
// the planned one is done, any other is swapped. Then the staging ROOT,
// holding the old files, is removed, and the journal last.
package recswap

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// Dir is the directory under ROOT/_rlrec that holds a resume's staging
// ROOT and journal. Part of the on-disk format: do not change it.
const Dir = "resume"

// StageName and JournalName are the staging ROOT and the journal under
// Dir. Part of the on-disk format: do not change them.
const (
	StageName   = "stage"
	JournalName = "swap"
)

// journalHeader is the journal's first line (format version 1).
const journalHeader = "rlrec-swap 1"

// stopBefore, when not negative, makes finish stop (errStopped) before
// that many more swaps: the tests' crash in the middle of a swap.
var stopBefore = -1

var errStopped = errors.New("recswap: stopped (test)")

// tableOrder is the order the tables of a recording are swapped in: the
// sessions row, the recording's commit point, last.
var tableOrder = []string{schema.TableSteps, schema.TableEpisodes, schema.TableLogs, schema.TableTelemetry, schema.TableSessions}

// StageDir returns the staging ROOT of the ROOT directory root.
func StageDir(root string) string { return filepath.Join(root, hive.StateDir, Dir, StageName) }

func journalPath(root string) string { return filepath.Join(root, hive.StateDir, Dir, JournalName) }

// entry is one directory of the plan.
type entry struct {
	ino uint64
	rel string
}

// Replace swaps every table's directory of each recording in recs in the
// ROOT directory root with the one in the staging ROOT (StageDir), then
// removes the staging ROOT, which then holds the old files. The caller
// holds the ROOT's lock, and no recorder writes the recordings.
func Replace(root string, recs []hive.Recording) error {
	stage := StageDir(root)
	var plan []entry
	for _, rec := range recs {
		for _, table := range tableOrder {
			rel := hive.RecordingPartition(table, rec).Rel()
			ino, staged, err := inode(filepath.Join(stage, filepath.FromSlash(rel)))
			if err != nil {
				return err
			}
			_, live, err := inode(filepath.Join(root, filepath.FromSlash(rel)))
			if err != nil {
				return err
			}
			if !staged && !live {
				continue
			}
			plan = append(plan, entry{ino: ino, rel: rel})
		}
	}
	if err := writeJournal(root, plan); err != nil {
		return err
	}
	return finish(root, plan)
}

// Finish completes a swap a crash interrupted (the journal is there), or
// removes a staging ROOT that a resume left before it swapped anything.
// It reports whether it found a journal. The caller holds the ROOT's lock.
func Finish(root string) (bool, error) {
	plan, err := readJournal(root)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.RemoveAll(filepath.Join(root, hive.StateDir, Dir)); err != nil {
			return false, fmt.Errorf("remove the staging ROOT of an unfinished resume: %w", err)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, finish(root, plan)
}

// finish swaps each directory of plan that is not swapped yet, then
// removes the staging ROOT and the journal.
func finish(root string, plan []entry) error {
	stage := StageDir(root)
	for _, e := range plan {
		live := filepath.Join(root, filepath.FromSlash(e.rel))
		staged := filepath.Join(stage, filepath.FromSlash(e.rel))
		ino, haveLive, err := inode(live)
		if err != nil {
			return err
		}
		if (e.ino == 0 && !haveLive) || (e.ino != 0 && haveLive && ino == e.ino) {
			continue // done before a crash
		}
		if stopBefore == 0 {
			return errStopped
		}
		stopBefore--
		if e.ino == 0 {
			// Nothing staged: the live directory is moved out.
			if err := mkdirAll(filepath.Dir(staged)); err != nil {
				return err
			}
			if err := os.Rename(live, staged+".old"); err != nil {
				return fmt.Errorf("move %s out: %w", live, err)
			}
			if err := syncDirs(filepath.Dir(live), filepath.Dir(staged)); err != nil {
				return err
			}
			continue
		}
		if err := swap(live, staged, haveLive); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(stage); err != nil {
		return fmt.Errorf("remove the staging ROOT %s (it holds the replaced files): %w", stage, err)
	}
	if err := os.Remove(journalPath(root)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the swap journal: %w", err)
	}
	if err := syncDirs(filepath.Dir(journalPath(root))); err != nil {
		return err
	}
	return os.Remove(filepath.Dir(journalPath(root)))
}

// swap puts the staged directory at live: exchanged with the live one
// when there is one, renamed into place otherwise.
func swap(live, staged string, haveLive bool) error {
	if !haveLive {
		if err := mkdirAll(filepath.Dir(live)); err != nil {
			return err
		}
		if err := os.Rename(staged, live); err != nil {
			return fmt.Errorf("move %s into place: %w", staged, err)
		}
		return syncDirs(filepath.Dir(live), filepath.Dir(staged))
	}
	err := unix.Renameat2(unix.AT_FDCWD, staged, unix.AT_FDCWD, live, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		// No exchange here: the old directory goes aside first.
		aside := staged + ".old"
		if err := os.Rename(live, aside); err != nil {
			return fmt.Errorf("move %s aside: %w", live, err)
		}
		if err := os.Rename(staged, live); err != nil {
			return fmt.Errorf("move %s into place: %w", staged, err)
		}
		err = nil
	}
	if err != nil {
		return fmt.Errorf("exchange %s with %s: %w", live, staged, err)
	}
	return syncDirs(filepath.Dir(live), filepath.Dir(staged))
}

// inode returns the inode number of the directory dir, and false when
// there is none.
func inode(dir string) (uint64, bool, error) {
	info, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	if !info.IsDir() {
		return 0, false, fmt.Errorf("%s is no directory", dir)
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false, fmt.Errorf("%s: no inode number on this system", dir)
	}
	return st.Ino, true, nil
}

// mkdirAll creates dir and its missing parents, and syncs the parents of
// those it created.
func mkdirAll(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := mkdirAll(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return syncDirs(filepath.Dir(dir))
}

// syncDirs fsyncs each directory.
func syncDirs(dirs ...string) error {
	for _, d := range dirs {
		f, err := os.Open(d)
		if err != nil {
			return fmt.Errorf("sync directory %s: %w", d, err)
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync directory %s: %w", d, err)
		}
	}
	return nil
}

// writeJournal writes the plan durably: temp file, fsync, rename, fsync
// of its directory.
func writeJournal(root string, plan []entry) error {
	var b bytes.Buffer
	b.WriteString(journalHeader + "\n")
	for _, e := range plan {
		fmt.Fprintf(&b, "%d %s\n", e.ino, e.rel)
	}
	name := journalPath(root)
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("write the swap journal: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("write the swap journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync the swap journal: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the swap journal: %w", err)
	}
	if err := os.Rename(tmp, name); err != nil {
		return fmt.Errorf("write the swap journal: %w", err)
	}
	return syncDirs(filepath.Dir(name))
}

// readJournal reads the plan of the journal; os.ErrNotExist when there is
// none.
func readJournal(root string) ([]entry, error) {
	data, err := os.ReadFile(journalPath(root))
	if err != nil {
		return nil, err
	}
	plan, err := parseJournal(data)
	if err != nil {
		return nil, fmt.Errorf("swap journal %s: %w; the recordings it names may be half replaced: "+
			"ingest their stream into a new ROOT", journalPath(root), err)
	}
	return plan, nil
}

// parseJournal decodes a journal's bytes. A directory must be a table's
// recording directory: nothing outside the tables is ever moved.
func parseJournal(data []byte) ([]entry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() || sc.Text() != journalHeader {
		return nil, fmt.Errorf("does not begin %q", journalHeader)
	}
	var plan []entry
	for line := 2; sc.Scan(); line++ {
		n, rel, ok := strings.Cut(sc.Text(), " ")
		ino, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("line %d is not \"inode directory\"", line)
		}
		if !recordingDir(rel) {
			return nil, fmt.Errorf("line %d: %q is no recording's directory of a table", line, rel)
		}
		plan = append(plan, entry{ino: ino, rel: rel})
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		return nil, fmt.Errorf("ends inside a line")
	}
	return plan, sc.Err()
}

// recordingDir reports whether rel is a table's recording directory,
// TABLE/session_id=S/env_id=E, and nothing else.
func recordingDir(rel string) bool {
	segs := strings.Split(rel, "/")
	if len(segs) != 3 || rel != path.Clean(rel) || !slices.Contains(tableOrder, segs[0]) {
		return false
	}
	_, _, ok := hive.RecordingOf(rel)
	return ok
}
