package vfs

import "fmt"

// WriteFile writes data whole under the temporary name tmp, makes it
// durable (fsync), closes it and renames it to name, so that name never
// holds a partial file. The caller syncs the directory (SyncDir) to make
// the rename durable, and removes or reuses tmp after a failure (a crash
// leaves it too, so whoever settles the directory handles both).
func WriteFile(fsys FS, tmp, name string, data []byte) error {
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	if err := fsys.Rename(tmp, name); err != nil {
		return fmt.Errorf("rename %s to %s: %w", tmp, name, err)
	}
	return nil
}
