package recorder_test

import (
	"context"
	"io/fs"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// listCountFS counts the listings of episode partitions (layout
// "episode"), the stats of their paths and the directories created.
type listCountFS struct {
	vfs.FS
	epLists, epStats, mkdirs atomic.Int64
}

func isEpisodePath(name string) bool { return strings.Contains(name, "episode_record_id=") }

func (c *listCountFS) Stat(name string) (fs.FileInfo, error) {
	if isEpisodePath(name) {
		c.epStats.Add(1)
	}
	return c.FS.Stat(name)
}

func (c *listCountFS) MkdirAll(name string) error {
	if isEpisodePath(name) {
		// os.MkdirAll stats the name first.
		c.epStats.Add(1)
	}
	return c.FS.MkdirAll(name)
}

func (c *listCountFS) RenameNoReplace(oldname, newname string) error {
	return vfs.RenameNoReplace(c.FS, oldname, newname)
}

func (c *listCountFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if isEpisodePath(filepath.Base(name)) {
		c.epLists.Add(1)
	}
	return c.FS.ReadDir(name)
}

func (c *listCountFS) Mkdir(name string) error {
	c.mkdirs.Add(1)
	return vfs.Mkdir(c.FS, name)
}

// TestEpisodeDirNotListed: in layout "episode" the recorder creates each
// episode's partition directory and names its steps file part 0 without
// listing the directory it just created or looking names up in it (a
// listing and three stats per episode were file-system calls the
// directory-plus-file rate does not pay). Publishing looks the final name
// up only where the file system cannot rename without replacing (MemFS:
// one stat a file).
func TestEpisodeDirNotListed(t *testing.T) {
	for _, c := range []struct {
		name string
		fsys vfs.FS
		// statsPerFile: stats of episode paths per steps file.
		statsPerFile int64
	}{
		{"os", vfs.OS(), 0},
		{"mem", vfs.NewMem(), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			cfsys := &listCountFS{FS: c.fsys}
			ctx := context.Background()
			rec, err := recorder.Open(root, recorder.WithLayout(hive.LayoutEpisode), recorder.WithFS(cfsys))
			if err != nil {
				t.Fatal(err)
			}
			cfg := sim.Config{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 30, Seed: 5}
			sums, err := sim.RunSessions(ctx, rec, []sim.Config{cfg})
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if n := cfsys.epLists.Load(); n != 0 {
				t.Errorf("the recorder listed episode partitions %d times, want 0", n)
			}
			if n, want := cfsys.epStats.Load(), c.statsPerFile*cfsys.mkdirs.Load(); n > want {
				t.Errorf("the recorder looked up episode paths %d times, want at most %d", n, want)
			}
			if n := cfsys.mkdirs.Load(); n < 30 {
				t.Errorf("%d directories created with Mkdir, want one per episode (at least 30)", n)
			}
			if c.name == "os" {
				checkRecordings(t, root, sums)
			}
		})
	}
}
