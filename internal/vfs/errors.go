package vfs

import "errors"

var (
	// ErrLocked is returned by Lock when another holder, in this process or
	// another one, already holds the lock. The returned error names the lock
	// file; stop the other recorder or wait for it to exit.
	ErrLocked = errors.New("vfs: lock held by another user")

	// ErrInjected is wrapped by every error that an Injector (see
	// WithErrors) makes an operation return. Only tests see it.
	ErrInjected = errors.New("vfs: injected error")
)
