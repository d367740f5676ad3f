package recorder

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// The layout file, ROOT/_rlrec/layout, is written once when the recorder
// creates a ROOT: the schema version and the steps layout of everything
// the ROOT holds, as text lines
//
//	schema_version=2
//	layout=episode
//
// so that no recorder adds files of another version or layout to a ROOT.
// The keys and values are part of the on-disk format: do not change them.
const (
	layoutKeyVersion = "schema_version"
	layoutKeyLayout  = "layout"
)

// checkLayout reads ROOT's layout file, or writes it for a new ROOT, and
// refuses a ROOT of another schema version or layout. A ROOT with tables
// but no layout file was written before schema version 2.
func (r *Recorder) checkLayout() error {
	state := filepath.Join(r.root, hive.StateDir)
	name := filepath.Join(state, hive.LayoutName)
	// The temp files of the layout file and the recovery journal are
	// left only by a crash while they were written; neither was renamed,
	// so neither holds anything.
	for _, tmp := range []string{"." + hive.LayoutName + ".tmp", "." + journalName + ".tmp"} {
		if err := r.fs.Remove(filepath.Join(state, tmp)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("open %s: remove %s: %w", r.root, tmp, err)
		}
	}
	want := r.opts.layout
	f, err := r.fs.Open(name)
	if err == nil {
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("open %s: read %s: %w", r.root, name, err)
		}
		kv := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			kv[k] = v
		}
		if v := kv[layoutKeyVersion]; v != schema.SchemaVersion {
			return fmt.Errorf("open %s: %w: %s says schema version %q, this rlrec writes %q; record into a new ROOT", r.root, ErrLayout, name, v, schema.SchemaVersion)
		}
		l, err := hive.ParseLayout(kv[layoutKeyLayout])
		if err != nil {
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
		if r.hasPublished(filepath.Join(r.root, t.Name), 4) {
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
		r.layoutFile = &pendingLayout{fs: r.fs, root: r.root, layout: r.layout, pending: true}
		return nil
	}
	r.layout = want
	return writeLayout(r.fs, r.root, r.layout)
}

// hasPublished reports whether dir, or a directory up to depth levels
// below it, holds a published part file.
func (r *Recorder) hasPublished(dir string, depth int) bool {
	entries, err := r.fs.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, temp, ok := hive.ParsePartName(e.Name()); ok && !temp && !e.IsDir() {
			return true
		}
		if depth > 0 && e.IsDir() && r.hasPublished(filepath.Join(dir, e.Name()), depth-1) {
			return true
		}
	}
	return false
}

// pendingLayout is the layout file of a new ROOT, written before its first
// file is published (the committer calls ensure). A ROOT whose layout file
// exists has one that is not pending: ensure does nothing.
type pendingLayout struct {
	fs      vfs.FS
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
			p.err = writeLayout(p.fs, p.root, p.layout)
		}
	})
	return p.err
}

// writeLayout writes the layout file of root (writeDurable).
func writeLayout(fsys vfs.FS, root string, layout hive.Layout) error {
	body := fmt.Sprintf("%s=%s\n%s=%s\n", layoutKeyVersion, schema.SchemaVersion, layoutKeyLayout, layout)
	if err := writeDurable(fsys, filepath.Join(root, hive.StateDir), hive.LayoutName, []byte(body)); err != nil {
		return fmt.Errorf("open %s: write the layout file: %w", root, err)
	}
	return nil
}

// Layout returns the ROOT's steps layout.
func (r *Recorder) Layout() hive.Layout { return r.layout }
