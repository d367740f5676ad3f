package store

import (
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// TestWriterID: a state directory's writer id is made once and read back
// the same by every later call (recovery keeps its claims with it); two
// state directories get different ids.
func TestWriterID(t *testing.T) {
	mem := vfs.NewMem()
	for _, dir := range []string{"/a", "/b"} {
		if err := mem.MkdirAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	a1, err := WriterID(mem, "/a")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := WriterID(mem, "/a")
	if err != nil || a2 != a1 || len(a1) != 32 {
		t.Fatalf("writer id of /a: %q then %q (%v), want the same 32 hex digits", a1, a2, err)
	}
	b, err := WriterID(mem, "/b")
	if err != nil || b == a1 {
		t.Fatalf("writer id of /b %q (%v), want one other than /a's %q", b, err, a1)
	}
}

// TestClaimOnDisk: a ROOT on disk is claimed by its lock, so Claim writes
// nothing there (not even the writer id).
func TestClaimOnDisk(t *testing.T) {
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/root/_rlrec"); err != nil {
		t.Fatal(err)
	}
	if err := Claim(mem, "/root/_rlrec", NewFS(mem, "/root"), hive.Recording{SessionID: "s", EnvID: "e"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := mem.Stat(filepath.Join("/root/_rlrec", WriterIDName)); err == nil {
		t.Fatal("Claim on a directory ROOT wrote a writer id")
	}
}
