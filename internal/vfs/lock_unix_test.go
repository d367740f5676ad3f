//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestLockWithoutWriteAccess plays the opens of a lock file on a read-only
// mount or with permissions that refuse writing (as root, chmod refuses
// nothing, so the refusal is played by replacing the open).
func TestLockWithoutWriteAccess(t *testing.T) {
	for _, tc := range []struct {
		name string
		// write and read are the errors of the opens for writing and
		// (when not nil) for reading.
		write, read error
		exists      bool
		wantErr     error // nil: the lock is taken
	}{
		{name: "read-only file system", write: syscall.EROFS, exists: true},
		{name: "file not writable", write: syscall.EACCES, exists: true},
		{name: "operation not permitted", write: syscall.EPERM, exists: true},
		{name: "neither writable nor readable", write: syscall.EACCES, read: syscall.EACCES, exists: true, wantErr: ErrNoAccess},
		{name: "read-only and missing", write: syscall.EROFS, wantErr: ErrNoAccess},
		{name: "other error is not access", write: syscall.EIO, exists: true, wantErr: syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "LOCK")
			if tc.exists {
				if err := os.WriteFile(name, nil, 0o444); err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { openLockFile = os.OpenFile })
			openLockFile = func(n string, flag int, perm fs.FileMode) (*os.File, error) {
				if flag&(os.O_RDWR|os.O_WRONLY) != 0 {
					return nil, &fs.PathError{Op: "open", Path: n, Err: tc.write}
				}
				if tc.read != nil {
					return nil, &fs.PathError{Op: "open", Path: n, Err: tc.read}
				}
				return os.OpenFile(n, flag, perm)
			}
			l, err := OS().Lock(name)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Lock = %v, want it to wrap %v", err, tc.wantErr)
				}
				if tc.wantErr == ErrNoAccess && !errors.Is(err, tc.write) {
					t.Fatalf("Lock = %v does not wrap the refused open's %v", err, tc.write)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lock of a file it may only read: %v", err)
			}
			defer l.Close()
			// The lock taken through the read-only open excludes others.
			openLockFile = os.OpenFile
			if _, err := OS().Lock(name); !errors.Is(err, ErrLocked) {
				t.Fatalf("second Lock = %v, want ErrLocked", err)
			}
		})
	}
}
