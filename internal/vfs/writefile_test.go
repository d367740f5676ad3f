package vfs

import (
	"bytes"
	"errors"
	"testing"
)

// failOp is an Injector that fails every operation of one kind.
type failOp struct{ op Op }

var errInjected = errors.New("injected")

func (f failOp) Inject(op Op, _ string) error {
	if op == f.op {
		return errInjected
	}
	return nil
}

// TestWriteFile: the final name holds the whole data once WriteFile
// returns nil (and survives a crash once the directory is synced); a
// failure at any step leaves nothing under the final name.
func TestWriteFile(t *testing.T) {
	data := bytes.Repeat([]byte("state "), 100)
	for _, tc := range []struct {
		name string
		fail Op // 0: none
	}{
		{"ok", 0},
		{"create fails", OpCreate},
		{"write fails", OpWrite},
		{"sync fails", OpSync},
		{"close fails", OpClose},
		{"rename fails", OpRename},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := NewMem()
			if err := mem.MkdirAll("/d"); err != nil {
				t.Fatal(err)
			}
			err := WriteFile(WithErrors(mem, failOp{tc.fail}), "/d/.f.tmp", "/d/f", data)
			if tc.fail != 0 {
				if !errors.Is(err, errInjected) {
					t.Fatalf("WriteFile: %v, want the injected error", err)
				}
				if _, err := mem.Stat("/d/f"); err == nil {
					t.Fatal("a failed WriteFile left a file under the final name")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := mem.SyncDir("/d"); err != nil {
				t.Fatal(err)
			}
			got, err := readAllFile(mem.Crash(), "/d/f")
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("after a crash the file holds %d bytes (%v), want %d", len(got), err, len(data))
			}
		})
	}
}

func readAllFile(fsys FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(f)
	return b.Bytes(), err
}
