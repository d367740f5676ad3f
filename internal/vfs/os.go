package vfs

import (
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Default is the operating system's file system.
var Default FS = OS()

// OS returns the file system of the operating system, backed by package os.
// Files are *os.File. SyncDir opens the directory and fsyncs it; SyncFS calls syncfs(2) on Linux and
// sync(2) elsewhere; Lock uses
// flock(2) on a lock file, so it excludes other processes as well as other
// Lock calls in this one.
func OS() FS { return osFS{} }

type osFS struct{}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) OpenAppend(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }

func (osFS) Remove(name string) error { return os.Remove(name) }

func (osFS) MkdirAll(name string) error { return os.MkdirAll(name, 0o755) }

func (osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		d.Close()
		return fmt.Errorf("sync directory %s: %w", name, err)
	}
	return d.Close()
}

func (osFS) SyncFS(name string) error { return syncFS(name) }

func (osFS) ReadDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func (osFS) Stat(name string) (fs.FileInfo, error) { return os.Stat(name) }

func (osFS) Lock(name string) (io.Closer, error) { return lockFile(name) }
