package parquetout

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// PageError is what CheckPages found wrong with a file's pages: the first
// problem, in file order, and how many more there are. It wraps ErrPage.
type PageError struct {
	// RowGroup and Column locate the column chunk (Column is the 0-based
	// leaf index), Path is the column's dot-joined schema path.
	RowGroup, Column int
	Path             string
	// Page is the 0-based page within the column chunk, -1 when the
	// problem is about the chunk as a whole; Offset is where the page's
	// header starts in the file.
	Page   int
	Offset int64
	// Problem says what is wrong.
	Problem string
	// More counts the further problems found.
	More int
}

func (e *PageError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "parquetout: pages: row group %d, column %d", e.RowGroup, e.Column)
	if e.Path != "" {
		fmt.Fprintf(&b, " (%s)", e.Path)
	}
	if e.Page >= 0 {
		fmt.Fprintf(&b, ", page %d at offset %d", e.Page, e.Offset)
	}
	b.WriteString(": ")
	b.WriteString(e.Problem)
	switch {
	case e.More == 1:
		b.WriteString(" (and 1 more problem)")
	case e.More > 1:
		fmt.Fprintf(&b, " (and %d more problems)", e.More)
	}
	return b.String()
}

// Unwrap returns ErrPage.
func (e *PageError) Unwrap() error { return ErrPage }

// CheckPages checks every page of the Parquet file r of size bytes
// against its checksum and its column chunk, after checking the footer
// (CheckFooter, whose error it returns if the footer is not valid):
//
//   - every page header decodes, the pages of a chunk fill exactly its
//     total_compressed_size, and a page's uncompressed_page_size is the
//     size its compressed bytes declare (snappy's length, zstd's frame
//     content size), which is what readers allocate;
//   - every page carries a CRC-32 of its bytes (PageHeader.crc, which
//     parquet-go writes for every data and dictionary page) and the bytes
//     match it; page headers are covered by no checksum;
//   - a chunk has at most one dictionary page, first, and a dictionary of
//     fixed-width or byte-array values holds as many values as its header
//     says;
//   - the data pages' num_values add up to the chunk's num_values and
//     their num_rows (v2 pages) to the row group's num_rows, num_nulls is
//     at most num_values, a column that does not repeat has a value per
//     row, and the levels fit in the page;
//   - the chunk's offset index locates exactly its data pages (offset,
//     size, first row), and its column index has an entry per data page
//     whose null flag and null count are the page's. The minimums and
//     maximums of the column index and of the statistics are not checked
//     against the values.
//
// It returns nil, a *PageError (which wraps ErrPage), a *FooterError, or
// an error of reading r. It does not decode values beyond dictionaries,
// nor panic on any input. Memory is one column chunk at a time.
func CheckPages(r io.ReaderAt, size int64) (err error) {
	md, dataEnd, err := readFooter(r, size)
	if err != nil {
		return err
	}
	// The footer is valid: one chunk per leaf in every row group.
	fc := footerCheck{dataEnd: dataEnd}
	leaves, _ := fc.leaves(md.Schema)
	c := pageCheck{}
	defer func() {
		if p := recover(); p != nil {
			c.add(c.rg, c.col, "", -1, 0, fmt.Sprintf("checking the pages panicked: %v", p))
			err = c.result()
		}
	}()
	var buf []byte
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		for j := range rg.Columns {
			c.rg, c.col = i, j
			cm := &rg.Columns[j].MetaData
			start := cm.DataPageOffset
			if cm.DictionaryPageOffset > 0 {
				start = min(start, cm.DictionaryPageOffset)
			}
			n := cm.TotalCompressedSize
			if n == 0 {
				continue
			}
			if int64(cap(buf)) < n {
				buf = make([]byte, n)
			}
			buf = buf[:n]
			if err := readAt(r, buf, start); err != nil {
				return fmt.Errorf("parquetout: read the pages of row group %d column %d: %w", i, j, err)
			}
			pages, ok := c.checkChunk(buf, start, rg.NumRows, cm, &leaves[j])
			if ok {
				if err := c.checkIndexes(r, &rg.Columns[j], pages, &leaves[j]); err != nil {
					return err
				}
			}
		}
	}
	return c.result()
}

// pageInfo is what the indexes say of a data page.
type pageInfo struct {
	offset     int64 // of its header
	size       int64 // header and bytes
	firstRow   int64 // -1 when unknown (v1 pages)
	rows       int64
	values     int64
	nulls      int64 // -1 when unknown (v1 pages)
	headerSays bool  // rows and nulls come from a v2 header
}

// checkIndexes checks a column chunk's offset index and column index,
// when it has them, against its data pages: the page locations are the
// pages', and the column index has an entry per page whose null flags
// and counts are the pages'. It returns only errors of reading r.
func (c *pageCheck) checkIndexes(r io.ReaderAt, cc *format.ColumnChunk, pages []pageInfo, leaf *leafColumn) error {
	name := strings.Join(leaf.path, ".")
	problem := func(format string, args ...any) {
		c.add(c.rg, c.col, name, -1, 0, fmt.Sprintf(format, args...))
	}
	read := func(what string, off int64, n int32, v any) (bool, error) {
		b := make([]byte, n)
		if err := readAt(r, b, off); err != nil {
			return false, fmt.Errorf("parquetout: read the %s of row group %d column %d: %w", what, c.rg, c.col, err)
		}
		if err := checkCompact(b); err != nil {
			problem("the %s does not decode: %v", what, err)
			return false, nil
		}
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b, v); err != nil {
			problem("the %s does not decode: %v", what, err)
			return false, nil
		}
		return true, nil
	}
	if cc.OffsetIndexLength > 0 {
		var oi format.OffsetIndex
		ok, err := read("offset index", cc.OffsetIndexOffset, cc.OffsetIndexLength, &oi)
		if err != nil {
			return err
		}
		if ok {
			if len(oi.PageLocations) != len(pages) {
				problem("the offset index locates %d pages, the chunk has %d data pages", len(oi.PageLocations), len(pages))
			} else {
				for k, l := range oi.PageLocations {
					p := &pages[k]
					if l.Offset != p.offset || int64(l.CompressedPageSize) != p.size || (p.firstRow >= 0 && l.FirstRowIndex != p.firstRow) {
						problem("the offset index puts data page %d at offset %d, %d bytes, first row %d; it is at %d, %d bytes, first row %d",
							k, l.Offset, l.CompressedPageSize, l.FirstRowIndex, p.offset, p.size, p.firstRow)
						break
					}
				}
			}
		}
	}
	if cc.ColumnIndexLength > 0 {
		var ci format.ColumnIndex
		ok, err := read("column index", cc.ColumnIndexOffset, cc.ColumnIndexLength, &ci)
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		switch n := len(pages); {
		case len(ci.NullPages) != n || len(ci.MinValues) != n || len(ci.MaxValues) != n || (ci.NullCounts != nil && len(ci.NullCounts) != n):
			problem("the column index has %d null flags, %d minimums, %d maximums and %d null counts for %d data pages",
				len(ci.NullPages), len(ci.MinValues), len(ci.MaxValues), len(ci.NullCounts), n)
		case ci.BoundaryOrder < format.Unordered || ci.BoundaryOrder > format.Descending:
			problem("the column index's boundary order %d is not a Parquet boundary order", ci.BoundaryOrder)
		default:
			for k := range pages {
				p := &pages[k]
				if !p.headerSays {
					continue
				}
				if ci.NullCounts != nil && ci.NullCounts[k] != p.nulls {
					problem("the column index counts %d nulls in data page %d, its header %d", ci.NullCounts[k], k, p.nulls)
					break
				}
				if ci.NullPages[k] != (p.values > 0 && p.nulls == p.values) {
					problem("the column index says data page %d is all nulls: %v; its header says %d nulls of %d values", k, ci.NullPages[k], p.nulls, p.values)
					break
				}
			}
		}
	}
	return nil
}

// readFooter reads and checks r's footer (CheckFooter) and returns it
// decoded, with the offset the footer starts at.
func readFooter(r io.ReaderAt, size int64) (*format.FileMetaData, int64, error) {
	if err := CheckFooter(r, size); err != nil {
		return nil, 0, err
	}
	var tail [footerTailSize]byte
	if err := readAt(r, tail[:], size-footerTailSize); err != nil {
		return nil, 0, fmt.Errorf("parquetout: read the footer length: %w", err)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	start := size - footerTailSize - n
	buf := make([]byte, n)
	if err := readAt(r, buf, start); err != nil {
		return nil, 0, fmt.Errorf("parquetout: read the footer: %w", err)
	}
	md := new(format.FileMetaData)
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf, md); err != nil {
		return nil, 0, unreadable(err, "the footer does not decode: %v", err)
	}
	return md, start, nil
}

// pageCheck collects the problems of one file's pages.
type pageCheck struct {
	rg, col int // the chunk being checked
	first   *PageError
	n       int
}

func (c *pageCheck) add(rg, col int, path string, page int, off int64, problem string) {
	c.n++
	if c.first == nil {
		c.first = &PageError{RowGroup: rg, Column: col, Path: path, Page: page, Offset: off, Problem: problem}
	}
}

func (c *pageCheck) result() error {
	if c.first == nil {
		return nil
	}
	c.first.More = c.n - 1
	return c.first
}

// checkChunk checks the pages of one column chunk, b, which starts at
// offset start of the file, and returns its data pages; false when they
// could not all be read.
func (c *pageCheck) checkChunk(b []byte, start, rows int64, cm *format.ColumnMetaData, leaf *leafColumn) ([]pageInfo, bool) {
	name := strings.Join(leaf.path, ".")
	chunkProblem := func(format string, args ...any) {
		c.add(c.rg, c.col, name, -1, 0, fmt.Sprintf(format, args...))
	}
	var values, v2rows int64
	allV2 := true
	dataPages := 0
	var pages []pageInfo
	for page, i := 0, 0; i < len(b); page++ {
		off := start + int64(i)
		problem := func(format string, args ...any) {
			c.add(c.rg, c.col, name, page, off, fmt.Sprintf(format, args...))
		}
		hlen, err := compactStructLen(b[i:])
		if err != nil {
			problem("the page header does not decode: %v", err)
			return nil, false
		}
		var h format.PageHeader
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[i:i+hlen], &h); err != nil {
			problem("the page header does not decode: %v", err)
			return nil, false
		}
		i += hlen
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 || int(h.CompressedPageSize) > len(b)-i {
			problem("compressed_page_size %d, uncompressed_page_size %d: the page does not fit in the %d bytes left of the column chunk",
				h.CompressedPageSize, h.UncompressedPageSize, len(b)-i)
			return nil, false
		}
		data := b[i : i+int(h.CompressedPageSize)]
		i += len(data)
		switch sum := crc32.ChecksumIEEE(data); {
		case sum == uint32(h.CRC):
		case h.CRC == 0:
			problem("the page has no checksum (crc)")
		default:
			problem("the page's bytes do not match its checksum: crc 0x%08X, the bytes 0x%08X", uint32(h.CRC), sum)
		}
		if msg := checkSizes(cm.Codec, &h, data); msg != "" {
			// What a reader allocates comes from these sizes.
			problem("%s", msg)
			return nil, false
		}
		switch h.Type {
		case format.DictionaryPage:
			switch {
			case !h.DictionaryPageHeader.Valid:
				problem("a dictionary page without a dictionary_page_header")
			case page != 0 || dataPages > 0:
				problem("a dictionary page after the chunk's first page")
			default:
				c.checkDictionary(problem, &h, data, cm, leaf)
			}
		case format.DataPage:
			dataPages++
			allV2 = false
			if !h.DataPageHeader.Valid {
				problem("a data page without a data_page_header")
				return nil, false
			}
			n := int64(h.DataPageHeader.V.NumValues)
			if n < 0 {
				problem("num_values is %d", n)
			}
			pages = append(pages, pageInfo{offset: off, size: int64(hlen) + int64(len(data)), firstRow: -1, values: n, nulls: -1})
			values += n
		case format.DataPageV2:
			dataPages++
			if !h.DataPageHeaderV2.Valid {
				problem("a data page (v2) without a data_page_header_v2")
				return nil, false
			}
			v := &h.DataPageHeaderV2.V
			switch {
			case v.NumValues < 0 || v.NumNulls < 0 || v.NumRows < 0:
				problem("num_values %d, num_nulls %d, num_rows %d", v.NumValues, v.NumNulls, v.NumRows)
			case v.NumNulls > v.NumValues:
				problem("num_nulls %d is more than num_values %d", v.NumNulls, v.NumValues)
			case !leaf.repeated && v.NumValues != v.NumRows:
				problem("num_values %d, num_rows %d: the column does not repeat", v.NumValues, v.NumRows)
			case leaf.repeated && v.NumValues < v.NumRows:
				problem("num_values %d is less than num_rows %d", v.NumValues, v.NumRows)
			}
			first := v2rows
			if !allV2 {
				first = -1
			}
			pages = append(pages, pageInfo{offset: off, size: int64(hlen) + int64(len(data)), firstRow: first,
				rows: int64(v.NumRows), values: int64(v.NumValues), nulls: int64(v.NumNulls), headerSays: true})
			values += int64(v.NumValues)
			v2rows += int64(v.NumRows)
		}
	}
	if values != cm.NumValues {
		chunkProblem("the data pages hold %d values, the footer says %d", values, cm.NumValues)
	}
	if allV2 && dataPages > 0 && v2rows != rows {
		chunkProblem("the data pages hold %d rows, the row group %d", v2rows, rows)
	}
	return pages, true
}

// plainDictionary is PLAIN_DICTIONARY (2), the encoding Parquet 1.0
// writers gave dictionary pages; later ones write PLAIN (parquet-go
// deprecates the name, not the value). Files of other writers carry it:
// part of the Parquet format, do not change.
const plainDictionary format.Encoding = 2

// checkDictionary checks that a PLAIN dictionary page of fixed-width or
// byte-array values holds num_values values.
func (c *pageCheck) checkDictionary(problem func(string, ...any), h *format.PageHeader, data []byte, cm *format.ColumnMetaData, leaf *leafColumn) {
	d := &h.DictionaryPageHeader.V
	if d.NumValues < 0 {
		problem("the dictionary's num_values is %d", d.NumValues)
		return
	}
	if d.Encoding != format.Plain && d.Encoding != plainDictionary {
		return
	}
	n := int64(d.NumValues)
	width := map[format.Type]int64{format.Int32: 4, format.Float: 4, format.Int64: 8, format.Double: 8, format.Int96: 12}[leaf.typ]
	size := int64(h.UncompressedPageSize)
	switch {
	case width > 0:
		if size != width*n {
			problem("a dictionary of %d %s values in a page of %d bytes", n, leaf.typ, size)
		}
	case leaf.typ == format.ByteArray:
		if size < 4*n {
			problem("a dictionary of %d byte arrays in a page of %d bytes", n, size)
			return
		}
		plain := data
		switch cm.Codec {
		case format.Uncompressed:
		case format.Snappy, format.Zstd:
			// checkSizes bounded what decompressing allocates.
			var err error
			if plain, err = parquet.LookupCompressionCodec(cm.Codec).Decode(make([]byte, 0, size), data); err != nil {
				problem("the dictionary page does not decompress: %v", err)
				return
			}
		default:
			return // rlrec writes no other codec; not decompressed
		}
		if int64(len(plain)) != size {
			problem("the dictionary page decompresses to %d bytes, its header says %d", len(plain), size)
			return
		}
		var k int64
		for len(plain) >= 4 && k < n {
			l := binary.LittleEndian.Uint32(plain)
			if uint64(l) > uint64(len(plain)-4) {
				break
			}
			plain = plain[4+l:]
			k++
		}
		if k != n || len(plain) != 0 {
			problem("the dictionary's num_values is %d, its page holds %d byte arrays and %d bytes more", n, k, len(plain))
		}
	}
}

// checkSizes checks a page's uncompressed_page_size against the size its
// compressed bytes declare (snappy's length, zstd's frame content size)
// and returns what is wrong, or "". Readers allocate what these sizes say.
func checkSizes(codec format.CompressionCodec, h *format.PageHeader, data []byte) string {
	want := int64(h.UncompressedPageSize)
	if h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid {
		v := &h.DataPageHeaderV2.V
		levels := int64(v.DefinitionLevelsByteLength) + int64(v.RepetitionLevelsByteLength)
		if v.DefinitionLevelsByteLength < 0 || v.RepetitionLevelsByteLength < 0 || levels > int64(len(data)) || levels > want {
			return fmt.Sprintf("levels of %d and %d bytes do not fit in a page of %d bytes, %d uncompressed",
				v.DefinitionLevelsByteLength, v.RepetitionLevelsByteLength, len(data), want)
		}
		data, want = data[levels:], want-levels
		if c, ok := v.IsCompressed.Get(); ok && !c {
			codec = format.Uncompressed
		}
	}
	var got int64
	switch codec {
	case format.Uncompressed:
		got = int64(len(data))
	case format.Snappy:
		n, err := snappy.DecodedLen(data)
		if err != nil {
			return fmt.Sprintf("the snappy page does not decode: %v", err)
		}
		got = int64(n)
	case format.Zstd:
		var zh zstd.Header
		if err := zh.Decode(data); err != nil {
			return fmt.Sprintf("the zstd page does not decode: %v", err)
		}
		if zh.HasFCS {
			got = int64(zh.FrameContentSize)
			if zh.FrameContentSize > math.MaxInt32 {
				got = -1
			}
			break
		}
		// No content size in the frame (parquet-go writes none): count
		// the decompressed bytes, up to one more than the header says.
		n, err := zstdSize(data, want+1)
		if err != nil {
			return fmt.Sprintf("the zstd page does not decompress: %v", err)
		}
		got = n
	default:
		return ""
	}
	if got != want {
		return fmt.Sprintf("uncompressed_page_size %d, the %s page holds %d bytes", h.UncompressedPageSize, codec, got+(int64(h.UncompressedPageSize)-want))
	}
	return ""
}

// zstdDecoders decompress pages to count their bytes, in bounded memory.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return err
	}
	return d
}}

// maxZstdWindow bounds the window of a page's zstd frame: parquet-go's
// encoder keeps its default, at most 8 MiB.
const maxZstdWindow = 64 << 20

// zstdSize returns the decompressed size of the zstd data b, counting at
// most limit bytes.
func zstdSize(b []byte, limit int64) (int64, error) {
	v := zstdDecoders.Get()
	d, ok := v.(*zstd.Decoder)
	if !ok {
		return 0, v.(error)
	}
	defer zstdDecoders.Put(d)
	if err := d.Reset(bytes.NewReader(b)); err != nil {
		return 0, err
	}
	n, err := io.CopyN(io.Discard, d, limit)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// compactStructLen returns the length of the thrift struct (compact
// protocol) that b starts with, checking its declared lengths as
// checkCompact does.
func compactStructLen(b []byte) (int, error) {
	w := compactWalker{b: b}
	if err := w.structure(0); err != nil {
		return 0, err
	}
	return w.i, nil
}
