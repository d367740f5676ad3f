package vfs

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
)

func TestMkdir(t *testing.T) {
	for _, c := range []struct {
		name string
		new  func(t *testing.T) (FS, string)
	}{
		{"os", func(t *testing.T) (FS, string) { return OS(), t.TempDir() }},
		{"mem", func(t *testing.T) (FS, string) { m := NewMem(); m.MkdirAll("root"); return m, "root" }},
		// Without Mkdirer: the Stat and MkdirAll fallback.
		{"wrapped-mem", func(t *testing.T) (FS, string) {
			m := NewMem()
			m.MkdirAll("root")
			return WithErrors(m, FailAt(0)), "root"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys, root := c.new(t)
			dir := filepath.Join(root, "a")
			if err := Mkdir(fsys, dir); err != nil {
				t.Fatalf("new directory: %v", err)
			}
			if fi, err := fsys.Stat(dir); err != nil || !fi.IsDir() {
				t.Fatalf("stat after Mkdir: %v, %v", fi, err)
			}
			if err := Mkdir(fsys, dir); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("existing directory: %v, want fs.ErrExist", err)
			}
			writeFile(t, fsys, filepath.Join(root, "f"), "x", false)
			if err := Mkdir(fsys, filepath.Join(root, "f")); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("existing file: %v, want fs.ErrExist", err)
			}
			if err := Mkdir(fsys, filepath.Join(root, "missing", "b")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("missing parent: %v, want fs.ErrNotExist", err)
			}
			if _, err := fsys.Stat(filepath.Join(root, "missing")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Mkdir created the missing parent: %v", err)
			}
		})
	}
}
