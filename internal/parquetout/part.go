package parquetout

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// NextPart returns the number the next part file in dir gets: one more than
// the highest part file or temp file there, or 0. A missing dir has no
// parts.
func NextPart(fsys vfs.FS, dir string) (int, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("parquetout: list %s: %w", dir, err)
	}
	next := 0
	for _, e := range entries {
		if n, _, ok := hive.ParsePartName(e.Name()); ok && n >= next {
			next = n + 1
		}
	}
	return next, nil
}

// RemoveTemps removes the temp part files in dir, left behind by a process
// that crashed before committing them, and returns their names. Only call
// it while no writer is active in dir.
func RemoveTemps(fsys vfs.FS, dir string) ([]string, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("parquetout: list %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		if _, temp, ok := hive.ParsePartName(e.Name()); ok && temp {
			if err := fsys.Remove(filepath.Join(dir, e.Name())); err != nil {
				return removed, fmt.Errorf("parquetout: remove stale temp file: %w", err)
			}
			removed = append(removed, e.Name())
		}
	}
	if len(removed) > 0 {
		if err := fsys.SyncDir(dir); err != nil {
			return removed, fmt.Errorf("parquetout: sync %s: %w", dir, err)
		}
	}
	return removed, nil
}

// Part is a part file being written: its bytes go to a temp file in the
// partition directory, and Commit gives it its final name. A Part is not
// safe for concurrent use, and only one Part may be open per directory at a
// time (the recorder's ROOT lock guarantees one process; within it, the
// caller serialises writers of one partition).
type Part struct {
	fsys  vfs.FS
	dir   string
	tmp   string
	final string
	f     vfs.File
	// group: dir was created without syncing its parents, so the part can
	// only be committed with a file-system sync (CommitParts).
	group    bool
	finished bool // closed by Finish, not yet renamed
	synced   bool // made durable under its temp name by SyncParts
	done     bool
}

// CreatePart creates dir and its missing parents (making their entries
// durable before it returns), picks the next part number in dir, and opens
// its temp file for writing.
func CreatePart(fsys vfs.FS, dir string) (*Part, error) { return CreatePartAt(fsys, dir, -1) }

// CreatePartAt is CreatePart with an explicit part number n (n < 0 picks
// the next one). On Commit, part n replaces a file of the same number: the
// recorder numbers its writes deterministically so that a write redone
// after a crash replaces, never duplicates, the file it may have finished.
func CreatePartAt(fsys vfs.FS, dir string, n int) (*Part, error) {
	return createPart(fsys, dir, n, false)
}

// CreateGroupPartAt is CreatePartAt for group commit: it creates dir and its
// missing parents without syncing anything, which CommitParts's first
// file-system sync does for the whole group. Such a part must be finished
// with Finish and CommitParts; its Commit commits it as a group of one.
func CreateGroupPartAt(fsys vfs.FS, dir string, n int) (*Part, error) {
	return createPart(fsys, dir, n, true)
}

// CreateNewGroupPart is CreateGroupPartAt for part 0 of a directory the
// caller has just created, so holds empty (vfs.Mkdir returned nil, under
// the ROOT lock): it neither makes the directory nor looks for a file of
// the final name, which cannot be there; it costs one file creation.
// Publishing still refuses to replace (PublishParts).
func CreateNewGroupPart(fsys vfs.FS, dir string) (*Part, error) {
	return openPart(fsys, dir, 0, true)
}

func createPart(fsys vfs.FS, dir string, n int, group bool) (*Part, error) {
	if group {
		if err := fsys.MkdirAll(dir); err != nil {
			return nil, fmt.Errorf("parquetout: create directory %s: %w", dir, err)
		}
	} else if err := mkdirDurable(fsys, dir); err != nil {
		return nil, err
	}
	if n < 0 {
		var err error
		if n, err = NextPart(fsys, dir); err != nil {
			return nil, err
		}
	}
	final := filepath.Join(dir, hive.PartName(n))
	if _, err := fsys.Stat(final); err == nil {
		return nil, fmt.Errorf("parquetout: create %s: %w", final, ErrExists)
	}
	return openPart(fsys, dir, n, group)
}

// openPart opens the temp file of part n in dir.
func openPart(fsys vfs.FS, dir string, n int, group bool) (*Part, error) {
	var err error
	p := &Part{
		fsys:  fsys,
		dir:   dir,
		tmp:   filepath.Join(dir, hive.TempName(n)),
		final: filepath.Join(dir, hive.PartName(n)),
		group: group,
	}
	if p.f, err = fsys.Create(p.tmp); err != nil {
		return nil, fmt.Errorf("parquetout: create %s: %w", p.tmp, err)
	}
	return p, nil
}

// mkdirDurable creates dir and its missing parents, then syncs the parent of
// every directory it created, deepest first, so that a later file entry in
// dir cannot be lost with a directory entry above it.
func mkdirDurable(fsys vfs.FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; {
		_, err := fsys.Stat(d)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("parquetout: stat %s: %w", d, err)
		}
		created = append(created, d)
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("parquetout: create directory %s: %w", dir, err)
	}
	for _, d := range created {
		parent := filepath.Dir(d)
		if err := fsys.SyncDir(parent); err != nil {
			return fmt.Errorf("parquetout: sync directory %s: %w", parent, err)
		}
	}
	return nil
}

// Write appends to the temp file.
func (p *Part) Write(b []byte) (int, error) {
	if p.done {
		return 0, ErrClosed
	}
	n, err := p.f.Write(b)
	if err != nil {
		return n, fmt.Errorf("parquetout: write %s: %w", p.tmp, err)
	}
	return n, nil
}

// Path returns the final path the part gets on Commit.
func (p *Part) Path() string { return p.final }

// TempPath returns the path of the temp file.
func (p *Part) TempPath() string { return p.tmp }

// Commit makes the part durable under its final name: it syncs and closes
// the temp file, renames it, and syncs the directory. On error the temp file
// is removed (best effort) and the final name does not exist unless the
// rename itself went through and only the directory sync failed.
func (p *Part) Commit() error {
	if p.done || p.finished {
		return ErrClosed
	}
	if p.group {
		if err := p.Finish(); err != nil {
			return err
		}
		return CommitParts(p.fsys, p.dir, []*Part{p})
	}
	p.done = true
	if err := p.f.Sync(); err != nil {
		p.f.Close()
		p.fsys.Remove(p.tmp)
		return fmt.Errorf("parquetout: sync %s: %w", p.tmp, err)
	}
	if err := p.f.Close(); err != nil {
		p.fsys.Remove(p.tmp)
		return fmt.Errorf("parquetout: close %s: %w", p.tmp, err)
	}
	if err := renameNoReplace(p.fsys, p.tmp, p.final); err != nil {
		p.fsys.Remove(p.tmp)
		return err
	}
	if err := p.fsys.SyncDir(p.dir); err != nil {
		return fmt.Errorf("parquetout: sync directory %s after committing %s: %w", p.dir, filepath.Base(p.final), err)
	}
	return nil
}

// Finish closes the temp file without syncing it: the part is complete but
// not durable, and keeps its temp name until CommitParts.
func (p *Part) Finish() error {
	if p.done || p.finished {
		return ErrClosed
	}
	if err := p.f.Close(); err != nil {
		p.done = true
		p.fsys.Remove(p.tmp)
		return fmt.Errorf("parquetout: close %s: %w", p.tmp, err)
	}
	p.finished = true
	return nil
}

// CommitParts makes a group of finished parts (see Finish) durable under
// their final names: SyncParts, then PublishParts. A crash at any point
// leaves each part either under its temp name or complete under its final
// name. A caller that must record the group before it becomes visible
// (the recorder logs its markers) calls the two itself.
func CommitParts(fsys vfs.FS, syncRoot string, parts []*Part) error {
	if err := SyncParts(fsys, syncRoot, parts); err != nil {
		return err
	}
	return PublishParts(fsys, syncRoot, parts)
}

// SyncParts makes the data of a group of finished parts durable under
// their temp names, and every directory entry created for them, with one
// sync of the file system holding syncRoot (every part must be on it),
// where Commit takes a file sync and a directory sync per part. On error
// every part is aborted.
func SyncParts(fsys vfs.FS, syncRoot string, parts []*Part) error {
	for _, p := range parts {
		if p.done || !p.finished {
			abortAll(parts)
			return fmt.Errorf("parquetout: commit %s: %w", p.tmp, errNotFinished)
		}
	}
	if len(parts) == 0 {
		return nil
	}
	if err := fsys.SyncFS(syncRoot); err != nil {
		abortAll(parts)
		return fmt.Errorf("parquetout: sync the file system of %s before committing %d files: %w", syncRoot, len(parts), err)
	}
	for _, p := range parts {
		p.synced = true
	}
	return nil
}

// PublishParts gives every part of a synced group (SyncParts) its final
// name, refusing to replace an existing file (a published file is never
// rewritten: ErrExists), then syncs the file system so that the names are
// durable. On error the parts not yet renamed keep their temp names: they
// are durable, and a caller that recorded the group before publishing it
// publishes them after a restart (Publish). Those renamed are complete
// under their final names but, if the sync failed, their names may not be
// durable.
func PublishParts(fsys vfs.FS, syncRoot string, parts []*Part) error {
	for _, p := range parts {
		if !p.synced || p.done {
			return fmt.Errorf("parquetout: publish %s: %w", p.tmp, errNotFinished)
		}
	}
	for i, p := range parts {
		if err := renameNoReplace(p.fsys, p.tmp, p.final); err != nil {
			for _, q := range parts[i:] {
				q.finished, q.done = false, true
			}
			return err
		}
		p.finished, p.done = false, true
	}
	if len(parts) == 0 {
		return nil
	}
	if err := fsys.SyncFS(syncRoot); err != nil {
		return fmt.Errorf("parquetout: sync the file system of %s after committing %d files: %w", syncRoot, len(parts), err)
	}
	return nil
}

// renameNoReplace renames tmp to final unless final exists
// (vfs.RenameNoReplace: one renameat2 call on Linux). The ROOT lock keeps
// other writers out, so where it falls back to a check and a rename the
// two cannot race.
func renameNoReplace(fsys vfs.FS, tmp, final string) error {
	err := vfs.RenameNoReplace(fsys, tmp, final)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("parquetout: publish %s: %w: %s", tmp, ErrExists, final)
	}
	return fmt.Errorf("parquetout: rename %s to %s: %w", tmp, filepath.Base(final), err)
}

// Publish renames the temp file of part n in dir, synced by a writer that
// crashed before it could rename it, to its final name (see
// PublishParts); the caller syncs the file system afterwards.
func Publish(fsys vfs.FS, dir string, n int) error {
	return renameNoReplace(fsys, filepath.Join(dir, hive.TempName(n)), filepath.Join(dir, hive.PartName(n)))
}

func abortAll(parts []*Part) {
	for _, p := range parts {
		p.Abort()
	}
}

// Abort closes and removes the temp file. It is a no-op after Commit or a
// previous Abort.
func (p *Part) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	if p.finished {
		p.finished = false
		if err := p.fsys.Remove(p.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("parquetout: remove %s: %w", p.tmp, err)
		}
		return nil
	}
	cerr := p.f.Close()
	if err := p.fsys.Remove(p.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("parquetout: remove %s: %w", p.tmp, err)
	}
	if cerr != nil {
		return fmt.Errorf("parquetout: close %s: %w", p.tmp, cerr)
	}
	return nil
}
