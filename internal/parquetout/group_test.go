package parquetout

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// groupFiles writes a steps file of 7 rows and an episodes file of one row
// for group commit on fsys and returns their finished parts.
func groupFiles(t *testing.T, fsys vfs.FS, root string) []*Part {
	t.Helper()
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.CreateGroupAt(fsys, filepath.Join(root, "steps", "session_id=s", "episode_record_id=e"), 0, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	writeCartpole(t, w, 7)
	steps, err := w.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ep, err := FinishTableAt(fsys, filepath.Join(root, "episodes", "session_id=s", "episode_record_id=e"), 0,
		Metadata{SessionID: "s", EpisodeRecordID: "e"}, Config{}, []schema.EpisodeRow{{EpisodeID: "x", Status: "completed"}})
	if err != nil {
		t.Fatal(err)
	}
	return []*Part{steps, ep}
}

var groupRows = map[string]int64{"steps": 7, "episodes": 1}

// checkFinal walks root and fails on a final-named file that is not a
// complete Parquet file with its rows; it returns the final names found
// and whether any temp file was.
func checkFinal(t *testing.T, fsys vfs.FS, root string) (finals []string, temps bool) {
	t.Helper()
	for table, rows := range groupRows {
		dir := filepath.Join(root, table, "session_id=s", "episode_record_id=e")
		if _, err := fsys.Stat(dir); err != nil {
			continue
		}
		for _, n := range names(t, fsys, dir) {
			if strings.HasPrefix(n, ".") {
				temps = true
				continue
			}
			if pf := openMem(t, fsys, filepath.Join(dir, n)); pf.NumRows() != rows {
				t.Fatalf("%s/%s holds %d rows, want %d", table, n, pf.NumRows(), rows)
			}
			finals = append(finals, table+"/"+n)
		}
	}
	return finals, temps
}

// crashAt takes a crash snapshot of mem the first time op is about to run.
type crashAt struct {
	mem     *vfs.MemFS
	op      vfs.Op
	crashed *vfs.MemFS
}

func (c *crashAt) Inject(op vfs.Op, name string) error {
	if op == c.op && c.crashed == nil {
		c.crashed = c.mem.Crash()
	}
	return nil
}

func TestCommitPartsCrash(t *testing.T) {
	root := filepath.FromSlash("/r")
	mem := vfs.NewMem()
	before := &crashAt{mem: mem, op: vfs.OpSyncFS}  // after Finish, before the first sync
	renames := &crashAt{mem: mem, op: vfs.OpRename} // after the first sync, before any rename
	fsys := vfs.WithErrors(vfs.WithErrors(mem, before), renames)
	parts := groupFiles(t, fsys, root)
	if err := CommitParts(fsys, root, parts); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		fsys      *vfs.MemFS
		wantFinal int
		wantTemps bool
	}{
		{"after Finish", before.crashed, 0, false},
		{"after the first sync", renames.crashed, 0, true},
		{"after CommitParts", mem.Crash(), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			finals, temps := checkFinal(t, tc.fsys, root)
			if len(finals) != tc.wantFinal || temps != tc.wantTemps {
				t.Fatalf("crash leaves final files %v and temps %v, want %d and %v", finals, temps, tc.wantFinal, tc.wantTemps)
			}
		})
	}
	if finals, temps := checkFinal(t, mem, root); len(finals) != 2 || temps {
		t.Fatalf("after CommitParts: final files %v, temps %v", finals, temps)
	}
}

func TestCommitPartsErrors(t *testing.T) {
	root := filepath.FromSlash("/r")
	type fault struct {
		k  int64
		op vfs.Op
	}
	tests := []struct {
		name   string
		faults []fault
		// whole: the error is no one part's (every part aborted); else
		// failed parts are listed in a *GroupError (nil error: none).
		whole     bool
		failed    int
		wantFinal int  // final files present after the error
		wantTemps bool // temps left: a failed publish keeps the synced parts not yet renamed
	}{
		// A failed file-system sync is retried file by file: nothing of
		// these files failed.
		{name: "first sync", faults: []fault{{1, vfs.OpSyncFS}}, wantFinal: 2},
		{name: "first sync and a file", faults: []fault{{1, vfs.OpSyncFS}, {1, vfs.OpSync}}, failed: 1, wantFinal: 1},
		{name: "first sync and a partition", faults: []fault{{1, vfs.OpSyncFS}, {1, vfs.OpSyncDir}}, failed: 1, wantFinal: 1},
		// The first file's directories are synced up to the root first:
		// steps/session_id=s/episode_record_id=e, steps/session_id=s,
		// then steps, directly under the root: every part's.
		{name: "first sync and a table directory", faults: []fault{{1, vfs.OpSyncFS}, {3, vfs.OpSyncDir}}, whole: true},
		{name: "first rename", faults: []fault{{1, vfs.OpRename}}, failed: 1, wantFinal: 1, wantTemps: true},
		{name: "second rename", faults: []fault{{2, vfs.OpRename}}, failed: 1, wantFinal: 1, wantTemps: true},
		{name: "second sync", faults: []fault{{2, vfs.OpSyncFS}}, wantFinal: 2},
		{name: "second sync and a directory", faults: []fault{{2, vfs.OpSyncFS}, {1, vfs.OpSyncDir}}, failed: 1, wantFinal: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := vfs.NewMem()
			var fsys vfs.FS = mem
			for _, f := range tt.faults {
				fsys = vfs.WithErrors(fsys, vfs.FailAt(f.k, f.op))
			}
			parts := groupFiles(t, fsys, root)
			err := CommitParts(fsys, root, parts)
			var ge *GroupError
			switch {
			case tt.whole:
				if err == nil || errors.As(err, &ge) || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("CommitParts: %v, want the injected error for the whole group", err)
				}
			case tt.failed == 0:
				if err != nil {
					t.Fatalf("CommitParts: %v, want nil", err)
				}
			default:
				if !errors.As(err, &ge) || len(ge.Parts) != tt.failed || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("CommitParts: %v, want a *GroupError of %d parts wrapping the injected error", err, tt.failed)
				}
				for _, pe := range ge.Parts {
					if pe.Path == "" || !strings.HasPrefix(pe.Path, root) {
						t.Errorf("failed part's path %q", pe.Path)
					}
				}
			}
			for _, p := range parts {
				p.Abort()
			}
			finals, temps := checkFinal(t, mem, root)
			if len(finals) != tt.wantFinal || temps != tt.wantTemps {
				t.Fatalf("after the error: final files %v, temps %v; want %d final files and temps %v", finals, temps, tt.wantFinal, tt.wantTemps)
			}
			// Whatever a crash now leaves under a final name is complete.
			checkFinal(t, mem.Crash(), root)
		})
	}
}

func TestFinishErrors(t *testing.T) {
	root := filepath.FromSlash("/r")
	mem := vfs.NewMem()
	fsys := vfs.WithErrors(mem, vfs.FailAt(1, vfs.OpClose))
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "steps", "session_id=s", "episode_record_id=e")
	w, err := f.CreateGroupAt(fsys, dir, 0, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	writeCartpole(t, w, 3)
	if _, err := w.Finish(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Finish: %v, want the injected error", err)
	}
	w.Abort()
	if got := names(t, mem, dir); len(got) != 0 {
		t.Fatalf("after a failed Finish the directory holds %v", got)
	}
}

func TestCommitPartsMisuse(t *testing.T) {
	root := filepath.FromSlash("/r")
	mem := vfs.NewMem()
	parts := groupFiles(t, mem, root)
	if err := CommitParts(mem, root, parts); err != nil {
		t.Fatal(err)
	}
	if err := CommitParts(mem, root, parts); err == nil {
		t.Fatal("committing committed parts again succeeded")
	}
	open, err := CreateGroupPartAt(mem, filepath.Join(root, "x"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := CommitParts(mem, root, []*Part{open}); err == nil {
		t.Fatal("committing an unfinished part succeeded")
	}
	if got := names(t, mem, filepath.Join(root, "x")); len(got) != 0 {
		t.Fatalf("the refused part left %v", got)
	}
}

// TestGroupPartCommit checks that Commit of a part created for group
// commit syncs the file system, since its directories were not synced.
func TestGroupPartCommit(t *testing.T) {
	root := filepath.FromSlash("/r")
	mem := vfs.NewMem()
	syncs := vfs.FailAt(0, vfs.OpSyncFS)
	fsys := vfs.WithErrors(mem, syncs)
	w, err := CreateTableGroupAt[schema.EpisodeRow](fsys, filepath.Join(root, "episodes", "session_id=s", "episode_record_id=e"), 0,
		Metadata{SessionID: "s", EpisodeRecordID: "e"}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write([]schema.EpisodeRow{{EpisodeID: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if syncs.Seen() != 2 {
		t.Fatalf("Commit synced the file system %d times, want 2", syncs.Seen())
	}
	if finals, _ := checkFinal(t, mem.Crash(), root); len(finals) != 1 {
		t.Fatalf("after Commit and a crash: %v", finals)
	}
}
