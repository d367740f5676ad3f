package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"

	"github.com/rlrec/rlrec/internal/vfs"
)

// readOnly is an Injector that plays a ROOT this user may only read: every
// operation that writes fails as on a read-only mount, and Lock fails with
// lockErr (nil: Lock runs).
type readOnly struct{ lockErr error }

var errReadOnlyFS = errors.New("read-only file system")

func (r readOnly) Inject(op vfs.Op, name string) error {
	switch op {
	case vfs.OpCreate, vfs.OpOpenAppend, vfs.OpRename, vfs.OpRemove, vfs.OpMkdirAll,
		vfs.OpSyncDir, vfs.OpSyncFS, vfs.OpWrite, vfs.OpSync, vfs.OpTruncate:
		return &fs.PathError{Op: op.String(), Path: name, Err: errReadOnlyFS}
	case vfs.OpLock:
		return r.lockErr
	}
	return nil
}

// TestVerifyReadOnlyRoot checks that a valid ROOT verifies clean when this
// user may not write it, however the lock then fails; only an error that is
// not about access is a lock problem.
func TestVerifyReadOnlyRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	roottest.CopyDir(t, base(t), root)
	lock := filepath.Join(root, hive.StateDir, hive.LockName)
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the test ROOT has no lock file to try: %v", err)
	}
	tests := []struct {
		name    string
		lockErr error
		want    int // lock problems
	}{
		{name: "lock runs", lockErr: nil},
		{name: "lock file cannot be opened", lockErr: fmt.Errorf("open lock file: %w: %w", vfs.ErrNoAccess, &fs.PathError{Op: "open", Path: lock, Err: errReadOnlyFS})},
		{name: "permission denied", lockErr: fmt.Errorf("open lock file: %w", &fs.PathError{Op: "open", Path: lock, Err: fs.ErrPermission})},
		{name: "no locks on this platform", lockErr: fmt.Errorf("lock %s: %w", lock, errors.ErrUnsupported)},
		{name: "other lock error is a problem", lockErr: fmt.Errorf("lock %s: %w", lock, vfs.ErrInjected), want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := check(context.Background(), vfs.WithErrors(vfs.OS(), readOnly{lockErr: tt.lockErr}), root)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, p := range rep.Problems {
				if p.Check == CheckLock {
					n++
				}
			}
			if n != tt.want || len(rep.Problems) != tt.want {
				t.Fatalf("%d lock problems of %d, want %d: %+v", n, len(rep.Problems), tt.want, rep.Problems)
			}
		})
	}
}

// TestVerifyChmodReadOnly verifies a ROOT made read-only with chmod -R a-w
// through the operating system. (Run as root, chmod refuses nothing and
// this is a plain verify; TestVerifyReadOnlyRoot and the vfs tests play the
// refusals.)
func TestVerifyChmodReadOnly(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	roottest.CopyDir(t, base(t), root)
	chmodTree(t, root, 0o555, 0o444)
	t.Cleanup(func() { chmodTree(t, root, 0o755, 0o644) })
	rep, err := Root(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("read-only ROOT: %+v", rep.Problems)
	}
}

// chmodTree sets the mode of every directory and file under root (both
// modes keep reading and listing allowed, so the walk goes on).
func chmodTree(t *testing.T, root string, dirMode, fileMode fs.FileMode) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.Chmod(p, dirMode)
		}
		return os.Chmod(p, fileMode)
	})
	if err != nil {
		t.Fatal(err)
	}
}
