package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"testing"
)

func TestRenameNoReplace(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(t *testing.T) (FS, string)
	}{
		{"os", func(t *testing.T) (FS, string) { return OS(), t.TempDir() }},
		{"mem", func(t *testing.T) (FS, string) { m := NewMem(); m.MkdirAll("root"); return m, "root" }},
		// Without NoReplaceRenamer: the Stat and Rename fallback.
		{"wrapped-os", func(t *testing.T) (FS, string) { return WithErrors(OS(), FailAt(0)), t.TempDir() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys, root := c.new(t)
			a, b, x := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "x")
			writeFile(t, fsys, a, "A", false)
			writeFile(t, fsys, x, "X", false)
			if err := RenameNoReplace(fsys, a, b); err != nil {
				t.Fatalf("rename to a new name: %v", err)
			}
			if got, err := readFile(fsys, b); err != nil || got != "A" {
				t.Fatalf("renamed file holds %q, %v", got, err)
			}
			if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("old name after rename: %v", err)
			}
			if err := RenameNoReplace(fsys, x, b); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("rename onto an existing file: %v, want fs.ErrExist", err)
			}
			for name, want := range map[string]string{b: "A", x: "X"} {
				if got, err := readFile(fsys, name); err != nil || got != want {
					t.Fatalf("after a refused rename %s holds %q, %v; want %q", name, got, err, want)
				}
			}
			if err := RenameNoReplace(fsys, filepath.Join(root, "missing"), filepath.Join(root, "c")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("rename of a missing file: %v, want fs.ErrNotExist", err)
			}
		})
	}
}

// TestRenameNoReplaceOneCall: on Linux the OS file system renames without
// replacing in the kernel (renameat2), not through the fallback.
func TestRenameNoReplaceOneCall(t *testing.T) {
	r, ok := OS().(NoReplaceRenamer)
	if runtime.GOOS != "linux" {
		if ok {
			t.Fatal("OS implements NoReplaceRenamer off Linux")
		}
		return
	}
	if !ok {
		t.Fatal("OS does not implement NoReplaceRenamer on Linux")
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	writeFile(t, OS(), a, "A", false)
	writeFile(t, OS(), b, "B", false)
	if err := r.RenameNoReplace(a, b); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("renameat2 onto an existing file: %v, want fs.ErrExist", err)
	}
	if err := r.RenameNoReplace(a, filepath.Join(dir, "c")); err != nil {
		t.Fatalf("renameat2 to a new name: %v", err)
	}
}
