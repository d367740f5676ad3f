package vfs

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// MemFS is an in-memory FS, safe for concurrent use, that can simulate a
// power cut.
//
// Crash model. MemFS keeps, next to the current state that every operation
// sees, the state a power cut would leave:
//   - a file's durable contents are its contents as of its last File.Sync
//     (a file never synced is empty after a crash); writes, truncations and
//     appends after that Sync are lost, all of them, never a part;
//   - a directory's durable entries (files and directories created,
//     renamed in or out, or removed) are its entries as of the last SyncDir
//     of that directory; so a renamed file is found under its old name
//     after a crash unless the new parent was synced after the rename (and
//     under both names if only the new parent was synced, like a hard
//     link);
//   - SyncFS does both for the whole file system: every file's contents
//     and every directory's entries become durable;
//   - directories made by MkdirAll are durable at once (a simplification:
//     the recorder never depends on losing a fresh directory);
//   - locks do not survive: the crashed process held them.
//
// Crash returns that durable state as a new MemFS and leaves the receiver
// as it was, so a test can keep both. Open files are not carried over.
type MemFS struct {
	mu    sync.Mutex
	root  *memNode
	locks map[string]bool
}

// NewMem returns an empty in-memory file system.
func NewMem() *MemFS {
	return &MemFS{root: newDirNode(), locks: make(map[string]bool)}
}

type memNode struct {
	dir bool
	mod time.Time

	// directories
	children map[string]*memNode // current entries
	durable  map[string]*memNode // entries as of the last SyncDir

	// files
	data   []byte
	synced []byte // contents as of the last Sync
	// shared reports that synced aliases data's backing array, which must
	// then be copied before bytes below len(synced) change.
	shared bool
}

func newDirNode() *memNode {
	return &memNode{dir: true, mod: time.Now(), children: map[string]*memNode{}, durable: map[string]*memNode{}}
}

// Crash returns the file system a power cut would leave now; see MemFS.
func (m *MemFS) Crash() *MemFS { return m.crash(nil) }

// CrashTorn is Crash with torn writes: a file that was only appended to
// since its last Sync keeps, beyond its synced contents, a random part of
// what was appended after it (as if some of its pages reached the disk),
// and in half of such files a random stretch of that part reads as zeroes
// (pages that did not). The choices come from seed, so a failure can be
// replayed.
func (m *MemFS) CrashTorn(seed uint64) *MemFS {
	rng := rand.New(rand.NewPCG(seed, 0x7043))
	return m.crash(func(synced, data []byte) []byte {
		if len(data) <= len(synced) || !bytes.Equal(data[:len(synced)], synced) {
			return synced
		}
		extra := data[len(synced):]
		keep := slices.Clone(extra[:rng.IntN(len(extra)+1)])
		if len(keep) > 0 && rng.IntN(2) == 0 {
			i := rng.IntN(len(keep))
			clear(keep[i : i+rng.IntN(len(keep)-i)+1])
		}
		return append(slices.Clone(synced), keep...)
	})
}

// crash builds the crashed file system; torn, when set, picks the durable
// contents of a file from its synced and current contents.
func (m *MemFS) crash(torn func(synced, data []byte) []byte) *MemFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make(map[*memNode]*memNode)
	var clone func(n *memNode) *memNode
	clone = func(n *memNode) *memNode {
		if c, ok := seen[n]; ok {
			return c
		}
		var c *memNode
		if n.dir {
			c = newDirNode()
			c.mod = n.mod
			seen[n] = c
			for name, child := range n.durable {
				cc := clone(child)
				c.children[name] = cc
				c.durable[name] = cc
			}
		} else {
			var data []byte
			if torn != nil {
				data = torn(n.synced, n.data)
			} else {
				data = slices.Clone(n.synced)
			}
			c = &memNode{mod: n.mod, data: data, synced: data, shared: true}
			seen[n] = c
		}
		return c
	}
	return &MemFS{root: clone(m.root), locks: make(map[string]bool)}
}

// split cleans name into its components; the root is no components.
// Relative and absolute names share one root.
func split(name string) []string {
	c := filepath.Clean(name)
	c = strings.TrimLeft(c, string(filepath.Separator))
	if c == "" || c == "." {
		return nil
	}
	return strings.Split(c, string(filepath.Separator))
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// walk returns the node at parts; m.mu must be held.
func (m *MemFS) walk(op, name string, parts []string) (*memNode, error) {
	n := m.root
	for _, p := range parts {
		if !n.dir {
			return nil, pathErr(op, name, syscall.ENOTDIR)
		}
		c, ok := n.children[p]
		if !ok {
			return nil, pathErr(op, name, fs.ErrNotExist)
		}
		n = c
	}
	return n, nil
}

// parent returns the directory holding name and name's base; m.mu must be
// held.
func (m *MemFS) parent(op, name string) (*memNode, string, error) {
	parts := split(name)
	if len(parts) == 0 {
		return nil, "", pathErr(op, name, fs.ErrInvalid)
	}
	d, err := m.walk(op, name, parts[:len(parts)-1])
	if err != nil {
		return nil, "", err
	}
	if !d.dir {
		return nil, "", pathErr(op, name, syscall.ENOTDIR)
	}
	return d, parts[len(parts)-1], nil
}

func (m *MemFS) Create(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("create", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.children[base]
	switch {
	case ok && n.dir:
		return nil, pathErr("create", name, syscall.EISDIR)
	case ok:
		n.setSize(0)
	default:
		n = &memNode{mod: time.Now()}
		d.children[base] = n
		d.mod = time.Now()
	}
	return &memFile{fs: m, n: n, name: name, read: true, write: true}, nil
}

func (m *MemFS) Open(name string) (File, error) {
	return m.open("open", name, false)
}

func (m *MemFS) OpenAppend(name string) (File, error) {
	return m.open("open", name, true)
}

func (m *MemFS) open(op, name string, appending bool) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk(op, name, split(name))
	if err != nil {
		return nil, err
	}
	if n.dir && appending {
		return nil, pathErr(op, name, syscall.EISDIR)
	}
	return &memFile{fs: m, n: n, name: name, read: true, write: appending, append: appending}, nil
}

func (m *MemFS) Rename(oldname, newname string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	od, obase, err := m.parent("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := od.children[obase]
	if !ok {
		return pathErr("rename", oldname, fs.ErrNotExist)
	}
	nd, nbase, err := m.parent("rename", newname)
	if err != nil {
		return err
	}
	if old, ok := nd.children[nbase]; ok {
		if old == n {
			return nil
		}
		if old.dir && (!n.dir || len(old.children) > 0) {
			return pathErr("rename", newname, syscall.EEXIST)
		}
		if !old.dir && n.dir {
			return pathErr("rename", newname, syscall.ENOTDIR)
		}
	}
	delete(od.children, obase)
	nd.children[nbase] = n
	od.mod, nd.mod = time.Now(), time.Now()
	return nil
}

func (m *MemFS) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	n, ok := d.children[base]
	if !ok {
		return pathErr("remove", name, fs.ErrNotExist)
	}
	if n.dir && len(n.children) > 0 {
		return pathErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(d.children, base)
	d.mod = time.Now()
	return nil
}

func (m *MemFS) MkdirAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.root
	for _, p := range split(name) {
		c, ok := n.children[p]
		if !ok {
			c = newDirNode()
			n.children[p] = c
			n.durable[p] = c
		} else if !c.dir {
			return pathErr("mkdir", name, syscall.ENOTDIR)
		}
		n = c
	}
	return nil
}

func (m *MemFS) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk("syncdir", name, split(name))
	if err != nil {
		return err
	}
	if !n.dir {
		return pathErr("syncdir", name, syscall.ENOTDIR)
	}
	n.durable = make(map[string]*memNode, len(n.children))
	for k, v := range n.children {
		n.durable[k] = v
	}
	return nil
}

// SyncFS makes every file's contents and every directory's entries durable,
// as syncfs(2) does for a real file system; name must exist.
func (m *MemFS) SyncFS(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, err := m.walk("syncfs", name, split(name)); err != nil {
		return err
	}
	seen := make(map[*memNode]bool)
	var sync func(n *memNode)
	sync = func(n *memNode) {
		if seen[n] {
			return
		}
		seen[n] = true
		if !n.dir {
			n.synced = n.data[:len(n.data):len(n.data)]
			n.shared = true
			return
		}
		n.durable = make(map[string]*memNode, len(n.children))
		for k, v := range n.children {
			n.durable[k] = v
			sync(v)
		}
	}
	sync(m.root)
	return nil
}

func (m *MemFS) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk("readdir", name, split(name))
	if err != nil {
		return nil, err
	}
	if !n.dir {
		return nil, pathErr("readdir", name, syscall.ENOTDIR)
	}
	out := make([]fs.DirEntry, 0, len(n.children))
	for k, v := range n.children {
		out = append(out, fs.FileInfoToDirEntry(v.info(k)))
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (m *MemFS) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.walk("stat", name, split(name))
	if err != nil {
		return nil, err
	}
	parts := split(name)
	base := "/"
	if len(parts) > 0 {
		base = parts[len(parts)-1]
	}
	return n.info(base), nil
}

// Lock locks name within this MemFS, creating the file if needed. The lock
// is in-process only: there is no other process that shares a MemFS.
func (m *MemFS) Lock(name string) (io.Closer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := filepath.Join(split(name)...)
	d, base, err := m.parent("lock", name)
	if err != nil {
		return nil, err
	}
	if n, ok := d.children[base]; ok && n.dir {
		return nil, pathErr("lock", name, syscall.EISDIR)
	} else if !ok {
		d.children[base] = &memNode{mod: time.Now()}
	}
	if m.locks[key] {
		return nil, fmt.Errorf("lock %s: %w", name, ErrLocked)
	}
	m.locks[key] = true
	return &memLock{fs: m, key: key}, nil
}

type memLock struct {
	fs   *MemFS
	key  string
	once sync.Once
}

func (l *memLock) Close() error {
	l.once.Do(func() {
		l.fs.mu.Lock()
		delete(l.fs.locks, l.key)
		l.fs.mu.Unlock()
	})
	return nil
}

// prepare makes bytes at and after off safe to change in place.
func (n *memNode) prepare(off int64) {
	if n.shared && off < int64(len(n.synced)) {
		n.synced = slices.Clone(n.synced)
		n.shared = false
	}
}

func (n *memNode) setSize(size int64) {
	cur := int64(len(n.data))
	switch {
	case size < cur:
		n.prepare(size)
		n.data = n.data[:size]
	case size > cur:
		n.prepare(cur)
		n.data = append(n.data, make([]byte, size-cur)...)
	}
	n.mod = time.Now()
}

func (n *memNode) writeAt(p []byte, off int64) {
	n.prepare(off)
	if end := off + int64(len(p)); end > int64(len(n.data)) {
		n.setSize(end)
	}
	copy(n.data[off:], p)
	n.mod = time.Now()
}

func (n *memNode) info(name string) fs.FileInfo {
	return memInfo{name: name, size: int64(len(n.data)), dir: n.dir, mod: n.mod}
}

type memInfo struct {
	name string
	size int64
	dir  bool
	mod  time.Time
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return i.mod }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}

type memFile struct {
	fs     *MemFS
	n      *memNode
	name   string
	pos    int64
	read   bool
	write  bool
	append bool
	closed bool
}

func (f *memFile) check(op string, write bool) error {
	if f.closed {
		return pathErr(op, f.name, fs.ErrClosed)
	}
	if write && !f.write {
		return pathErr(op, f.name, syscall.EBADF)
	}
	if f.n.dir && (write || op == "read") {
		return pathErr(op, f.name, syscall.EISDIR)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[f.pos:])
	f.pos += int64(k)
	return k, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("read", false); err != nil {
		return 0, err
	}
	if off < 0 {
		return 0, pathErr("readat", f.name, fs.ErrInvalid)
	}
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	k := copy(p, f.n.data[off:])
	if k < len(p) {
		return k, io.EOF
	}
	return k, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("write", true); err != nil {
		return 0, err
	}
	if f.append {
		f.pos = int64(len(f.n.data))
	}
	f.n.writeAt(p, f.pos)
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return pathErr("close", f.name, fs.ErrClosed)
	}
	f.closed = true
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("sync", false); err != nil {
		return err
	}
	if !f.n.dir {
		f.n.synced = f.n.data[:len(f.n.data):len(f.n.data)]
		f.n.shared = true
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("truncate", true); err != nil {
		return err
	}
	if size < 0 {
		return pathErr("truncate", f.name, fs.ErrInvalid)
	}
	f.n.setSize(size)
	return nil
}

func (f *memFile) Stat() (fs.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.check("stat", false); err != nil {
		return nil, err
	}
	return f.n.info(filepath.Base(f.name)), nil
}

func (f *memFile) Name() string { return f.name }
