package vfs

import "errors"

var (
	// ErrLocked is returned by Lock when another holder, in this process or
	// another one, already holds the lock. The returned error names the lock
	// file; stop the other recorder or wait for it to exit.
	ErrLocked = errors.New("vfs: lock held by another user")

	// ErrNoAccess is returned by Lock when the lock file can be opened
	// neither for writing nor for reading: the file system is read-only or
	// the file's permissions refuse this user. The lock was not tried, so
	// whether another holder has it is unknown.
	ErrNoAccess = errors.New("vfs: no access to the lock file")

	// ErrInjected is wrapped by every error that an Injector (see
	// WithErrors) makes an operation return. Only tests see it.
	ErrInjected = errors.New("vfs: injected error")
)
