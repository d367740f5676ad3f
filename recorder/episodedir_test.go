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
// "episode") and the directories created.
type listCountFS struct {
	vfs.FS
	epLists, mkdirs atomic.Int64
}

func (c *listCountFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if strings.Contains(filepath.Base(name), "episode_record_id=") {
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
// listing the directory it just created (a listing per episode was a
// file-system call the directory-plus-file rate does not pay).
func TestEpisodeDirNotListed(t *testing.T) {
	for _, c := range []struct {
		name string
		fsys vfs.FS
	}{
		{"os", vfs.OS()},
		{"mem", vfs.NewMem()},
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
			if n := cfsys.mkdirs.Load(); n < 30 {
				t.Errorf("%d directories created with Mkdir, want one per episode (at least 30)", n)
			}
			if c.name == "os" {
				checkRecordings(t, root, sums)
			}
		})
	}
}
