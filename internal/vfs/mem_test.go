package vfs

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sort"
	"testing"
)

func writeFile(t *testing.T, fsys FS, name, data string, sync bool) {
	t.Helper()
	f, err := fsys.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(fsys FS, name string) (string, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

// names lists every file under dir as "path=contents", sorted.
func listing(t *testing.T, fsys FS, dir string) []string {
	t.Helper()
	var out []string
	var walk func(string)
	walk = func(d string) {
		es, err := fsys.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			p := d + "/" + e.Name()
			if e.IsDir() {
				out = append(out, p+"/")
				walk(p)
				continue
			}
			s, err := readFile(fsys, p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p+"="+s)
		}
	}
	walk(dir)
	sort.Strings(out)
	return out
}

func TestMemCrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *MemFS)
		want  []string // listing of "d" after the crash
	}{
		{
			name:  "unsynced file and entry are lost",
			setup: func(t *testing.T, m *MemFS) { writeFile(t, m, "d/a", "x", false) },
			want:  nil,
		},
		{
			name: "synced data without directory sync is lost",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "x", true)
			},
			want: nil,
		},
		{
			name: "directory synced but data not: empty file",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "x", false)
				m.SyncDir("d")
			},
			want: []string{"d/a="},
		},
		{
			name: "data and directory synced",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "hello", true)
				m.SyncDir("d")
			},
			want: []string{"d/a=hello"},
		},
		{
			name: "writes after the last sync are dropped",
			setup: func(t *testing.T, m *MemFS) {
				f, _ := m.Create("d/a")
				f.Write([]byte("keep"))
				f.Sync()
				f.Write([]byte("lose"))
				m.SyncDir("d")
			},
			want: []string{"d/a=keep"},
		},
		{
			name: "overwrite after sync does not leak into the synced state",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "aaaa", true)
				m.SyncDir("d")
				f, _ := m.Create("d/a") // truncates
				f.Write([]byte("bb"))
			},
			want: []string{"d/a=aaaa"},
		},
		{
			name: "truncate after sync is dropped",
			setup: func(t *testing.T, m *MemFS) {
				f, _ := m.Create("d/a")
				f.Write([]byte("abcdef"))
				f.Sync()
				f.Truncate(2)
				f.Truncate(4)
				m.SyncDir("d")
			},
			want: []string{"d/a=abcdef"},
		},
		{
			name: "unsynced rename is undone",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a.tmp", "v", true)
				m.SyncDir("d")
				m.Rename("d/a.tmp", "d/a")
			},
			want: []string{"d/a.tmp=v"},
		},
		{
			name: "synced rename sticks",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a.tmp", "v", true)
				m.Rename("d/a.tmp", "d/a")
				m.SyncDir("d")
			},
			want: []string{"d/a=v"},
		},
		{
			name: "rename across directories with only the target synced shows both",
			setup: func(t *testing.T, m *MemFS) {
				m.MkdirAll("d/x")
				m.MkdirAll("d/y")
				writeFile(t, m, "d/x/f", "v", true)
				m.SyncDir("d/x")
				m.Rename("d/x/f", "d/y/f")
				m.SyncDir("d/y")
			},
			want: []string{"d/x/", "d/x/f=v", "d/y/", "d/y/f=v"},
		},
		{
			name: "unsynced remove is undone",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "v", true)
				m.SyncDir("d")
				m.Remove("d/a")
			},
			want: []string{"d/a=v"},
		},
		{
			name: "synced remove sticks",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "v", true)
				m.SyncDir("d")
				m.Remove("d/a")
				m.SyncDir("d")
			},
			want: nil,
		},
		{
			name: "append handle: synced prefix survives",
			setup: func(t *testing.T, m *MemFS) {
				writeFile(t, m, "d/a", "12", true)
				m.SyncDir("d")
				f, _ := m.OpenAppend("d/a")
				f.Write([]byte("34"))
				f.Sync()
				f.Write([]byte("56"))
			},
			want: []string{"d/a=1234"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMem()
			if err := m.MkdirAll("d"); err != nil {
				t.Fatal(err)
			}
			tc.setup(t, m)
			before := listing(t, m, "d")
			got := listing(t, m.Crash(), "d")
			if !equal(got, tc.want) {
				t.Fatalf("after crash %q, want %q", got, tc.want)
			}
			if after := listing(t, m, "d"); !equal(after, before) {
				t.Fatalf("Crash changed the receiver: %q, was %q", after, before)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestMemCrashTwice(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	writeFile(t, m, "d/a", "one", true)
	m.SyncDir("d")
	c := m.Crash()
	f, err := c.OpenAppend("d/a")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("two"))
	f.Sync()
	f.Write([]byte("three"))
	if got := listing(t, c.Crash(), "d"); !equal(got, []string{"d/a=onetwo"}) {
		t.Fatalf("second crash: %q", got)
	}
	if got, _ := readFile(m, "d/a"); got != "one" {
		t.Fatalf("original changed to %q", got)
	}
}

func TestMemErrors(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d/sub")
	writeFile(t, m, "d/f", "x", false)
	for _, tc := range []struct {
		name string
		op   func() error
		want error
	}{
		{"open missing", func() error { _, err := m.Open("d/nope"); return err }, fs.ErrNotExist},
		{"create in missing dir", func() error { _, err := m.Create("nope/f"); return err }, fs.ErrNotExist},
		{"remove missing", func() error { return m.Remove("d/nope") }, fs.ErrNotExist},
		{"rename missing", func() error { return m.Rename("d/nope", "d/x") }, fs.ErrNotExist},
		{"stat missing", func() error { _, err := m.Stat("d/nope"); return err }, fs.ErrNotExist},
		{"readdir missing", func() error { _, err := m.ReadDir("nope"); return err }, fs.ErrNotExist},
		{"syncdir missing", func() error { return m.SyncDir("nope") }, fs.ErrNotExist},
		{"remove non-empty dir", func() error { return m.Remove("d") }, nil},
		{"write to read-only", func() error {
			f, _ := m.Open("d/f")
			_, err := f.Write([]byte("y"))
			return err
		}, nil},
		{"use after close", func() error {
			f, _ := m.Open("d/f")
			f.Close()
			_, err := f.Read(make([]byte, 1))
			return err
		}, fs.ErrClosed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			if err == nil {
				t.Fatal("no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
		})
	}
}

func TestMemFileIO(t *testing.T) {
	m := NewMem()
	f, err := m.Create("f")
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("hello world"))
	buf := make([]byte, 5)
	if n, err := f.ReadAt(buf, 6); n != 5 || err != nil || string(buf) != "world" {
		t.Fatalf("ReadAt = %d %v %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 8); n != 3 || err != io.EOF {
		t.Fatalf("ReadAt past end = %d %v", n, err)
	}
	if err := f.Truncate(5); err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	if st.Size() != 5 || st.Name() != "f" || st.IsDir() {
		t.Fatalf("stat %v %v %v", st.Size(), st.Name(), st.IsDir())
	}
	f.Close()
	g, _ := m.OpenAppend("f")
	g.Write([]byte("!"))
	g.Close()
	if s, _ := readFile(m, "f"); s != "hello!" {
		t.Fatalf("contents %q", s)
	}
	if s, _ := readFile(m, "/f"); s != "hello!" {
		t.Fatalf("absolute path: %q", s)
	}
}

func TestMemConcurrent(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func() {
			defer func() { done <- struct{}{} }()
			f, err := m.Create("d/" + string(rune('a'+g)))
			if err != nil {
				t.Error(err)
				return
			}
			for i := 0; i < 100; i++ {
				f.Write([]byte{byte(i)})
				if i%10 == 0 {
					f.Sync()
					m.SyncDir("d")
					m.Crash()
				}
			}
			f.Close()
		}()
	}
	for g := 0; g < 4; g++ {
		<-done
	}
	es, _ := m.ReadDir("d")
	if len(es) != 4 {
		t.Fatalf("%d entries", len(es))
	}
	for _, e := range es {
		s, _ := readFile(m, "d/"+e.Name())
		if len(s) != 100 || !bytes.Equal([]byte(s)[:3], []byte{0, 1, 2}) {
			t.Fatalf("%s: %d bytes", e.Name(), len(s))
		}
	}
}

func TestMemCrashTorn(t *testing.T) {
	m := NewMem()
	m.MkdirAll("d")
	f, _ := m.Create("d/a")
	f.Write([]byte("synced|"))
	f.Sync()
	m.SyncDir("d")
	f.Write([]byte("unsynced-tail"))
	g, _ := m.Create("d/b") // rewritten after sync: not append-only
	g.Write([]byte("old"))
	g.Sync()
	m.SyncDir("d")
	g.Truncate(0)
	g.Write([]byte("new-longer"))
	lengths := map[int]bool{}
	zeroed := false
	for seed := uint64(0); seed < 200; seed++ {
		c := m.CrashTorn(seed)
		a, _ := readFile(c, "d/a")
		if len(a) < len("synced|") || a[:7] != "synced|" || len(a) > len("synced|unsynced-tail") {
			t.Fatalf("seed %d: a = %q", seed, a)
		}
		for i := 7; i < len(a); i++ {
			if a[i] == 0 {
				zeroed = true
			} else if a[i] != "synced|unsynced-tail"[i] {
				t.Fatalf("seed %d: a = %q holds bytes never written", seed, a)
			}
		}
		lengths[len(a)] = true
		if b, _ := readFile(c, "d/b"); b != "old" {
			t.Fatalf("seed %d: rewritten file b = %q, want its synced contents", seed, b)
		}
	}
	if len(lengths) < 5 || !zeroed {
		t.Fatalf("torn crashes are not varied: %d lengths, zeroes %v", len(lengths), zeroed)
	}
}
