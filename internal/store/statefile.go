package store

import (
	"fmt"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/vfs"
)

// WriteState writes a small file of a recorder's state whole: under
// the temp name .NAME.tmp in dir, synced, renamed to name, dir synced.
func WriteState(fsys vfs.FS, dir, name string, b []byte) error {
	if err := vfs.WriteFile(fsys, filepath.Join(dir, "."+name+".tmp"), filepath.Join(dir, name), b); err != nil {
		return err
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
