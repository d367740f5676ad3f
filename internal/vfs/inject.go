package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync/atomic"
)

// Op names a kind of file-system operation, for error injection. Op values
// are never persisted.
type Op int

// The operations an Injector sees.
const (
	OpCreate Op = iota + 1
	OpOpen
	OpOpenAppend
	OpRename
	OpRemove
	OpMkdirAll
	OpSyncDir
	OpReadDir
	OpStat
	OpLock
	OpRead // File.Read and File.ReadAt
	OpWrite
	OpSync
	OpTruncate
	OpFileStat
	OpClose
	OpSyncFS Op = 17
	opLimit  Op = 18
)

var opNames = [...]string{
	OpCreate: "create", OpOpen: "open", OpOpenAppend: "open-append", OpRename: "rename",
	OpRemove: "remove", OpMkdirAll: "mkdir", OpSyncDir: "syncdir", OpReadDir: "readdir",
	OpStat: "stat", OpLock: "lock", OpRead: "read", OpWrite: "write", OpSync: "sync",
	OpTruncate: "truncate", OpFileStat: "file-stat", OpClose: "close",
	OpSyncFS: "syncfs",
}

func (o Op) String() string {
	if o > 0 && o < opLimit {
		return opNames[o]
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// Injector decides whether an operation fails. Inject is called before the
// operation with its kind and path; a non-nil error is returned instead of
// running it (for a short write, see InjectedError.Short). Injectors must
// be safe for concurrent use.
type Injector interface {
	Inject(op Op, name string) error
}

// InjectedError is the error an injected failure returns. It wraps
// ErrInjected.
type InjectedError struct {
	Op   Op
	Name string
	N    int64 // the 1-based count of the failing operation among those matched
	// Short makes a failing Write write the first half of its bytes before
	// it returns the error, like a disk that filled up mid-write.
	Short bool
}

func (e *InjectedError) Error() string {
	return fmt.Sprintf("%s %s: injected error (operation %d)", e.Op, e.Name, e.N)
}

func (e *InjectedError) Unwrap() error { return ErrInjected }

// Trigger is an Injector that fails the k-th operation among those it
// matches, or every one from the k-th on. Make one with FailAt or FailFrom.
type Trigger struct {
	k      int64
	sticky bool
	mask   uint64 // bit per Op; zero matches every op
	short  bool
	seen   atomic.Int64
	fired  atomic.Int64
}

// FailAt fails only the k-th (1-based) operation of the given kinds (of any
// kind when none are given). k <= 0 never fails, which counts operations:
// see Seen.
func FailAt(k int64, ops ...Op) *Trigger { return newTrigger(k, false, ops) }

// FailFrom fails the k-th (1-based) operation of the given kinds and every
// later one.
func FailFrom(k int64, ops ...Op) *Trigger { return newTrigger(k, true, ops) }

func newTrigger(k int64, sticky bool, ops []Op) *Trigger {
	t := &Trigger{k: k, sticky: sticky}
	for _, o := range ops {
		t.mask |= 1 << uint(o)
	}
	return t
}

// ShortWrites makes failing Writes write half their bytes first.
func (t *Trigger) ShortWrites() *Trigger { t.short = true; return t }

// Seen returns how many matching operations the trigger has seen.
func (t *Trigger) Seen() int64 { return t.seen.Load() }

// Fired returns how many errors the trigger has injected.
func (t *Trigger) Fired() int64 { return t.fired.Load() }

// Inject implements Injector.
func (t *Trigger) Inject(op Op, name string) error {
	if t.mask != 0 && t.mask&(1<<uint(op)) == 0 {
		return nil
	}
	n := t.seen.Add(1)
	if t.k <= 0 || n < t.k || (n > t.k && !t.sticky) {
		return nil
	}
	t.fired.Add(1)
	return &InjectedError{Op: op, Name: name, N: n, Short: t.short && op == OpWrite}
}

// WithErrors returns fsys with errors injected by inj. Every FS and File
// operation asks inj first; files opened through it are wrapped too.
func WithErrors(fsys FS, inj Injector) FS { return &errFS{fs: fsys, inj: inj} }

type errFS struct {
	fs  FS
	inj Injector
}

func (e *errFS) wrap(f File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return &errFile{f: f, inj: e.inj}, nil
}

func (e *errFS) Create(name string) (File, error) {
	if err := e.inj.Inject(OpCreate, name); err != nil {
		return nil, err
	}
	return e.wrap(e.fs.Create(name))
}

func (e *errFS) Open(name string) (File, error) {
	if err := e.inj.Inject(OpOpen, name); err != nil {
		return nil, err
	}
	return e.wrap(e.fs.Open(name))
}

func (e *errFS) OpenAppend(name string) (File, error) {
	if err := e.inj.Inject(OpOpenAppend, name); err != nil {
		return nil, err
	}
	return e.wrap(e.fs.OpenAppend(name))
}

func (e *errFS) Rename(oldname, newname string) error {
	if err := e.inj.Inject(OpRename, oldname); err != nil {
		return err
	}
	return e.fs.Rename(oldname, newname)
}

func (e *errFS) Remove(name string) error {
	if err := e.inj.Inject(OpRemove, name); err != nil {
		return err
	}
	return e.fs.Remove(name)
}

func (e *errFS) MkdirAll(name string) error {
	if err := e.inj.Inject(OpMkdirAll, name); err != nil {
		return err
	}
	return e.fs.MkdirAll(name)
}

func (e *errFS) SyncDir(name string) error {
	if err := e.inj.Inject(OpSyncDir, name); err != nil {
		return err
	}
	return e.fs.SyncDir(name)
}

func (e *errFS) SyncFS(name string) error {
	if err := e.inj.Inject(OpSyncFS, name); err != nil {
		return err
	}
	return e.fs.SyncFS(name)
}

func (e *errFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := e.inj.Inject(OpReadDir, name); err != nil {
		return nil, err
	}
	return e.fs.ReadDir(name)
}

func (e *errFS) Stat(name string) (fs.FileInfo, error) {
	if err := e.inj.Inject(OpStat, name); err != nil {
		return nil, err
	}
	return e.fs.Stat(name)
}

func (e *errFS) Lock(name string) (io.Closer, error) {
	if err := e.inj.Inject(OpLock, name); err != nil {
		return nil, err
	}
	return e.fs.Lock(name)
}

type errFile struct {
	f   File
	inj Injector
}

func (e *errFile) Read(p []byte) (int, error) {
	if err := e.inj.Inject(OpRead, e.f.Name()); err != nil {
		return 0, err
	}
	return e.f.Read(p)
}

func (e *errFile) ReadAt(p []byte, off int64) (int, error) {
	if err := e.inj.Inject(OpRead, e.f.Name()); err != nil {
		return 0, err
	}
	return e.f.ReadAt(p, off)
}

func (e *errFile) Write(p []byte) (int, error) {
	if err := e.inj.Inject(OpWrite, e.f.Name()); err != nil {
		var ie *InjectedError
		if errors.As(err, &ie) && ie.Short && len(p) > 1 {
			n, werr := e.f.Write(p[:len(p)/2])
			if werr != nil {
				return n, werr
			}
			return n, err
		}
		return 0, err
	}
	return e.f.Write(p)
}

func (e *errFile) Sync() error {
	if err := e.inj.Inject(OpSync, e.f.Name()); err != nil {
		return err
	}
	return e.f.Sync()
}

func (e *errFile) Truncate(size int64) error {
	if err := e.inj.Inject(OpTruncate, e.f.Name()); err != nil {
		return err
	}
	return e.f.Truncate(size)
}

func (e *errFile) Stat() (fs.FileInfo, error) {
	if err := e.inj.Inject(OpFileStat, e.f.Name()); err != nil {
		return nil, err
	}
	return e.f.Stat()
}

// Close always closes the underlying file, so an injected close error
// leaks nothing.
func (e *errFile) Close() error {
	err := e.inj.Inject(OpClose, e.f.Name())
	cerr := e.f.Close()
	if err != nil {
		return err
	}
	return cerr
}

func (e *errFile) Name() string { return e.f.Name() }
