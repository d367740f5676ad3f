package verify

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// byteAt gives the offset of a byte in a file.
type byteAt func(b []byte) int

// offset is byte n, counted from the end when negative.
func offset(n int) byteAt {
	return func(b []byte) int {
		if n < 0 {
			return len(b) + n
		}
		return n
	}
}

// endOfFirstChunk is the last byte of the file's first column chunk: page
// data, which the page's checksum covers.
func endOfFirstChunk(b []byte) int {
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		return 0
	}
	md := pf.Metadata().RowGroups[0].Columns[0].MetaData
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	return int(start+md.TotalCompressedSize) - 1
}

// lastOf is the first byte of the last occurrence of s: for a column name,
// its path_in_schema in the footer's last column chunk.
func lastOf(s string) byteAt {
	return func(b []byte) int { return bytes.LastIndex(b, []byte(s)) }
}

// TestVerifyFlippedBits damages one bit of a file the recorder wrote:
// verify must report that file, whatever parquet-go makes of it (an
// error, wrong values or a panic).
func TestVerifyFlippedBits(t *testing.T) {
	tests := []struct {
		name  string
		table string
		at    byteAt
		bit   uint
		want  Check
	}{
		// parquet-go panicked reading this one; a page check now finds
		// it first.
		{"telemetry byte 18 bit 3", schema.TableTelemetry, offset(18), 3, CheckFile},
		{"telemetry leading magic", schema.TableTelemetry, offset(1), 0, CheckFile},
		{"telemetry trailing magic", schema.TableTelemetry, offset(-2), 6, CheckFile},
		{"telemetry footer length", schema.TableTelemetry, offset(-6), 5, CheckFile},
		{"logs byte 18 bit 3", schema.TableLogs, offset(18), 3, CheckFile},
		{"episodes page data", schema.TableEpisodes, endOfFirstChunk, 7, CheckFile},
		// A page header's num_values (no checksum covers headers):
		// parquet-go reads these without an error.
		{"sessions byte 18 bit 3", schema.TableSessions, offset(18), 3, CheckFile},
		{"steps dictionary num_values", schema.TableSteps, offset(18), 3, CheckFile},
		{"steps path_in_schema", schema.TableSteps, lastOf(schema.ColRecordedAt), 0, CheckFooter},
		{"sessions path_in_schema", schema.TableSessions, lastOf(schema.ColDroppedSteps), 2, CheckFooter},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			roottest.CopyDir(t, base(t), root)
			p := parquetFiles(t, root, tc.table)[0]
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[tc.at(b)] ^= 1 << tc.bit
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			rep, err := Root(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			rep.Write(&out)
			if rep.OK() {
				t.Fatalf("verify reports no problem:\n%s", out.String())
			}
			rel, _ := filepath.Rel(root, p)
			found := false
			for _, pr := range rep.Problems {
				found = found || (pr.Path == filepath.ToSlash(rel) && pr.Check == tc.want)
			}
			if !found {
				t.Fatalf("no %s problem names %s:\n%s", tc.want, rel, out.String())
			}
			for _, pr := range rep.Problems {
				if pr.Path != filepath.ToSlash(rel) {
					t.Errorf("a problem of another file than the damaged one: %+v", pr)
				}
			}
			t.Log(out.String())
		})
	}
}

// TestVerifyEveryFlippedBit flips one bit of every byte of a telemetry
// file in turn, in a ROOT holding only that file: verify always returns a
// report, whatever parquet-go makes of the damage (before, a panic in
// parquet-go made checkFile return nothing and Root crash).
func TestVerifyEveryFlippedBit(t *testing.T) {
	src := parquetFiles(t, base(t), schema.TableTelemetry)[0]
	rel, _ := filepath.Rel(base(t), src)
	root := filepath.Join(t.TempDir(), "root")
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	clean, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	missed := 0
	for i := 0; i < len(clean); i++ {
		b := bytes.Clone(clean)
		b[i] ^= 1 << 3
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := Root(context.Background(), root, WithWorkers(1))
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK() {
			missed++
		}
	}
	// Statistics, index bounds and metadata text are covered by no
	// checksum: a flip there reads back as a valid file.
	t.Logf("%d of %d flips not reported", missed, len(clean))
}

// TestVerifyReportsPanics: parquet-go has panicked on some damaged files
// (once on a one-bit flip of a steps file's footer); verify must report
// such a file as damaged, with the panic's text, and go on with the
// others. A file system whose reads of one steps file panic stands in for
// the damage, so that the test does not depend on which flips a
// parquet-go version still panics on: in its pages and in its footer
// (the checks of each recover), and anywhere else (closing the file:
// checkFile recovers).
func TestVerifyReportsPanics(t *testing.T) {
	root := base(t)
	src := parquetFiles(t, root, schema.TableSteps)[0]
	rel, _ := filepath.Rel(root, src)
	clean, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	footer := int64(len(clean) - 8 - int(binary.LittleEndian.Uint32(clean[len(clean)-8:])))
	for _, tc := range []struct {
		name     string
		from, to int64 // reads starting in [from, to) panic
		close    bool  // Close panics
		want     string
	}{
		{"pages", 4, footer, false, "checking the pages panicked: injected panic"},
		{"footer", footer, int64(len(clean)), false, "the footer does not decode: injected panic"},
		{"elsewhere", 0, 0, true, "reading it panicked: injected panic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := check(context.Background(), panicFS{FS: vfs.OS(), name: src, from: tc.from, to: tc.to, close: tc.close}, root, WithWorkers(1))
			if err != nil {
				t.Fatal(err)
			}
			var found bool
			for _, pr := range rep.Problems {
				if pr.Check == CheckFile && pr.Path == filepath.ToSlash(rel) && strings.Contains(pr.Message, tc.want) {
					found = true
				} else {
					t.Errorf("unexpected problem: %+v", pr)
				}
			}
			if !found {
				t.Fatalf("verify did not report %q for the file whose reading panicked; report %+v", tc.want, rep)
			}
			if rep.Files < 2 {
				t.Errorf("verify checked %d files: it must go on past the one that panicked", rep.Files)
			}
		})
	}
}

// panicFS panics on reads of the file name that start in [from, to),
// and on its Close when close is set.
type panicFS struct {
	vfs.FS
	name     string
	from, to int64
	close    bool
}

func (p panicFS) Open(name string) (vfs.File, error) {
	f, err := p.FS.Open(name)
	if err != nil || name != p.name {
		return f, err
	}
	return panicFile{File: f, from: p.from, to: p.to, close: p.close}, nil
}

type panicFile struct {
	vfs.File
	from, to int64
	close    bool
}

func (f panicFile) Close() error {
	err := f.File.Close()
	if f.close {
		panic("injected panic")
	}
	return err
}

func (f panicFile) ReadAt(b []byte, off int64) (int, error) {
	if off >= f.from && off < f.to {
		panic("injected panic")
	}
	return f.File.ReadAt(b, off)
}
