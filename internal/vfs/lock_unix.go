//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
)

// openLockFile opens the lock file; tests replace it to play a read-only
// file system.
var openLockFile = os.OpenFile

// lockFile takes flock(LOCK_EX|LOCK_NB) on name. flock locks belong to the
// open file description, so a second Lock of the same file in this process
// fails as well as one in another process.
//
// The file is opened for writing, created if needed. An existing file that
// cannot be opened for writing (a read-only mount, or permissions that
// refuse writing) is opened for reading instead: flock needs no write
// access, so the lock of a ROOT that is read-only to this user can still be
// tried. When neither open is allowed the error wraps ErrNoAccess.
func lockFile(name string) (io.Closer, error) {
	f, err := openLockFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil && noAccess(err) {
		rf, rerr := openLockFile(name, os.O_RDONLY, 0)
		switch {
		case rerr == nil:
			f, err = rf, nil
		case noAccess(rerr) || errors.Is(rerr, fs.ErrNotExist):
			return nil, fmt.Errorf("open lock file: %w: %w", ErrNoAccess, err)
		default:
			err = rerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", name, ErrLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return &osLock{f: f}, nil
}

// noAccess reports whether an open failed for want of access: permission
// denied, or a read-only file system.
func noAccess(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

type osLock struct {
	once sync.Once
	f    *os.File
	err  error
}

// Close releases the lock and closes the lock file. The file itself stays:
// removing it would race with a new holder that opened it meanwhile.
func (l *osLock) Close() error {
	l.once.Do(func() {
		uerr := syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		cerr := l.f.Close()
		if uerr != nil {
			l.err = fmt.Errorf("unlock %s: %w", l.f.Name(), uerr)
		} else if cerr != nil {
			l.err = cerr
		}
	})
	return l.err
}
