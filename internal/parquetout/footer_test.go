package parquetout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// checkPaths fails unless every column chunk of pf names its schema leaf
// in path_in_schema.
func checkPaths(t *testing.T, name string, pf *parquet.File) {
	t.Helper()
	leaves := pf.Schema().Columns()
	for i, rg := range pf.Metadata().RowGroups {
		if len(rg.Columns) != len(leaves) {
			t.Fatalf("%s: row group %d has %d column chunks, the schema %d leaves", name, i, len(rg.Columns), len(leaves))
		}
		for j, cc := range rg.Columns {
			if got := []string(cc.MetaData.PathInSchema); !slices.Equal(got, leaves[j]) {
				t.Errorf("%s: row group %d column %d: path_in_schema %q, want %q", name, i, j, got, leaves[j])
				return
			}
		}
	}
}

// TestFootersAfterFirstFile writes files one after another through one
// steps format and one table configuration, which is where writers are
// recycled, and checks every file's footer, not only the first's.
func TestFootersAfterFirstFile(t *testing.T) {
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	const files = 3
	tests := []struct {
		name  string
		write func(t *testing.T, fsys vfs.FS, root string, i int) string
	}{
		{"steps", func() func(*testing.T, vfs.FS, string, int) string {
			var f *StepsFormat
			return func(t *testing.T, fsys vfs.FS, root string, i int) string {
				if f == nil {
					var err error
					if f, err = NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{RowGroupRows: 4}); err != nil {
						t.Fatal(err)
					}
				}
				erid := fmt.Sprintf("ep-%06d", i)
				w, err := createSteps(f, fsys, hive.EpisodePartition(schema.TableSteps, hive.Recording{SessionID: "s"}, erid).Dir(root), Metadata{SessionID: "s", EpisodeRecordID: erid})
				if err != nil {
					t.Fatal(err)
				}
				writeCartpole(t, w, 10)
				path, err := w.Commit()
				if err != nil {
					t.Fatal(err)
				}
				return path
			}
		}()},
		{"episodes", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			erid := fmt.Sprintf("ep-%06d", i)
			path, err := writeTable(fsys, hive.EpisodePartition(schema.TableEpisodes, hive.Recording{SessionID: "s"}, erid).Dir(root), Metadata{SessionID: "s"},
				Config{}, []schema.EpisodeRow{{EpisodeID: erid, Status: schema.EpisodeCompleted, StartedAt: t0}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"sessions", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			path, err := writeTable(fsys, hive.RecordingPartition(schema.TableSessions, hive.Recording{SessionID: fmt.Sprint("s", i)}).Dir(root), Metadata{SessionID: fmt.Sprint("s", i)},
				Config{}, []schema.SessionRow{{Status: schema.SessionEnded, StartedAt: t0}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"logs", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			path, err := writeTable(fsys, hive.RecordingPartition(schema.TableLogs, hive.Recording{SessionID: "s"}).Dir(root), Metadata{SessionID: "s"},
				Config{}, []schema.LogRow{{Time: t0, Level: "info", Message: fmt.Sprint("file ", i)}})
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
		{"telemetry in row groups", func(t *testing.T, fsys vfs.FS, root string, i int) string {
			var rows []schema.TelemetryRow
			for j := 0; j < 5; j++ {
				rows = append(rows, schema.TelemetryRow{Time: t0, Horizon: "window", Op: "step", Metric: "latency", Count: int64(j)})
			}
			path, err := writeTable(fsys, hive.RecordingPartition(schema.TableTelemetry, hive.Recording{SessionID: "s"}).Dir(root), Metadata{SessionID: "s"}, Config{RowGroupRows: 2}, rows)
			if err != nil {
				t.Fatal(err)
			}
			return path
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := osFS(t)
			for i := 0; i < files; i++ {
				path := tc.write(t, fsys, root, i)
				rel, _ := filepath.Rel(root, path)
				checkPaths(t, fmt.Sprintf("file %d (%s)", i, rel), openParquet(t, path))
				if err := checkFooterFile(path); err != nil {
					t.Errorf("file %d (%s): %v", i, rel, err)
				}
			}
		})
	}
}

func checkFooterFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return CheckFooter(bytes.NewReader(b), int64(len(b)))
}

// memFile returns the bytes of the file at path in fsys.
func memFile(t testing.TB, fsys vfs.FS, path string) []byte {
	t.Helper()
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testFiles returns a file of every table, written by this package.
func testFiles(t testing.TB) map[string][]byte {
	t.Helper()
	mem := vfs.NewMem()
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	files := map[string][]byte{}
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{RowGroupRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{10, 0} {
		w, err := createSteps(f, mem, fmt.Sprint("/steps", n), Metadata{SessionID: "s", EpisodeRecordID: "e"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			o, a := f32s(float32(i), 1, 2, 3), i64le(int64(i&1))
			r := StepRow{EpisodeID: benchEpisodeID, Step: int64(i), ObservationBlob: blobOf(o), ActionBlob: blobOf(a),
				ObservationLeaves: [][]byte{o}, ActionLeaves: [][]byte{a}}
			if err := w.Write(&r); err != nil {
				t.Fatal(err)
			}
		}
		path, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("steps of %d rows", n)] = memFile(t, mem, path)
	}
	all, err := NewStepsFormat(mustCompile(t, allKindsSpec()), mustCompile(t, sMultiDiscrete(dtI64, 3, 3)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := createSteps(all, mem, "/all", Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		leaves, _ := allKindsLeaves(i)
		if err := w.Write(&StepRow{EpisodeID: "e", Step: int64(i), ObservationLeaves: leaves, ActionLeaves: [][]byte{append(i64le(1), i64le(2)...)}}); err != nil {
			t.Fatal(err)
		}
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	files["steps of every leaf kind"] = memFile(t, mem, path)
	add := func(name string, path string, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		files[name] = memFile(t, mem, path)
	}
	for _, codec := range []string{CompressionSnappy, CompressionNone} {
		f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{Compression: codec})
		if err != nil {
			t.Fatal(err)
		}
		w, err := createSteps(f, mem, "/steps-"+codec, Metadata{SessionID: "s", EpisodeRecordID: "e"})
		if err != nil {
			t.Fatal(err)
		}
		writeCartpole(t, w, 6)
		path, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		files["steps "+codec] = memFile(t, mem, path)
	}
	meta := Metadata{SessionID: "s", EpisodeRecordID: "e"}
	path, err = writeTable(mem, "/episodes", meta, Config{}, []schema.EpisodeRow{{EpisodeID: "e", Status: schema.EpisodeCompleted, StartedAt: t0, FinalObservationBlob: []byte{1}}})
	add("episodes", path, err)
	path, err = writeTable(mem, "/sessions", meta, Config{}, []schema.SessionRow{{Status: schema.SessionEnded, StartedAt: t0}})
	add("sessions", path, err)
	path, err = writeTable(mem, "/logs", meta, Config{}, []schema.LogRow{{Time: t0, Level: "info", Message: "m"}, {Time: t0, Level: "warn", Message: "n"}})
	add("logs", path, err)
	var tel []schema.TelemetryRow
	for i := 0; i < 5; i++ {
		tel = append(tel, schema.TelemetryRow{Time: t0, Horizon: "window", Metric: "latency", Count: int64(i)})
	}
	path, err = writeTable(mem, "/telemetry", meta, Config{RowGroupRows: 2}, tel)
	add("telemetry in row groups", path, err)
	return files
}

func TestCheckFooterWrittenFiles(t *testing.T) {
	for name, b := range testFiles(t) {
		t.Run(name, func(t *testing.T) {
			if err := CheckFooter(bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// footerOf splits a file into what precedes its footer and the decoded
// footer.
func footerOf(t testing.TB, b []byte) ([]byte, *format.FileMetaData) {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	start := len(b) - 8 - n
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[start:len(b)-8], &md); err != nil {
		t.Fatal(err)
	}
	return b[:start], &md
}

// withFooter returns data followed by footer bytes, their length and the
// magic.
func withFooter(data, footer []byte) []byte {
	out := append(slices.Clone(data), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// editFooter returns b with its footer decoded, edited and encoded again.
func editFooter(t testing.TB, b []byte, edit func(md *format.FileMetaData)) []byte {
	t.Helper()
	data, md := footerOf(t, b)
	edit(md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), md)
	if err != nil {
		t.Fatal(err)
	}
	return withFooter(data, footer)
}

func TestCheckFooter(t *testing.T) {
	files := testFiles(t)
	steps := files["steps of 10 rows"] // 3 row groups of 21 columns (15 and version 3's 6)
	all := files["steps of every leaf kind"]
	edit := func(b []byte, f func(md *format.FileMetaData)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return editFooter(t, b, f) }
	}
	raw := func(f func(b []byte) []byte) func(t *testing.T) []byte {
		return func(t *testing.T) []byte { return f(slices.Clone(steps)) }
	}
	cc := func(md *format.FileMetaData, rg, col int) *format.ColumnChunk { return &md.RowGroups[rg].Columns[col] }
	tests := []struct {
		name string
		file func(t *testing.T) []byte
		// want: "" for a valid footer, else a part of the problem.
		want             string
		rowGroup, column int
		path             string
		more             int
		unreadable       bool
	}{
		{name: "re-encoded unchanged", file: edit(steps, func(*format.FileMetaData) {})},
		{name: "path_in_schema empty after Reset (parquet-go #602)", file: edit(steps, func(md *format.FileMetaData) {
			for i := range md.RowGroups {
				for j := range md.RowGroups[i].Columns {
					p := md.RowGroups[i].Columns[j].MetaData.PathInSchema
					md.RowGroups[i].Columns[j].MetaData.PathInSchema = make([]string, len(p))
				}
			}
		}), want: `path_in_schema is [""], the schema's path of the column is ["episode_id"]`, rowGroup: 0, column: 0, path: "episode_id", more: 3*22 - 1},
		{name: "path_in_schema missing", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 2, 13).MetaData.PathInSchema = nil
		}), want: `path_in_schema is [], the schema's path of the column is ["observation" "list" "element"]`, rowGroup: 2, column: 13, path: "observation.list.element"},
		{name: "path_in_schema of another column", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 1, 3).MetaData.PathInSchema = []string{"episode_index"}
		}), want: `path_in_schema is ["episode_index"], the schema's path of the column is ["step"]`, rowGroup: 1, column: 3, path: "step"},
		{name: "path_in_schema of a nested column cut short", file: edit(all, func(md *format.FileMetaData) {
			p := &cc(md, 0, 20).MetaData.PathInSchema
			*p = (*p)[:len(*p)-1]
		}), want: "path_in_schema is", rowGroup: 0, column: 20},
		{name: "type not the schema's", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 7).MetaData.Type = format.Float
		}), want: "type is FLOAT, the schema's type of the column is DOUBLE", rowGroup: 0, column: 7, path: "reward"},
		{name: "num_values short of num_rows", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 1, 4).MetaData.NumValues--
		}), want: "num_values is 3, the row group has 4 rows and the column does not repeat", rowGroup: 1, column: 4, path: "session_step"},
		{name: "num_values of a list below num_rows", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 13).MetaData.NumValues = 3
		}), want: "num_values is 3, fewer than the row group's 4 rows", rowGroup: 0, column: 13},
		{name: "num_values negative", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 0).MetaData.NumValues = -1
		}), want: "num_values is -1", rowGroup: 0, column: 0},
		{name: "file num_rows not the row groups' sum", file: edit(steps, func(md *format.FileMetaData) {
			md.NumRows = 11
		}), want: "num_rows is 11, its row groups hold 10", rowGroup: -1, column: -1},
		{name: "row group num_rows not its chunks'", file: edit(steps, func(md *format.FileMetaData) {
			md.RowGroups[2].NumRows, md.NumRows = 3, 9
		}), want: "num_values is 2, the row group has 3 rows", rowGroup: 2, column: 0, more: 21},
		{name: "row group ordinal not its position", file: edit(steps, func(md *format.FileMetaData) {
			md.RowGroups[1].Ordinal = 2
		}), want: "ordinal is 2, not the row group's position", rowGroup: 1, column: -1},
		{name: "row group missing a column chunk", file: edit(steps, func(md *format.FileMetaData) {
			md.RowGroups[1].Columns = md.RowGroups[1].Columns[:14]
		}), want: "14 column chunks, the schema has 22 columns", rowGroup: 1, column: -1},
		{name: "unknown codec", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 1).MetaData.Codec = 42
		}), want: "codec 42 is not a Parquet compression codec", rowGroup: 0, column: 1},
		{name: "pages past the footer", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 2, 2).MetaData.DataPageOffset += 1 << 20
		}), want: "the pages", rowGroup: 2, column: 2},
		{name: "pages over the leading magic", file: edit(steps, func(md *format.FileMetaData) {
			m := &cc(md, 0, 0).MetaData
			m.DataPageOffset, m.DictionaryPageOffset = 2, 0
		}), want: "263 bytes at offset 2, not within bytes 4 to", rowGroup: 0, column: 0},
		{name: "dictionary page after the data pages", file: edit(steps, func(md *format.FileMetaData) {
			m := &cc(md, 0, 0).MetaData
			m.DictionaryPageOffset = m.DataPageOffset + 1
		}), want: "is not before data_page_offset", rowGroup: 0, column: 0},
		{name: "column index outside the file", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 5).ColumnIndexOffset = -5
		}), want: "the column index", rowGroup: 0, column: 5},
		{name: "offset index into the footer", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 1, 5).OffsetIndexLength += 1 << 16
		}), want: "the offset index", rowGroup: 1, column: 5},
		{name: "chunk in another file", file: edit(steps, func(md *format.FileMetaData) {
			cc(md, 0, 6).FilePath = "other.parquet"
		}), want: `file_path is "other.parquet"`, rowGroup: 0, column: 6},
		{name: "schema with more children than elements", file: edit(steps, func(md *format.FileMetaData) {
			md.Schema[0].NumChildren.Set(23)
		}), want: "the schema ends within the root", rowGroup: -1, column: -1},
		{name: "schema with elements outside the tree", file: edit(steps, func(md *format.FileMetaData) {
			md.Schema[0].NumChildren.Set(21)
		}), want: "the schema has 25 elements, its tree 24", rowGroup: -1, column: -1},
		{name: "schema leaf without a type", file: edit(steps, func(md *format.FileMetaData) {
			md.Schema[1].Type.Reset()
		}), want: "schema element 1 (episode_id) has neither children nor a type", rowGroup: -1, column: -1},
		{name: "schema empty", file: edit(steps, func(md *format.FileMetaData) {
			md.Schema = nil
		}), want: "the schema is empty", rowGroup: -1, column: -1},
		{name: "too short", file: raw(func([]byte) []byte { return []byte("PAR1PAR1") }),
			want: "a file of 8 bytes is too short", rowGroup: -1, column: -1, unreadable: true},
		{name: "no leading magic", file: raw(func(b []byte) []byte { b[0] = 'X'; return b }),
			want: `the file starts with "XAR1"`, rowGroup: -1, column: -1, unreadable: true},
		{name: "no trailing magic (truncated)", file: raw(func(b []byte) []byte { return b[:len(b)-3] }),
			want: "not the magic", rowGroup: -1, column: -1, unreadable: true},
		{name: "footer length past the start", file: raw(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-8:], uint32(len(b)))
			return b
		}), want: "does not fit in a file of", rowGroup: -1, column: -1, unreadable: true},
		{name: "footer length zero", file: raw(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[len(b)-8:], 0)
			return b
		}), want: "the footer length 0 does not fit", rowGroup: -1, column: -1, unreadable: true},
		{name: "footer cut short", file: raw(func(b []byte) []byte {
			data, md := footerOf(t, b)
			footer, _ := thrift.Marshal(new(thrift.CompactProtocol), md)
			return withFooter(data, footer[:len(footer)-10])
		}), want: "the footer does not decode", rowGroup: -1, column: -1, unreadable: true},
		{name: "bytes after the footer's struct", file: raw(func(b []byte) []byte {
			data, md := footerOf(t, b)
			footer, _ := thrift.Marshal(new(thrift.CompactProtocol), md)
			return withFooter(data, append(footer, 0, 0))
		}), want: "the footer does not decode", rowGroup: -1, column: -1, unreadable: true},
		{name: "footer declaring a list of 2^31 schema elements", file: raw(func(b []byte) []byte {
			data, _ := footerOf(t, b)
			// version 1; field 2 (schema), a list of 0x7fffffff structs.
			footer := []byte{0x15, 0x02, 0x19, 0xfc, 0xff, 0xff, 0xff, 0xff, 0x07, 0x00, 0x00}
			return withFooter(data, footer)
		}), want: "does not fit in the", rowGroup: -1, column: -1, unreadable: true},
		{name: "footer of random bytes", file: raw(func(b []byte) []byte {
			data, md := footerOf(t, b)
			footer, _ := thrift.Marshal(new(thrift.CompactProtocol), md)
			for i := range footer {
				footer[i] = byte(i*131 + 7)
			}
			return withFooter(data, footer)
		}), want: "the footer does not decode", rowGroup: -1, column: -1, unreadable: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.file(t)
			err := CheckFooter(bytes.NewReader(b), int64(len(b)))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FooterError
			if !errors.As(err, &fe) || !errors.Is(err, ErrFooter) {
				t.Fatalf("CheckFooter = %v, want a *FooterError wrapping ErrFooter", err)
			}
			if !strings.Contains(fe.Problem, tc.want) {
				t.Errorf("problem %q, want it to contain %q", fe.Problem, tc.want)
			}
			if fe.RowGroup != tc.rowGroup || fe.Column != tc.column {
				t.Errorf("row group %d column %d, want %d and %d", fe.RowGroup, fe.Column, tc.rowGroup, tc.column)
			}
			if tc.path != "" && fe.Path != tc.path {
				t.Errorf("path %q, want %q", fe.Path, tc.path)
			}
			if got, want := errors.Is(err, ErrFooterUnreadable), tc.unreadable; got != want {
				t.Errorf("errors.Is(err, ErrFooterUnreadable) = %v, want %v", got, want)
			}
			if fe.More != tc.more {
				t.Errorf("%d more problems, want %d: %v", fe.More, tc.more, err)
			}
			t.Log(err)
		})
	}
}

// TestCheckFooterReadError tells a file that cannot be read from a footer
// that is wrong.
func TestCheckFooterReadError(t *testing.T) {
	b := testFiles(t)["logs"]
	err := CheckFooter(bytes.NewReader(b), int64(len(b))+100)
	if err == nil || errors.Is(err, ErrFooter) {
		t.Fatalf("CheckFooter of a size past the end = %v, want a read error", err)
	}
}

// FuzzCheckFooter damages written files anywhere: CheckFooter returns nil
// or a *FooterError, never panics, and a footer it passes opens; CheckPages
// returns nil, a *FooterError or a *PageError.
func FuzzCheckFooter(f *testing.F) {
	files := testFiles(f)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range files {
			if !yield(k) {
				return
			}
		}
	})
	f.Add(uint8(0), uint32(18), uint8(3), []byte(nil))
	f.Add(uint8(1), uint32(1<<31), uint8(0), []byte{0})
	f.Add(uint8(2), uint32(40), uint8(7), []byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, file uint8, at uint32, bit uint8, insert []byte) {
		b := slices.Clone(files[names[int(file)%len(names)]])
		// Damage the footer mostly: count positions from the end.
		i := len(b) - 1 - int(at%uint32(len(b)))
		b[i] ^= 1 << (bit % 8)
		if len(insert) > 0 {
			b = slices.Insert(b, i, insert...)
		}
		err := CheckFooter(bytes.NewReader(b), int64(len(b)))
		var fe *FooterError
		if err != nil && !errors.As(err, &fe) {
			t.Fatalf("CheckFooter = %v, not a *FooterError", err)
		}
		if err == nil {
			if _, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)), parquet.SkipPageIndex(true)); err != nil {
				t.Fatalf("CheckFooter passed a footer parquet-go does not open: %v", err)
			}
		}
		var pe *PageError
		if err := CheckPages(bytes.NewReader(b), int64(len(b))); err != nil && !errors.As(err, &fe) && !errors.As(err, &pe) {
			t.Fatalf("CheckPages = %v, not a *FooterError or *PageError", err)
		}
	})
}

func TestCheckFooters(t *testing.T) {
	files := testFiles(t)
	broken := editFooter(t, files["logs"], func(md *format.FileMetaData) {
		md.RowGroups[0].Columns[1].MetaData.PathInSchema = []string{""}
	})
	tests := []struct {
		name  string
		files map[string][]byte // path under root -> content
		want  []string          // parts of the error; none: nil
	}{
		{name: "no root", files: nil},
		{name: "valid files", files: map[string][]byte{
			"logs/session_id=s/part-00000.parquet":                         files["logs"],
			"steps/session_id=s/episode_record_id=e/part-00000.parquet":    files["steps of 10 rows"],
			"episodes/session_id=s/episode_record_id=e/part-00000.parquet": files["episodes"],
		}},
		{name: "temp and other files are not checked", files: map[string][]byte{
			"logs/session_id=s/.part-00001.parquet.tmp": []byte("PAR1"),
			"_rlrec/log/00000.seg":                      []byte("x"),
		}},
		{name: "each bad file named", files: map[string][]byte{
			"logs/session_id=s/part-00000.parquet": files["logs"],
			"logs/session_id=s/part-00001.parquet": broken,
			"logs/session_id=t/part-00000.parquet": []byte("PAR1"),
		}, want: []string{
			filepath.FromSlash("logs/session_id=s/part-00001.parquet") + ": parquetout: footer: row group 0, column 1 (level): path_in_schema",
			filepath.FromSlash("logs/session_id=t/part-00000.parquet") + ": parquetout: footer: a file of 4 bytes is too short",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			for p, b := range tc.files {
				p = filepath.Join("/root", filepath.FromSlash(p))
				if err := mem.MkdirAll(filepath.Dir(p)); err != nil {
					t.Fatal(err)
				}
				f, err := mem.Create(p)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.Write(b); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			err := checkFooters(mem, "/root")
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, ErrFooter) {
				t.Fatalf("checkFooters = %v, want an error wrapping ErrFooter", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("%d problems, want %d:\n%v", n, len(tc.want), err)
			}
		})
	}
}
