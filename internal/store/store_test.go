package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

var (
	root = filepath.FromSlash("/r")
	rec  = hive.Recording{SessionID: "s", EnvID: "r"}
	// The two partitions a group writes to, and what each file holds.
	stepsP    = hive.EpisodePartition("steps", rec, "e")
	episodesP = hive.RecordingPartition("episodes", rec)
	contents  = map[string][]byte{"steps": bytes.Repeat([]byte("steps "), 1000), "episodes": []byte("one episode row")}
)

func touch(t *testing.T, fsys vfs.FS, path string) {
	t.Helper()
	if err := fsys.MkdirAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func names(t *testing.T, fsys vfs.FS, dir string) []string {
	t.Helper()
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// write creates part 0 of p, writes its contents and finishes it.
func write(t *testing.T, s *FS, p hive.Partition) Part {
	t.Helper()
	part, err := s.Create(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write(contents[p.Table]); err != nil {
		t.Fatal(err)
	}
	if err := part.Finish(); err != nil {
		t.Fatal(err)
	}
	return part
}

// group writes a steps and an episodes part for a group commit.
func group(t *testing.T, s *FS) []Part {
	return []Part{write(t, s, stepsP), write(t, s, episodesP)}
}

// checkFinal fails on a final-named file that does not hold its whole
// contents; it returns the final names found and whether any temp file
// was.
func checkFinal(t *testing.T, fsys vfs.FS, root string) (finals []string, temps bool) {
	t.Helper()
	for _, p := range []hive.Partition{stepsP, episodesP} {
		dir := p.Dir(root)
		if _, err := fsys.Stat(dir); err != nil {
			continue
		}
		for _, n := range names(t, fsys, dir) {
			if strings.HasPrefix(n, ".") {
				temps = true
				continue
			}
			f, err := fsys.Open(filepath.Join(dir, n))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(f)
			f.Close()
			if err != nil || !bytes.Equal(b, contents[p.Table]) {
				t.Fatalf("%s/%s holds %d bytes (%v), want its %d", p.Table, n, len(b), err, len(contents[p.Table]))
			}
			finals = append(finals, p.Table+"/"+n)
		}
	}
	return finals, temps
}

func TestPartNumbering(t *testing.T) {
	tests := []struct {
		name     string
		existing []string
		want     string
	}{
		{"empty", nil, "part-00000.parquet"},
		{"after parts", []string{"part-00000.parquet", "part-00001.parquet"}, "part-00002.parquet"},
		{"gap", []string{"part-00000.parquet", "part-00004.parquet"}, "part-00005.parquet"},
		{"after a stale temp", []string{"part-00000.parquet", ".part-00003.parquet.tmp"}, "part-00004.parquet"},
		{"other files ignored", []string{"notes.txt", "part-x.parquet", "part-99.parquet"}, "part-00000.parquet"},
		{"past five digits", []string{"part-99999.parquet"}, "part-100000.parquet"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			s := NewFS(fsys, root)
			dir := stepsP.Dir(root)
			for _, n := range tt.existing {
				touch(t, fsys, filepath.Join(dir, n))
			}
			p, err := s.Create(stepsP, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Rel(), stepsP.Rel()+"/"+tt.want; got != want {
				t.Fatalf("part %s, want %s", got, want)
			}
			if got, want := filepath.Base(p.Name()), "."+tt.want+".tmp"; got != want {
				t.Fatalf("temp %s, want %s", got, want)
			}
			if _, err := p.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := p.Finish(); err != nil {
				t.Fatal(err)
			}
			if err := commit(s, []Part{p}); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(filepath.Join(root, filepath.FromSlash(p.Rel()))); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(p.Name()); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("temp file still there: %v", err)
			}
			if err := commit(s, []Part{p}); err == nil {
				t.Fatal("a second Commit succeeded")
			}
			if _, err := p.Write([]byte("x")); !errors.Is(err, ErrClosed) {
				t.Fatalf("Write after Commit = %v", err)
			}
			if n, err := s.Next(stepsP); err != nil || hive.PartName(n-1) != tt.want {
				t.Fatalf("Next = %d, %v after %s", n, err, tt.want)
			}
		})
	}
}

// TestNeverReplace checks that neither Create nor Publish replaces a
// published file.
func TestNeverReplace(t *testing.T) {
	mem := vfs.NewMem()
	s := NewFS(mem, root)
	if err := commit(s, []Part{write(t, s, episodesP)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(episodesP, 0); !errors.Is(err, ErrExists) {
		t.Fatalf("Create over a published part: %v, want ErrExists", err)
	}
	// A part created before its number was published elsewhere.
	p, err := s.Create(episodesP, 1)
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("other"))
	p.Finish()
	touch(t, mem, filepath.Join(episodesP.Dir(root), hive.PartName(1)))
	err = commit(s, []Part{p})
	var ge *GroupError
	if !errors.As(err, &ge) || !errors.Is(err, ErrExists) || len(ge.Parts) != 1 || ge.Parts[0].Part != p {
		t.Fatalf("Commit over a published name: %v, want a *GroupError of it wrapping ErrExists", err)
	}
}

func TestAbort(t *testing.T) {
	mem := vfs.NewMem()
	s := NewFS(mem, root)
	p, err := s.Create(stepsP, -1)
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("half"))
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, mem, stepsP.Dir(root)); len(got) != 0 {
		t.Fatalf("after Abort the directory holds %v", got)
	}
	if err := p.Abort(); err != nil {
		t.Fatalf("second Abort = %v", err)
	}
	if _, err := p.Write([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Abort = %v", err)
	}
	// A finished part too.
	q := write(t, s, stepsP)
	if err := q.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, mem, stepsP.Dir(root)); len(got) != 0 {
		t.Fatalf("after Abort of a finished part the directory holds %v", got)
	}
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

func TestCommitCrash(t *testing.T) {
	mem := vfs.NewMem()
	before := &crashAt{mem: mem, op: vfs.OpSyncFS}  // after Finish, before the first sync
	renames := &crashAt{mem: mem, op: vfs.OpRename} // after the first sync, before any rename
	s := NewFS(vfs.WithErrors(vfs.WithErrors(mem, before), renames), root)
	if err := commit(s, group(t, s)); err != nil {
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
		{"after Commit", mem.Crash(), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			finals, temps := checkFinal(t, tc.fsys, root)
			if len(finals) != tc.wantFinal || temps != tc.wantTemps {
				t.Fatalf("crash leaves final files %v and temps %v, want %d and %v", finals, temps, tc.wantFinal, tc.wantTemps)
			}
		})
	}
	if finals, temps := checkFinal(t, mem, root); len(finals) != 2 || temps {
		t.Fatalf("after Commit: final files %v, temps %v", finals, temps)
	}
}

func TestCommitErrors(t *testing.T) {
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
		// steps/session_id=s/env_id=r/episode_record_id=e, then
		// env_id=r, session_id=s, then steps, directly under the root:
		// every part's.
		{name: "first sync and a table directory", faults: []fault{{1, vfs.OpSyncFS}, {4, vfs.OpSyncDir}}, whole: true},
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
			s := NewFS(fsys, root)
			parts := group(t, s)
			err := commit(s, parts)
			var ge *GroupError
			switch {
			case tt.whole:
				if err == nil || errors.As(err, &ge) || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("Commit: %v, want the injected error for the whole group", err)
				}
			case tt.failed == 0:
				if err != nil {
					t.Fatalf("Commit: %v, want nil", err)
				}
			default:
				if !errors.As(err, &ge) || len(ge.Parts) != tt.failed || !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("Commit: %v, want a *GroupError of %d parts wrapping the injected error", err, tt.failed)
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
	mem := vfs.NewMem()
	s := NewFS(vfs.WithErrors(mem, vfs.FailAt(1, vfs.OpClose)), root)
	p, err := s.Create(stepsP, 0)
	if err != nil {
		t.Fatal(err)
	}
	p.Write([]byte("x"))
	if err := p.Finish(); !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Finish: %v, want the injected error", err)
	}
	p.Abort()
	if got := names(t, mem, stepsP.Dir(root)); len(got) != 0 {
		t.Fatalf("after a failed Finish the directory holds %v", got)
	}
}

func TestCommitMisuse(t *testing.T) {
	mem := vfs.NewMem()
	s := NewFS(mem, root)
	parts := group(t, s)
	if err := commit(s, parts); err != nil {
		t.Fatal(err)
	}
	if err := commit(s, parts); err == nil {
		t.Fatal("committing committed parts again succeeded")
	}
	x := hive.RecordingPartition("logs", rec)
	open, err := s.Create(x, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := commit(s, []Part{open}); err == nil {
		t.Fatal("committing an unfinished part succeeded")
	}
	if got := names(t, mem, x.Dir(root)); len(got) != 0 {
		t.Fatalf("the refused part left %v", got)
	}
	other := NewFS(mem, root)
	if err := commit(other, []Part{write(t, s, x)}); !errors.Is(err, errForeign) {
		t.Fatalf("committing another store's part: %v", err)
	}
}

// TestSettle publishes one temp file and removes another, as recovery
// does with what a crashed writer left.
func TestSettle(t *testing.T) {
	mem := vfs.NewMem()
	s := NewFS(mem, root)
	parts := group(t, s)
	if err := s.Sync(parts); err != nil {
		t.Fatal(err)
	}
	crashed := mem.Crash()
	s = NewFS(crashed, root)
	if err := s.PublishTemp(stepsP.Rel(), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.PublishTemp(stepsP.Rel(), 0); err == nil {
		t.Fatal("publishing a published temp again succeeded")
	}
	if err := s.RemoveTemp(episodesP.Rel() + "/" + hive.TempName(0)); err != nil {
		t.Fatal(err)
	}
	if err := s.SyncAll(); err != nil {
		t.Fatal(err)
	}
	finals, temps := checkFinal(t, crashed.Crash(), root)
	if len(finals) != 1 || finals[0] != "steps/part-00000.parquet" || temps {
		t.Fatalf("after settling and a crash: %v, temps %v", finals, temps)
	}
}

// opLog is an Injector that records the operations it sees.
type opLog struct{ ops []string }

func (l *opLog) Inject(op vfs.Op, name string) error {
	l.ops = append(l.ops, op.String()+" "+filepath.Base(name))
	return nil
}

// TestCreateNew: a new partition's part 0 costs the directory's creation
// and the file's (no listing, no stat of the final name); a partition
// that exists is refused with ErrPartitionExists; publishing still
// refuses to replace a file of the part's name.
func TestCreateNew(t *testing.T) {
	for _, c := range []struct {
		name    string
		squat   bool // a file of the final name appears before publishing
		wantErr error
	}{
		{"publish", false, nil},
		{"final name taken", true, ErrExists},
	} {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			log := &opLog{}
			fsys := vfs.WithErrors(mem, log)
			// The recording's directory exists: only the episode's is made.
			if err := mem.MkdirAll(filepath.Dir(stepsP.Dir(root))); err != nil {
				t.Fatal(err)
			}
			s := NewFS(fsys, root)
			p, err := s.CreateNew(stepsP)
			if err != nil {
				t.Fatal(err)
			}
			// MemFS has no one-call mkdir: vfs.Mkdir stats the name and its
			// parent and calls MkdirAll, which the injector sees.
			want := []string{"stat " + filepath.Base(stepsP.Dir(root)), "stat env_id=r", "mkdir " + filepath.Base(stepsP.Dir(root)), "create " + hive.TempName(0)}
			if strings.Join(log.ops, ", ") != strings.Join(want, ", ") {
				t.Fatalf("CreateNew did %v, want %v", log.ops, want)
			}
			if _, err := s.CreateNew(stepsP); !errors.Is(err, ErrPartitionExists) {
				t.Fatalf("CreateNew of an existing partition: %v, want ErrPartitionExists", err)
			}
			if _, err := p.Write(contents["steps"]); err != nil {
				t.Fatal(err)
			}
			if err := p.Finish(); err != nil {
				t.Fatal(err)
			}
			if c.squat {
				touch(t, mem, filepath.Join(stepsP.Dir(root), hive.PartName(0)))
			}
			if err := commit(s, []Part{p}); !errors.Is(err, c.wantErr) {
				t.Fatalf("Commit: %v, want %v", err, c.wantErr)
			}
			if c.wantErr == nil {
				if got := names(t, mem, stepsP.Dir(root)); len(got) != 1 || got[0] != hive.PartName(0) {
					t.Fatalf("partition holds %v", got)
				}
			}
		})
	}
}
