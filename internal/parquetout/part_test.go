package parquetout

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
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
			dir := filepath.FromSlash("/root/steps/session_id=s/episode_record_id=e")
			for _, n := range tt.existing {
				touch(t, fsys, filepath.Join(dir, n))
			}
			p, err := CreatePart(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := filepath.Base(p.Path()); got != tt.want {
				t.Fatalf("part %s, want %s", got, tt.want)
			}
			if got, want := filepath.Base(p.TempPath()), "."+tt.want+".tmp"; got != want {
				t.Fatalf("temp %s, want %s", got, want)
			}
			if _, err := p.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := p.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(p.Path()); err != nil {
				t.Fatal(err)
			}
			if _, err := fsys.Stat(p.TempPath()); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("temp file still there: %v", err)
			}
			if err := p.Commit(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second Commit = %v", err)
			}
		})
	}
}

func cartpoleWriter(t *testing.T, fsys vfs.FS, dir string, cfg Config) *StepsWriter {
	t.Helper()
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := f.Create(fsys, dir, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writeCartpole(t testing.TB, w *StepsWriter, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		o, a := f32s(float32(i), 1, 2, 3), i64le(int64(i&1))
		r := StepRow{EpisodeID: benchEpisodeID, Step: int64(i), ObservationBlob: blobOf(o), ActionBlob: blobOf(a),
			ObservationLeaves: [][]byte{o}, ActionLeaves: [][]byte{a}}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
}

func openMem(t *testing.T, fsys vfs.FS, path string) *parquet.File {
	t.Helper()
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	if err := CheckFooter(f, st.Size()); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	return pf
}

// TestCrashBeforeCommit cuts the power at every stage of a file's life and
// checks that a final name only ever holds a complete file.
func TestCrashBeforeCommit(t *testing.T) {
	mem := vfs.NewMem()
	dir := filepath.FromSlash("/root/steps/session_id=s/episode_record_id=e")
	w := cartpoleWriter(t, mem, dir, Config{RowGroupRows: 100})
	writeCartpole(t, w, 250) // two row groups already in the temp file

	for _, crashed := range []*vfs.MemFS{mem.Crash()} {
		for _, n := range names(t, crashed, dir) {
			if !strings.HasPrefix(n, ".") {
				t.Fatalf("before Commit a crash leaves %q", n)
			}
		}
	}
	if got := names(t, mem, dir); len(got) != 1 || got[0] != ".part-00000.parquet.tmp" {
		t.Fatalf("before Commit the directory holds %v", got)
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	after := mem.Crash()
	if got := names(t, after, dir); len(got) != 1 || got[0] != "part-00000.parquet" {
		t.Fatalf("after Commit and a crash the directory holds %v", got)
	}
	if pf := openMem(t, after, path); pf.NumRows() != 250 {
		t.Fatalf("%d rows survive, want 250", pf.NumRows())
	}

	// A later file in the same partition takes the next number, also after
	// a crash left a temp file behind.
	w2 := cartpoleWriter(t, after, dir, Config{})
	writeCartpole(t, w2, 3)
	if err := w2.Flush(); err != nil {
		t.Fatal(err)
	}
	// Make the temp file's entry durable, as another commit in the same
	// directory would.
	if err := after.SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	again := after.Crash()
	w3 := cartpoleWriter(t, again, dir, Config{})
	if got := filepath.Base(w3.Path()); got != "part-00002.parquet" {
		t.Fatalf("next part %s, want part-00002.parquet", got)
	}
	w3.Abort()
	removed, err := RemoveTemps(again, dir)
	if err != nil || len(removed) != 1 || removed[0] != ".part-00001.parquet.tmp" {
		t.Fatalf("RemoveTemps = %v, %v", removed, err)
	}
}

func TestAbort(t *testing.T) {
	mem := vfs.NewMem()
	dir := filepath.FromSlash("/r/steps/session_id=s/episode_record_id=e")
	w := cartpoleWriter(t, mem, dir, Config{RowGroupRows: 10})
	writeCartpole(t, w, 25)
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if got := names(t, mem, dir); len(got) != 0 {
		t.Fatalf("after Abort the directory holds %v", got)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second Abort = %v", err)
	}
	if err := w.Write(&StepRow{}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Write after Abort = %v", err)
	}
	if _, err := w.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Abort = %v", err)
	}
}

func TestCommitFailures(t *testing.T) {
	tests := []struct {
		name      string
		op        vfs.Op
		k         int64
		finalName bool // the final name exists after the failure
	}{
		{"file sync", vfs.OpSync, 1, false},
		{"rename", vfs.OpRename, 1, false},
		{"directory sync", vfs.OpSyncDir, 5, true}, // 4 for the new directories, then the commit's
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := vfs.NewMem()
			fsys := vfs.WithErrors(mem, vfs.FailAt(tt.k, tt.op))
			dir := filepath.FromSlash("/r/steps/session_id=s/episode_record_id=e")
			w := cartpoleWriter(t, fsys, dir, Config{})
			writeCartpole(t, w, 5)
			if _, err := w.Commit(); err == nil {
				t.Fatal("Commit succeeded")
			}
			w.Abort()
			got := names(t, mem, dir)
			if tt.finalName {
				if len(got) != 1 || got[0] != "part-00000.parquet" {
					t.Fatalf("directory holds %v", got)
				}
				return
			}
			if len(got) != 0 {
				t.Fatalf("after a failed Commit and Abort the directory holds %v", got)
			}
		})
	}
}

// TestNewDirectoriesSynced checks that CreatePart syncs the parent of every
// directory it creates, and no more.
func TestNewDirectoriesSynced(t *testing.T) {
	mem := vfs.NewMem()
	rec := &recordSyncs{}
	fsys := vfs.WithErrors(mem, rec)
	root := filepath.FromSlash("/r")
	if err := mem.MkdirAll(filepath.Join(root, "steps")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "steps", "session_id=s", "episode_record_id=e")
	p, err := CreatePart(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "steps", "session_id=s"), filepath.Join(root, "steps")}
	if strings.Join(rec.dirs, ",") != strings.Join(want, ",") {
		t.Fatalf("synced %v, want %v", rec.dirs, want)
	}
	rec.dirs = nil
	if err := p.Commit(); err != nil {
		t.Fatal(err)
	}
	if len(rec.dirs) != 1 || rec.dirs[0] != dir {
		t.Fatalf("Commit synced %v, want [%s]", rec.dirs, dir)
	}
}

type recordSyncs struct{ dirs []string }

func (r *recordSyncs) Inject(op vfs.Op, name string) error {
	if op == vfs.OpSyncDir {
		r.dirs = append(r.dirs, name)
	}
	return nil
}

// opLog is an Injector that records the operations it sees.
type opLog struct{ ops []string }

func (l *opLog) Inject(op vfs.Op, name string) error {
	l.ops = append(l.ops, op.String()+" "+filepath.Base(name))
	return nil
}

// TestCreateNewGroupPart: part 0 of a directory just created is opened
// with one file creation (no directory creation, listing or stat), and
// publishing it still refuses to replace a file of its name.
func TestCreateNewGroupPart(t *testing.T) {
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
			dir := filepath.FromSlash("/r/steps/episode_record_id=e")
			if err := mem.MkdirAll(filepath.Dir(dir)); err != nil {
				t.Fatal(err)
			}
			if err := vfs.Mkdir(mem, dir); err != nil {
				t.Fatal(err)
			}
			p, err := CreateNewGroupPart(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			if want := "create .part-00000.parquet.tmp"; len(log.ops) != 1 || log.ops[0] != want {
				t.Fatalf("CreateNewGroupPart did %v, want [%s]", log.ops, want)
			}
			if _, err := p.Write([]byte("PAR1")); err != nil {
				t.Fatal(err)
			}
			if err := p.Finish(); err != nil {
				t.Fatal(err)
			}
			if c.squat {
				touch(t, mem, filepath.Join(dir, "part-00000.parquet"))
			}
			err = CommitParts(fsys, "/r", []*Part{p})
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("CommitParts: %v, want %v", err, c.wantErr)
			}
			if c.wantErr == nil {
				if got := names(t, mem, dir); len(got) != 1 || got[0] != "part-00000.parquet" {
					t.Fatalf("directory holds %v", got)
				}
			}
		})
	}
}
