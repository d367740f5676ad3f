package parquetout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

func TestCheckPagesWrittenFiles(t *testing.T) {
	for name, b := range testFiles(t) {
		t.Run(name, func(t *testing.T) {
			if err := CheckPages(bytes.NewReader(b), int64(len(b))); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// firstPage returns the offset of the first page header of row group rg,
// column col, and the header decoded.
func firstPage(t *testing.T, b []byte, rg, col int) (int, int, *format.PageHeader) {
	t.Helper()
	_, md := footerOf(t, b)
	m := &md.RowGroups[rg].Columns[col].MetaData
	off := m.DataPageOffset
	if m.DictionaryPageOffset > 0 {
		off = min(off, m.DictionaryPageOffset)
	}
	n, err := compactStructLen(b[off:])
	if err != nil {
		t.Fatal(err)
	}
	var h format.PageHeader
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[off:int(off)+n], &h); err != nil {
		t.Fatal(err)
	}
	return int(off), n, &h
}

// editPage returns b with the first page header of rg, col decoded,
// edited and encoded again, and the footer's offsets moved to match.
func editPage(t *testing.T, b []byte, rg, col int, edit func(h *format.PageHeader)) []byte {
	t.Helper()
	off, n, h := firstPage(t, b, rg, col)
	edit(h)
	hb, err := thrift.Marshal(new(thrift.CompactProtocol), h)
	if err != nil {
		t.Fatal(err)
	}
	if len(hb) != n {
		t.Fatalf("the edited header has %d bytes, the original %d: pick an edit of the same size", len(hb), n)
	}
	out := slices.Clone(b)
	copy(out[off:], hb)
	return out
}

func TestCheckPages(t *testing.T) {
	files := testFiles(t)
	steps := files["steps of 10 rows"] // 3 row groups (4, 4, 2 rows) of 15 columns
	const reward = 7                   // a double column, no dictionary
	tests := []struct {
		name             string
		file             func(t *testing.T) []byte
		want             string
		rowGroup, column int
		page             int
	}{
		{name: "page byte flipped", file: func(t *testing.T) []byte {
			off, n, _ := firstPage(t, steps, 1, reward)
			b := slices.Clone(steps)
			b[off+n+2] ^= 0x10
			return b
		}, want: "the page's bytes do not match its checksum", rowGroup: 1, column: reward, page: 0},
		{name: "checksum dropped", file: func(t *testing.T) []byte {
			off, n, h := firstPage(t, steps, 0, reward)
			h.CRC = 0
			hb, _ := thrift.Marshal(new(thrift.CompactProtocol), h)
			b := slices.Concat(steps[:off], hb, steps[off+n:])
			return fixOffsets(t, b, off, len(hb)-n)
		}, want: "the page has no checksum", rowGroup: 0, column: reward, page: 0},
		{name: "num_values of a v2 page", file: func(t *testing.T) []byte {
			return editPage(t, steps, 2, reward, func(h *format.PageHeader) { h.DataPageHeaderV2.V.NumValues = 1 })
		}, want: "num_values 1, num_rows 2: the column does not repeat", rowGroup: 2, column: reward, page: 0},
		{name: "num_rows of a v2 page", file: func(t *testing.T) []byte {
			return editPage(t, steps, 0, reward, func(h *format.PageHeader) {
				h.DataPageHeaderV2.V.NumRows, h.DataPageHeaderV2.V.NumValues = 3, 3
			})
		}, want: "the data pages hold 3 values, the footer says 4", rowGroup: 0, column: reward, page: -1},
		{name: "num_nulls over num_values", file: func(t *testing.T) []byte {
			return editPage(t, steps, 0, reward, func(h *format.PageHeader) { h.DataPageHeaderV2.V.NumNulls = 5 })
		}, want: "num_nulls 5 is more than num_values 4", rowGroup: 0, column: reward, page: 0},
		{name: "dictionary num_values", file: func(t *testing.T) []byte {
			return editPage(t, steps, 0, 0, func(h *format.PageHeader) { h.DictionaryPageHeader.V.NumValues = 5 })
		}, want: "the dictionary's num_values is 5, its page holds 1 byte arrays", rowGroup: 0, column: 0, page: 0},
		{name: "compressed size past the chunk", file: func(t *testing.T) []byte {
			return editPage(t, steps, 1, reward, func(h *format.PageHeader) { h.CompressedPageSize += 40 })
		}, want: "the page does not fit", rowGroup: 1, column: reward, page: 0},
		{name: "uncompressed size of a zstd page", file: func(t *testing.T) []byte {
			return editPage(t, steps, 0, reward, func(h *format.PageHeader) { h.UncompressedPageSize++ })
		}, want: "uncompressed_page_size 33, the ZSTD page holds 32 bytes", rowGroup: 0, column: reward, page: 0},
		{name: "uncompressed size of a snappy page", file: func(t *testing.T) []byte {
			return editPage(t, files["steps snappy"], 0, reward, func(h *format.PageHeader) { h.UncompressedPageSize-- })
		}, want: "uncompressed_page_size 47, the SNAPPY page holds 48 bytes", rowGroup: 0, column: reward, page: 0},
		{name: "uncompressed size of an uncompressed page", file: func(t *testing.T) []byte {
			return editPage(t, files["steps none"], 0, reward, func(h *format.PageHeader) { h.UncompressedPageSize-- })
		}, want: "uncompressed_page_size 47, the UNCOMPRESSED page holds 48 bytes", rowGroup: 0, column: reward, page: 0},
		{name: "levels longer than the page", file: func(t *testing.T) []byte {
			return editPage(t, steps, 0, reward, func(h *format.PageHeader) { h.DataPageHeaderV2.V.DefinitionLevelsByteLength = 60 })
		}, want: "levels of 60 and 0 bytes do not fit", rowGroup: 0, column: reward, page: 0},
		{name: "header garbage", file: func(t *testing.T) []byte {
			off, _, _ := firstPage(t, steps, 2, reward)
			b := slices.Clone(steps)
			b[off] = 0xff
			return b
		}, want: "the page header does not decode", rowGroup: 2, column: reward, page: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.file(t)
			err := CheckPages(bytes.NewReader(b), int64(len(b)))
			var pe *PageError
			if !errors.As(err, &pe) || !errors.Is(err, ErrPage) {
				t.Fatalf("CheckPages = %v, want a *PageError wrapping ErrPage", err)
			}
			if !strings.Contains(pe.Problem, tc.want) {
				t.Errorf("problem %q, want it to contain %q", pe.Problem, tc.want)
			}
			if pe.RowGroup != tc.rowGroup || pe.Column != tc.column || pe.Page != tc.page {
				t.Errorf("row group %d column %d page %d, want %d, %d, %d", pe.RowGroup, pe.Column, pe.Page, tc.rowGroup, tc.column, tc.page)
			}
			t.Log(err)
		})
	}
}

// fixOffsets moves the footer's offsets past off by d bytes, for a page
// header that changed size, and the chunk's size.
func fixOffsets(t *testing.T, b []byte, off, d int) []byte {
	t.Helper()
	return editFooter(t, b, func(md *format.FileMetaData) {
		for i := range md.RowGroups {
			for j := range md.RowGroups[i].Columns {
				cc := &md.RowGroups[i].Columns[j]
				m := &cc.MetaData
				start := m.DataPageOffset
				if m.DictionaryPageOffset > 0 {
					start = min(start, m.DictionaryPageOffset)
				}
				if start <= int64(off) && int64(off) < start+m.TotalCompressedSize {
					m.TotalCompressedSize += int64(d)
				}
				move := func(p *int64) {
					if *p > int64(off) {
						*p += int64(d)
					}
				}
				move(&m.DataPageOffset)
				if m.DictionaryPageOffset > 0 {
					move(&m.DictionaryPageOffset)
				}
				move(&cc.ColumnIndexOffset)
				move(&cc.OffsetIndexOffset)
				move(&cc.FileOffset)
			}
		}
	})
}

// TestCheckPagesAfterEveryFlip flips one bit of every byte of a file's
// pages: CheckPages never panics, and reports every flip in a page's
// bytes, which its checksum covers.
func TestCheckPagesAfterEveryFlip(t *testing.T) {
	b := testFiles(t)["telemetry in row groups"]
	data, md := footerOf(t, b)
	covered := make([]bool, len(data))
	for _, rg := range md.RowGroups {
		for _, cc := range rg.Columns {
			m := cc.MetaData
			off := m.DataPageOffset
			if m.DictionaryPageOffset > 0 {
				off = min(off, m.DictionaryPageOffset)
			}
			for end := off + m.TotalCompressedSize; off < end; {
				n, err := compactStructLen(b[off:])
				if err != nil {
					t.Fatal(err)
				}
				var h format.PageHeader
				if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[off:off+int64(n)], &h); err != nil {
					t.Fatal(err)
				}
				for i := off + int64(n); i < off+int64(n)+int64(h.CompressedPageSize); i++ {
					covered[i] = true
				}
				if crc32.ChecksumIEEE(b[off+int64(n):off+int64(n)+int64(h.CompressedPageSize)]) != uint32(h.CRC) {
					t.Fatal("a written page does not match its checksum")
				}
				off += int64(n) + int64(h.CompressedPageSize)
			}
		}
	}
	missed := 0
	for i := 4; i < len(data); i++ {
		d := slices.Clone(b)
		d[i] ^= 1 << 3
		err := CheckPages(bytes.NewReader(d), int64(len(d)))
		if err != nil && !errors.Is(err, ErrPage) && !errors.Is(err, ErrFooter) {
			t.Fatalf("byte %d: %v", i, err)
		}
		if err == nil {
			if covered[i] {
				t.Errorf("byte %d, in a page's bytes, flipped unreported", i)
			}
			missed++
		}
	}
	t.Logf("%d of %d flips before the footer not reported (statistics and index bounds)", missed, len(data)-4)
	_ = binary.LittleEndian
}
