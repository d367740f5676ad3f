package roottest

import (
	"os"
	"testing"

	"github.com/rlrec/rlrec/internal/filetree"
)

// CopyDir copies the tree src into dst (os.CopyFS), creating dst if
// needed; a file dst already has is an error.
func CopyDir(t testing.TB, src, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy %s to %s: %v", src, dst, err)
	}
}

// TableFiles reads every file of a ROOT's tables (everything but the
// recorder's state under _rlrec), by path relative to the ROOT.
func TableFiles(t testing.TB, root string) map[string][]byte {
	t.Helper()
	out, err := filetree.Read(root, filetree.State)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
