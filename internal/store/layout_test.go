package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// TestOpenLayoutReadOnly: where nothing can be removed (a read-only ROOT),
// OpenLayout does not stop on removing temp files that are not there; a
// temp file that is there and cannot be removed is named, with why.
func TestOpenLayoutReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll(filepath.Join(root, hive.StateDir)); err != nil {
		t.Fatal(err)
	}
	noRemove := vfs.WithErrors(mem, vfs.FailFrom(1, vfs.OpRemove))
	if _, err := OpenLayout(noRemove, filepath.Join(root, hive.StateDir), NewFS(noRemove, root), ""); err != nil {
		t.Fatalf("OpenLayout with no temp file to remove: %v", err)
	}
	tmp := filepath.Join(root, hive.StateDir, "."+hive.LayoutName+".tmp")
	if err := vfs.WriteFile(mem, tmp+"2", tmp, nil); err != nil {
		t.Fatal(err)
	}
	_, err := OpenLayout(noRemove, filepath.Join(root, hive.StateDir), NewFS(noRemove, root), "")
	if !errors.Is(err, vfs.ErrInjected) || !strings.Contains(err.Error(), "a crash left cannot be removed") || !strings.Contains(err.Error(), "writable") {
		t.Fatalf("OpenLayout with a temp file it cannot remove: %v", err)
	}
}
