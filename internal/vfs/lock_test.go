package vfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLock(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   func(t *testing.T) (FS, string)
	}{
		{"os", func(t *testing.T) (FS, string) { return OS(), t.TempDir() }},
		{"mem", func(t *testing.T) (FS, string) { m := NewMem(); m.MkdirAll("root"); return m, "root" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, dir := tc.fs(t)
			name := filepath.Join(dir, "LOCK")
			l1, err := fsys.Lock(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = fsys.Lock(name)
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("second Lock: %v, want ErrLocked", err)
			}
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the lock file", err)
			}
			if err := l1.Close(); err != nil {
				t.Fatal(err)
			}
			l2, err := fsys.Lock(name)
			if err != nil {
				t.Fatalf("Lock after release: %v", err)
			}
			l2.Close()
		})
	}
}

// TestLockOtherProcess runs this test binary again as a second process that
// tries to take a lock this process holds.
func TestLockOtherProcess(t *testing.T) {
	if name := os.Getenv("VFS_LOCK_CHILD"); name != "" {
		_, err := OS().Lock(name)
		if errors.Is(err, ErrLocked) {
			os.Exit(3)
		}
		os.Exit(4)
	}
	name := filepath.Join(t.TempDir(), "LOCK")
	l, err := OS().Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockOtherProcess$")
	cmd.Env = append(os.Environ(), "VFS_LOCK_CHILD="+name)
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("child process: %v, want exit status 3 (ErrLocked)", err)
	}
}

func TestOSRoundTrip(t *testing.T) {
	fsys := OS()
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	writeFile(t, fsys, filepath.Join(dir, "x.tmp"), "data", true)
	if err := fsys.Rename(filepath.Join(dir, "x.tmp"), filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenAppend(filepath.Join(dir, "x"))
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("+"))
	f.Close()
	if s, err := readFile(fsys, filepath.Join(dir, "x")); s != "data+" || err != nil {
		t.Fatalf("read %q %v", s, err)
	}
	es, err := fsys.ReadDir(dir)
	if err != nil || len(es) != 1 || es[0].Name() != "x" {
		t.Fatalf("ReadDir %v %v", es, err)
	}
	if err := fsys.Remove(filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.Stat(filepath.Join(dir, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat removed: %v", err)
	}
}
