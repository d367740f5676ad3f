package parquetout

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// The encoders write to an io.Writer; these helpers give them a file, the
// next part file of a directory, as the tests' stand-in for a store part
// (internal/store owns temp names and publishing).

// nextFile creates dir and returns the path of its next part file.
func nextFile(fsys vfs.FS, dir string) (string, error) {
	if err := fsys.MkdirAll(dir); err != nil {
		return "", err
	}
	entries, _ := fsys.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if k, _, ok := hive.ParsePartName(e.Name()); ok && k >= n {
			n = k + 1
		}
	}
	return filepath.Join(dir, hive.PartName(n)), nil
}

// stepsFile is a steps file being encoded into a file.
type stepsFile struct {
	*StepsWriter
	fsys vfs.FS
	f    vfs.File
	path string
}

func createSteps(format *StepsFormat, fsys vfs.FS, dir string, meta Metadata) (*stepsFile, error) {
	path, err := nextFile(fsys, dir)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Create(path)
	if err != nil {
		return nil, err
	}
	return &stepsFile{StepsWriter: format.NewEncoder(f, path, meta), fsys: fsys, f: f, path: path}, nil
}

func (w *stepsFile) Path() string { return w.path }

// Commit finishes the encoding and closes the file.
func (w *stepsFile) Commit() (string, error) {
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := w.f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", w.path, err)
	}
	return w.path, nil
}

// Abort drops the encoder and the file.
func (w *stepsFile) Abort() {
	w.StepsWriter.Abort()
	w.f.Close()
	w.fsys.Remove(w.path)
}

// tableFile is a table file being encoded into a file.
type tableFile[T Row] struct {
	*TableWriter[T]
	f    vfs.File
	path string
}

func createTableFile[T Row](fsys vfs.FS, dir string, meta Metadata, cfg Config) (*tableFile[T], error) {
	path, err := nextFile(fsys, dir)
	if err != nil {
		return nil, err
	}
	f, err := fsys.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewTableEncoder[T](f, path, meta, cfg)
	if err != nil {
		f.Close()
		fsys.Remove(path)
		return nil, err
	}
	return &tableFile[T]{TableWriter: w, f: f, path: path}, nil
}

func (w *tableFile[T]) Commit() (string, error) {
	if err := w.Close(); err != nil {
		return "", err
	}
	if err := w.f.Close(); err != nil {
		return "", fmt.Errorf("close %s: %w", w.path, err)
	}
	return w.path, nil
}

// writeTable encodes rows as the next part file of dir.
func writeTable[T Row](fsys vfs.FS, dir string, meta Metadata, cfg Config, rows []T) (string, error) {
	w, err := createTableFile[T](fsys, dir, meta, cfg)
	if err != nil {
		return "", err
	}
	if err := w.Write(rows); err != nil {
		return "", err
	}
	return w.Commit()
}

func cartpoleWriter(t *testing.T, fsys vfs.FS, dir string, cfg Config) *stepsFile {
	t.Helper()
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := createSteps(f, fsys, dir, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writeCartpole(t testing.TB, w interface{ Write(*StepRow) error }, n int) {
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

// openMem opens the Parquet file at path on fsys and checks its footer.
func openMem(t testing.TB, fsys vfs.FS, path string) *parquet.File {
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
