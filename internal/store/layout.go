package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// The layout file, ROOT/_rlrec/layout, is written once when a recorder
// creates a ROOT: the schema version and the steps layout of everything
// the ROOT holds (its format and codec: hive.LayoutFile,
// hive.ParseLayoutFile), so that no recorder adds files of another
// version or layout to a ROOT. Readers read it with ReadLayout; a
// recorder opens it with OpenLayout.
//
// OpenLayout reads the layout file of the ROOT st (ReadLayout), or
// prepares it for a new ROOT, and refuses a ROOT of another schema
// version or layout (ErrLayout). A ROOT with tables but no layout file
// was written before schema version 2. want is the layout asked for, ""
// for the ROOT's own. It first removes, from the recorder's local state
// directory state on fsys, the temp files of the layout file (a ROOT on
// disk, whose state directory is ROOT/_rlrec) and of the recovery
// journal, which only a crash while they were written leaves.
func OpenLayout(fsys vfs.FS, state string, st Root, want hive.Layout) (*LayoutFile, error) {
	root := st.Root()
	name := st.Path(path.Join(hive.StateDir, hive.LayoutName))
	// The temp files of the layout file and the recovery journal are
	// left only by a crash while they were written; neither was renamed,
	// so neither holds anything. Only one that is there is removed: on a
	// read-only ROOT a removal of nothing fails, and is no reason to stop.
	for _, tmp := range []string{"." + hive.LayoutName + ".tmp", "." + hive.JournalName + ".tmp"} {
		p := filepath.Join(state, tmp)
		if _, err := fsys.Stat(p); err != nil {
			continue
		}
		if err := fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("open %s: the temp file %s that a crash left cannot be removed: %w; a recorder needs ROOT writable", root, p, err)
		}
	}
	l, err := ReadLayout(st)
	switch {
	case err == nil:
		if want != "" && l != want {
			return nil, fmt.Errorf("open %s: %w: the ROOT's steps layout is %q (%s), and %q was asked for; record into a new ROOT, or leave the layout to the ROOT", root, ErrLayout, l, name, want)
		}
		return &LayoutFile{layout: l}, nil
	case errors.Is(err, hive.ErrSchemaVersion):
		return nil, fmt.Errorf("open %s: %w: %w; record into a new ROOT", root, ErrLayout, err)
	case errors.Is(err, hive.ErrBadLayout):
		return nil, fmt.Errorf("open %s: %w: %w", root, ErrLayout, err)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("open %s: %w", root, err)
	}
	for _, t := range hive.Tables {
		// Directories and temp files alone are what a crash of a new
		// ROOT's first recorder leaves before its first file is
		// published with the layout file.
		if ok, _ := st.HasPart(t.Name, 4); ok {
			return nil, fmt.Errorf("open %s: %w: it holds a %s table but no %s, so an rlrec before schema version %s wrote it; record into a new ROOT",
				root, ErrLayout, t.Name, filepath.Join(hive.StateDir, hive.LayoutName), schema.SchemaVersion2)
		}
	}
	if want == "" {
		// Nothing is recorded yet and no layout was asked for: the ROOT
		// gets the default layout with its first file (Ensure), so
		// that a recorder that writes nothing (rlrec recover on a ROOT a
		// crash left half created) does not choose it.
		return &LayoutFile{st: st, layout: hive.LayoutEpisode, pending: true}, nil
	}
	if err := writeLayout(st, want); err != nil {
		return nil, err
	}
	return &LayoutFile{layout: want}, nil
}

// LayoutFile is the layout file of a ROOT a recorder opened: its layout,
// and for a new ROOT the file still to write before the first part is
// published (the recorder's committer calls Ensure). A ROOT whose layout
// file exists has one that is not pending: Ensure does nothing.
type LayoutFile struct {
	st      Root
	layout  hive.Layout
	pending bool
	once    sync.Once
	err     error
}

// Layout returns the ROOT's steps layout.
func (p *LayoutFile) Layout() hive.Layout { return p.layout }

// Ensure writes the layout file if it is pending, once; it is safe for
// concurrent use.
func (p *LayoutFile) Ensure() error {
	p.once.Do(func() {
		if p.pending {
			p.err = writeLayout(p.st, p.layout)
		}
	})
	return p.err
}

// writeLayout writes the layout file of the ROOT st, never replacing one
// (Root.CreateState): another recorder of the same bucket prefix that
// created the ROOT first with another layout makes this one fail with
// ErrLayout.
func writeLayout(st Root, layout hive.Layout) error {
	err := st.CreateState(hive.LayoutName, hive.LayoutFile(layout))
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("open %s: %w: another recorder created the ROOT with another layout file than %q's (%w); record into a new ROOT, or leave the layout to the ROOT", st.Root(), ErrLayout, layout, err)
	}
	if err != nil {
		return fmt.Errorf("open %s: write the layout file: %w", st.Root(), err)
	}
	return nil
}
