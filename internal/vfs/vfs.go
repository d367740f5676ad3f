// Package vfs is the small file-system interface through which the recorder
// does all of its file I/O, so that tests can inject errors and simulate a
// power cut that drops what was not synced.
//
// Durability contract of every implementation: data written to a file is
// durable once File.Sync returns; a created, renamed or removed directory
// entry is durable once SyncDir of its parent directory returns, or once
// SyncFS of any path on the same file system returns, which makes every
// file's written data and every directory entry of that file system durable
// at once (a group commit: one flush for many files).
//
// Implementations:
//   - OS (and Default): the operating system, through package os, with
//     flock(2) locks.
//   - NewMem: in memory, for tests; MemFS.Crash and MemFS.CrashTorn return
//     what a power cut would leave (see MemFS for the exact model).
//   - WithErrors: wraps any FS and fails chosen operations (FailAt,
//     FailFrom), with errors wrapping ErrInjected.
//
// Mapper (OS on Linux) maps a file shared with the kernel's page cache:
// what is stored into it survives the death of the process without a
// system call, and Epoch (the boot id) tells whether it can have been lost.
//
// Mkdir creates one directory and tells whether it existed, in one call
// where the FS implements Mkdirer (OS does), else through Stat and
// MkdirAll; RenameNoReplace renames without replacing in one atomic call
// where the FS implements NoReplaceRenamer (OS on Linux), else through
// Stat and Rename.
package vfs

import (
	"io"
	"io/fs"
)

// File is an open file.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written data durable.
	Sync() error
	// Truncate changes the file's size.
	Truncate(size int64) error
	// Stat returns the file's metadata.
	Stat() (fs.FileInfo, error)
	// Name returns the path the file was opened with.
	Name() string
}

// FS is a file system. Paths are OS paths (filepath separators).
type FS interface {
	// Create creates or truncates the named file for writing.
	Create(name string) (File, error)
	// Open opens the named file for reading.
	Open(name string) (File, error)
	// OpenAppend opens an existing file for reading and appending.
	OpenAppend(name string) (File, error)
	// Rename atomically replaces newname with oldname.
	Rename(oldname, newname string) error
	// Remove removes a file or an empty directory.
	Remove(name string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(name string) error
	// SyncDir makes the entries of the named directory durable.
	SyncDir(name string) error
	// SyncFS makes durable the written data of every file and every
	// directory entry of the file system that holds name, as if every file
	// had been synced and every directory SyncDir'ed (syncfs(2) on Linux,
	// sync(2) elsewhere).
	SyncFS(name string) error
	// ReadDir lists a directory, sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// Stat returns a file's metadata.
	Stat(name string) (fs.FileInfo, error)
	// Lock takes an exclusive lock on the named file, creating it if
	// needed, that also excludes other processes. It fails at once (without
	// waiting) when the lock is held. The OS implementation locks an
	// existing file this user may only read all the same (flock needs no
	// write access), and fails with ErrNoAccess when it may not open the
	// file at all.
	Lock(name string) (io.Closer, error)
}
