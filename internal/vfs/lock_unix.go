//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package vfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
)

// lockFile takes flock(LOCK_EX|LOCK_NB) on name. flock locks belong to the
// open file description, so a second Lock of the same file in this process
// fails as well as one in another process.
func lockFile(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
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
