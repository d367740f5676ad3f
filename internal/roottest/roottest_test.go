package roottest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// TestEditFooterFile changes a key-value pair of a real Parquet file's
// footer: parquet-go reads the new value back, and the rows unchanged.
func TestEditFooterFile(t *testing.T) {
	type row struct {
		N int64 `parquet:"n"`
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[row](&buf, parquet.KeyValueMetadata("k", "before"))
	if _, err := w.Write([]row{{1}, {2}, {3}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	EditFooterFile(t, path, func(md *format.FileMetaData) {
		for i := range md.KeyValueMetadata {
			if md.KeyValueMetadata[i].Key == "k" {
				md.KeyValueMetadata[i].Value = "after"
			}
		}
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := f.Lookup("k"); v != "after" {
		t.Errorf("k = %q after the edit, want %q", v, "after")
	}
	if f.NumRows() != 3 {
		t.Errorf("%d rows after the edit, want 3", f.NumRows())
	}
}

// TestCopyDirTableFiles copies a tree and reads its table files back:
// every file but those under _rlrec, by relative path, with its bytes.
func TestCopyDirTableFiles(t *testing.T) {
	src := t.TempDir()
	for name, data := range map[string]string{
		"steps/env_id=e/part-00000.parquet": "steps",
		"sessions/part-00000.parquet":       "sessions",
		"_rlrec/layout":                     "layout",
	} {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(t.TempDir(), "copy")
	CopyDir(t, src, dst)
	got := TableFiles(t, dst)
	want := map[string]string{
		filepath.FromSlash("steps/env_id=e/part-00000.parquet"): "steps",
		filepath.FromSlash("sessions/part-00000.parquet"):       "sessions",
	}
	if len(got) != len(want) {
		t.Errorf("table files %v, want %v", got, want)
	}
	for name, data := range want {
		if string(got[name]) != data {
			t.Errorf("%s = %q, want %q", name, got[name], data)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "_rlrec", "layout")); err != nil || string(b) != "layout" {
		t.Errorf("the copy's _rlrec/layout: %q, %v", b, err)
	}
}
