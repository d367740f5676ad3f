// Package filetree reads a directory tree whole, by path: what tests
// compare when they check that two ROOTs (or a ROOT and a bucket's
// backing directory) hold the same files. It imports nothing of rlrec,
// so that the tests of every package can use it without an import cycle.
package filetree

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Read returns every file under dir by its path relative to dir ("/"
// separators), but those skip reports (skip may be nil). A directory
// skip reports is not entered.
func Read(dir string, skip func(rel string) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if skip != nil && skip(rel) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		out[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("filetree: read %s: %w", dir, err)
	}
	return out, nil
}

// State reports whether rel is the recorder's state directory _rlrec or
// lies under it: Read(root, State) reads a ROOT's table files.
func State(rel string) bool { return rel == "_rlrec" || strings.HasPrefix(rel, "_rlrec/") }
