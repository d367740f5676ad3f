package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// FS is the Store of a ROOT on a file system (see the package doc).
type FS struct {
	fsys vfs.FS
	root string
}

var _ Store = (*FS)(nil)

// NewFS returns the store of root on fsys.
func NewFS(fsys vfs.FS, root string) *FS { return &FS{fsys: fsys, root: root} }

// Next implements Store. A missing partition has no parts.
func (s *FS) Next(p hive.Partition) (int, error) { return nextPart(s.fsys, p.Dir(s.root)) }

func nextPart(fsys vfs.FS, dir string) (int, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("store: list %s: %w", dir, err)
	}
	next := 0
	for _, e := range entries {
		if n, _, ok := hive.ParsePartName(e.Name()); ok && n >= next {
			next = n + 1
		}
	}
	return next, nil
}

// Create implements Store: it creates the partition's directory and its
// missing parents without syncing anything (Sync does, for the group).
func (s *FS) Create(p hive.Partition, n int) (Part, error) {
	dir := p.Dir(s.root)
	if err := s.fsys.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("store: create directory %s: %w", dir, err)
	}
	if n < 0 {
		var err error
		if n, err = nextPart(s.fsys, dir); err != nil {
			return nil, err
		}
	}
	final := filepath.Join(dir, hive.PartName(n))
	if _, err := s.fsys.Stat(final); err == nil {
		return nil, fmt.Errorf("store: create %s: %w", final, ErrExists)
	}
	return s.open(p, dir, n)
}

// CreateNew implements Store with one mkdir(2) and one file creation: a
// directory this call made is empty (the ROOT lock keeps other writers
// out), so its part is 0 without listing it or looking the name up, where
// Create with Next costs a listing, the stats of MkdirAll and one of the
// final name. The parents are made only when missing (the first episode
// of a recording).
func (s *FS) CreateNew(p hive.Partition) (Part, error) {
	dir := p.Dir(s.root)
	err := vfs.Mkdir(s.fsys, dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err = s.fsys.MkdirAll(filepath.Dir(dir)); err == nil {
			err = vfs.Mkdir(s.fsys, dir)
		}
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("store: create directory %s: %w", dir, ErrPartitionExists)
	case err != nil:
		return nil, fmt.Errorf("store: create directory %s: %w", dir, err)
	}
	return s.open(p, dir, 0)
}

// open creates the temp file of part n of p, in its directory dir.
func (s *FS) open(p hive.Partition, dir string, n int) (Part, error) {
	fp := &filePart{s: s, dir: dir, tmp: filepath.Join(dir, hive.TempName(n)), final: filepath.Join(dir, hive.PartName(n)), rel: p.File(n)}
	var err error
	if fp.f, err = s.fsys.Create(fp.tmp); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", fp.tmp, err)
	}
	return fp, nil
}

// filePart is a Part of FS. It is not safe for concurrent use.
type filePart struct {
	s          *FS
	dir        string
	tmp, final string
	rel        string
	f          vfs.File
	finished   bool // closed by Finish, not yet renamed
	synced     bool // made durable under its temp name by Sync
	done       bool // published or aborted
}

func (p *filePart) Write(b []byte) (int, error) {
	if p.done || p.finished {
		return 0, ErrClosed
	}
	n, err := p.f.Write(b)
	if err != nil {
		return n, fmt.Errorf("store: write %s: %w", p.tmp, err)
	}
	return n, nil
}

func (p *filePart) Name() string { return p.tmp }
func (p *filePart) Rel() string  { return p.rel }

// Finish closes the temp file without syncing it.
func (p *filePart) Finish() error {
	if p.done || p.finished {
		return ErrClosed
	}
	if err := p.f.Close(); err != nil {
		p.done = true
		p.s.fsys.Remove(p.tmp)
		return fmt.Errorf("store: close %s: %w", p.tmp, err)
	}
	p.finished = true
	return nil
}

// Abort closes and removes the temp file. It is a no-op once published or
// aborted.
func (p *filePart) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	var cerr error
	if !p.finished {
		cerr = p.f.Close()
	}
	p.finished = false
	if err := p.s.fsys.Remove(p.tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("store: remove %s: %w", p.tmp, err)
	}
	if cerr != nil {
		return fmt.Errorf("store: close %s: %w", p.tmp, cerr)
	}
	return nil
}

// own returns the parts as this store's.
func (s *FS) own(parts []Part) ([]*filePart, error) {
	out := make([]*filePart, len(parts))
	for i, p := range parts {
		fp, ok := p.(*filePart)
		if !ok || fp.s != s {
			return nil, fmt.Errorf("store: %s: %w", p.Name(), errForeign)
		}
		out[i] = fp
	}
	return out, nil
}

// Sync implements Store: one sync of the file system holding ROOT (every
// part must be on it), where a file sync and a directory sync per part
// would cost a few fsyncs each. On an error that is not a *GroupError
// every part is aborted.
func (s *FS) Sync(parts []Part) error {
	fps, err := s.own(parts)
	if err != nil {
		return err
	}
	for _, p := range fps {
		if p.done || !p.finished {
			abortAll(fps)
			return fmt.Errorf("store: commit %s: %w", p.tmp, errNotFinished)
		}
	}
	if len(fps) == 0 {
		return nil
	}
	if err := s.fsys.SyncFS(s.root); err != nil {
		ferr := fmt.Errorf("store: sync the file system of %s before committing %d files: %w", s.root, len(fps), err)
		ge, err := s.syncEach(fps, ferr, true)
		if err != nil {
			abortAll(fps)
			return err
		}
		if ge != nil {
			for _, pe := range ge.Parts {
				pe.Part.Abort()
			}
			for _, p := range fps {
				if !p.done {
					p.synced = true
				}
			}
			return ge
		}
	}
	for _, p := range fps {
		p.synced = true
	}
	return nil
}

// syncEach syncs every part on its own after the file-system sync failed
// with ferr: its temp file (when file is set: data not yet durable) and
// the directories from its own up to ROOT, each once. A failing directory
// directly under ROOT, or ROOT itself, is every part's: it is returned as
// the error.
func (s *FS) syncEach(parts []*filePart, ferr error, file bool) (*GroupError, error) {
	root := filepath.Clean(s.root)
	dirs := map[string]error{}
	syncDir := func(d string) error {
		err, ok := dirs[d]
		if !ok {
			err = s.fsys.SyncDir(d)
			if err != nil {
				err = fmt.Errorf("store: sync directory %s: %w", d, err)
			}
			dirs[d] = err
		}
		return err
	}
	var ge *GroupError
	for _, p := range parts {
		var err error
		if file {
			err = syncFile(s.fsys, p.tmp)
		}
		for d := filepath.Clean(p.dir); err == nil; d = filepath.Dir(d) {
			if derr := syncDir(d); derr != nil {
				if d == root || filepath.Dir(d) == root {
					return nil, fmt.Errorf("%w (then, syncing each file: %w)", ferr, derr)
				}
				err = derr
			}
			if d == root || filepath.Dir(d) == d || !strings.HasPrefix(d, root) {
				break
			}
		}
		if err != nil {
			if ge == nil {
				ge = &GroupError{Sync: ferr}
			}
			ge.Parts = append(ge.Parts, &PartError{Part: p, Path: errPath(err, p.tmp), Err: err})
		}
	}
	return ge, nil
}

// syncFile syncs a closed file's data.
func syncFile(fsys vfs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return fmt.Errorf("store: open %s to sync it: %w", name, err)
	}
	err = f.Sync()
	cerr := f.Close()
	if err != nil {
		return fmt.Errorf("store: sync %s: %w", name, err)
	}
	if cerr != nil {
		return fmt.Errorf("store: close %s: %w", name, cerr)
	}
	return nil
}

// Publish implements Store. A part whose rename fails keeps its temp
// name: it is durable, and a caller that recorded the group before
// publishing it publishes it after a restart (PublishTemp); the others
// are renamed all the same. Those renamed are complete under their final
// names; a failed file-system sync is retried directory by directory.
func (s *FS) Publish(parts []Part) error {
	fps, err := s.own(parts)
	if err != nil {
		return err
	}
	for _, p := range fps {
		if !p.synced || p.done {
			return fmt.Errorf("store: publish %s: %w", p.tmp, errNotFinished)
		}
	}
	var ge *GroupError
	var renamed []*filePart
	for _, p := range fps {
		p.finished, p.done = false, true
		if err := renameNoReplace(s.fsys, p.tmp, p.final); err != nil {
			if ge == nil {
				ge = &GroupError{}
			}
			ge.Parts = append(ge.Parts, &PartError{Part: p, Path: p.final, Err: err})
			continue
		}
		renamed = append(renamed, p)
	}
	if len(renamed) > 0 {
		if err := s.fsys.SyncFS(s.root); err != nil {
			ferr := fmt.Errorf("store: sync the file system of %s after committing %d files: %w", s.root, len(renamed), err)
			each, err := s.syncEach(renamed, ferr, false)
			if err != nil {
				return err
			}
			if each != nil {
				if ge == nil {
					ge = &GroupError{}
				}
				ge.Sync = ferr
				ge.Parts = append(ge.Parts, each.Parts...)
			}
		}
	}
	if ge != nil {
		return ge
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
		return fmt.Errorf("store: publish %s: %w: %s", tmp, ErrExists, final)
	}
	return fmt.Errorf("store: rename %s to %s: %w", tmp, filepath.Base(final), err)
}

// PublishTemp implements Store; call SyncAll afterwards.
func (s *FS) PublishTemp(dir string, n int) error {
	d := filepath.Join(s.root, filepath.FromSlash(dir))
	return renameNoReplace(s.fsys, filepath.Join(d, hive.TempName(n)), filepath.Join(d, hive.PartName(n)))
}

// RemoveTemp implements Store; call SyncAll afterwards.
func (s *FS) RemoveTemp(rel string) error {
	name := filepath.Join(s.root, filepath.FromSlash(rel))
	if err := s.fsys.Remove(name); err != nil {
		return fmt.Errorf("store: remove %s: %w", name, err)
	}
	return nil
}

// SyncAll implements Store.
func (s *FS) SyncAll() error {
	if err := s.fsys.SyncFS(s.root); err != nil {
		return fmt.Errorf("store: sync the file system of %s: %w", s.root, err)
	}
	return nil
}

func abortAll(parts []*filePart) {
	for _, p := range parts {
		p.Abort()
	}
}

// errPath returns the path an I/O error names, or def.
func errPath(err error, def string) string {
	var pe *fs.PathError
	var ie *vfs.InjectedError
	switch {
	case errors.As(err, &ie):
		return ie.Name
	case errors.As(err, &pe):
		return pe.Path
	}
	return def
}
