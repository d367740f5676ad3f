package vfs

import (
	"errors"
	"path/filepath"
	"testing"
)

// TestMemSyncFS checks that SyncFS makes every file's contents and every
// directory entry durable, and nothing written after it.
func TestMemSyncFS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, m *MemFS) // before SyncFS
		after func(t *testing.T, m *MemFS) // after SyncFS
		want  []string
	}{
		{
			name: "unsynced files and renames become durable",
			setup: func(t *testing.T, m *MemFS) {
				m.MkdirAll("r/a/b")
				writeFile(t, m, "r/a/b/.x.tmp", "xx", false)
				writeFile(t, m, "r/a/y", "yy", false)
				if err := m.Rename("r/a/b/.x.tmp", "r/a/b/x"); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{"r/a/", "r/a/b/", "r/a/b/x=xx", "r/a/y=yy"},
		},
		{
			name: "removals become durable",
			setup: func(t *testing.T, m *MemFS) {
				m.MkdirAll("r")
				writeFile(t, m, "r/gone", "g", true)
				m.SyncDir("r")
				if err := m.Remove("r/gone"); err != nil {
					t.Fatal(err)
				}
			},
			want: nil,
		},
		{
			name: "what follows SyncFS is not durable",
			setup: func(t *testing.T, m *MemFS) {
				m.MkdirAll("r")
				writeFile(t, m, "r/.x.tmp", "xx", false)
			},
			after: func(t *testing.T, m *MemFS) {
				f, err := m.OpenAppend("r/.x.tmp")
				if err != nil {
					t.Fatal(err)
				}
				f.Write([]byte("more"))
				f.Close()
				if err := m.Rename("r/.x.tmp", "r/x"); err != nil {
					t.Fatal(err)
				}
				writeFile(t, m, "r/new", "n", false)
			},
			want: []string{"r/.x.tmp=xx"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMem()
			tc.setup(t, m)
			if err := m.SyncFS("r"); err != nil {
				t.Fatal(err)
			}
			if tc.after != nil {
				tc.after(t, m)
			}
			if got := listing(t, m.Crash(), "r"); !equal(got, tc.want) {
				t.Fatalf("after crash: %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMemSyncFSMissing(t *testing.T) {
	if err := NewMem().SyncFS(filepath.Join("no", "such")); err == nil {
		t.Fatal("SyncFS of a missing path succeeded")
	}
}

// TestInjectSyncFS checks that an injected SyncFS failure does not run the
// sync, so a crash loses what it would have made durable.
func TestInjectSyncFS(t *testing.T) {
	m := NewMem()
	tr := FailAt(1, OpSyncFS)
	fsys := WithErrors(m, tr)
	fsys.MkdirAll("r")
	writeFile(t, fsys, "r/x", "x", false)
	if err := fsys.SyncFS("r"); !errors.Is(err, ErrInjected) {
		t.Fatalf("first SyncFS: %v, want the injected error", err)
	}
	if got := listing(t, m.Crash(), "r"); !equal(got, nil) {
		t.Fatalf("after a failed SyncFS and a crash: %q", got)
	}
	if err := fsys.SyncFS("r"); err != nil {
		t.Fatalf("second SyncFS: %v", err)
	}
	if got := listing(t, m.Crash(), "r"); !equal(got, []string{"r/x=x"}) {
		t.Fatalf("after SyncFS and a crash: %q", got)
	}
	if tr.Seen() != 2 || OpSyncFS.String() != "syncfs" {
		t.Fatalf("seen %d SyncFS calls (want 2), name %q", tr.Seen(), OpSyncFS)
	}
}

func TestOSSyncFS(t *testing.T) {
	dir := t.TempDir()
	fsys := OS()
	writeFile(t, fsys, filepath.Join(dir, "x"), "x", false)
	if err := fsys.SyncFS(dir); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncFS(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("SyncFS of a missing path succeeded")
	}
}
