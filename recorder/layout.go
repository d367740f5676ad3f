package recorder

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// The layout file, ROOT/_rlrec/layout, is written once when the recorder
// creates a ROOT: the schema version and the steps layout of everything
// the ROOT holds (its format and codec: hive.LayoutFile,
// hive.ParseLayoutFile), so that no recorder adds files of another
// version or layout to a ROOT.
//
// checkLayout reads ROOT's layout file, or writes it for a new ROOT, and
// refuses a ROOT of another schema version or layout. A ROOT with tables
// but no layout file was written before schema version 2.
func (r *Recorder) checkLayout() error {
	// The temp files of the layout file (a ROOT on disk) and the recovery
	// journal are left only by a crash while they were written; neither
	// was renamed, so neither holds anything.
	for _, tmp := range []string{"." + hive.LayoutName + ".tmp", "." + journalName + ".tmp"} {
		if err := r.fs.Remove(filepath.Join(r.state, tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("open %s: remove %s: %w", r.root, tmp, err)
		}
	}
	name := r.st.Path(path.Join(hive.StateDir, hive.LayoutName))
	want := r.opts.layout
	b, err := r.st.ReadState(hive.LayoutName)
	if err == nil {
		l, err := hive.ParseLayoutFile(b)
		switch {
		case errors.Is(err, hive.ErrSchemaVersion):
			return fmt.Errorf("open %s: %w: %s: %w; record into a new ROOT", r.root, ErrLayout, name, err)
		case err != nil:
			return fmt.Errorf("open %s: %w: %s: %w", r.root, ErrLayout, name, err)
		}
		if want != "" && l != want {
			return fmt.Errorf("open %s: %w: the ROOT's steps layout is %q (%s), and %q was asked for; record into a new ROOT, or leave the layout to the ROOT", r.root, ErrLayout, l, name, want)
		}
		r.layout = l
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("open %s: %w", r.root, err)
	}
	for _, t := range hive.Tables {
		// Directories and temp files alone are what a crash of a new
		// ROOT's first recorder leaves before its first file is
		// published with the layout file.
		if ok, _ := r.st.HasPart(t.Name, 4); ok {
			return fmt.Errorf("open %s: %w: it holds a %s table but no %s, so an rlrec before schema version %s wrote it; record into a new ROOT",
				r.root, ErrLayout, t.Name, filepath.Join(hive.StateDir, hive.LayoutName), schema.SchemaVersion)
		}
	}
	if want == "" {
		// Nothing is recorded yet and no layout was asked for: the ROOT
		// gets the default layout with its first file (ensureLayout), so
		// that a recorder that writes nothing (rlrec recover on a ROOT a
		// crash left half created) does not choose it.
		r.layout = hive.LayoutEpisode
		r.layoutFile = &pendingLayout{st: r.st, root: r.root, layout: r.layout, pending: true}
		return nil
	}
	r.layout = want
	return writeLayout(r.st, r.root, r.layout)
}

// pendingLayout is the layout file of a new ROOT, written before its first
// file is published (the committer calls ensure). A ROOT whose layout file
// exists has one that is not pending: ensure does nothing.
type pendingLayout struct {
	st      store.Root
	root    string
	layout  hive.Layout
	pending bool
	once    sync.Once
	err     error
}

// ensure writes the layout file if it is pending, once.
func (p *pendingLayout) ensure() error {
	p.once.Do(func() {
		if p.pending {
			p.err = writeLayout(p.st, p.root, p.layout)
		}
	})
	return p.err
}

// writeLayout writes the layout file of root through its store, never
// replacing one (store.Root.CreateState): another recorder of the same
// bucket prefix that created the ROOT first with another layout makes
// this one fail with ErrLayout.
func writeLayout(st store.Root, root string, layout hive.Layout) error {
	err := st.CreateState(hive.LayoutName, hive.LayoutFile(layout))
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("open %s: %w: another recorder created the ROOT with another layout file than %q's (%w); record into a new ROOT, or leave the layout to the ROOT", root, ErrLayout, layout, err)
	}
	if err != nil {
		return fmt.Errorf("open %s: write the layout file: %w", root, err)
	}
	return nil
}

// Layout returns the ROOT's steps layout.
func (r *Recorder) Layout() hive.Layout { return r.layout }
