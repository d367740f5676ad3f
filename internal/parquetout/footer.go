package parquetout

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// FooterError is what CheckFooter found wrong with a file's footer: the
// first problem, in file order (the file, then each row group and its
// column chunks), and how many more there are. It wraps ErrFooter.
type FooterError struct {
	// RowGroup is the 0-based row group the problem is in, -1 when it is
	// about the file as a whole.
	RowGroup int
	// Column is the 0-based column (leaf) index, -1 when the problem is
	// not about one column chunk.
	Column int
	// Path is the column's path in the schema, dot-joined ("" when Column
	// is -1 or the schema does not name it).
	Path string
	// Problem says what is wrong.
	Problem string
	// More counts the further problems found.
	More int
	// Err is the cause when the footer cannot be read at all: it wraps
	// ErrFooterUnreadable.
	Err error
}

func (e *FooterError) Error() string {
	var b strings.Builder
	b.WriteString("parquetout: footer: ")
	if e.RowGroup >= 0 {
		fmt.Fprintf(&b, "row group %d", e.RowGroup)
		if e.Column >= 0 {
			b.WriteString(", ")
		}
	}
	if e.Column >= 0 {
		fmt.Fprintf(&b, "column %d", e.Column)
		if e.Path != "" {
			fmt.Fprintf(&b, " (%s)", e.Path)
		}
	}
	if e.RowGroup >= 0 || e.Column >= 0 {
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	switch {
	case e.More == 1:
		b.WriteString(" (and 1 more problem)")
	case e.More > 1:
		fmt.Fprintf(&b, " (and %d more problems)", e.More)
	}
	return b.String()
}

// Unwrap returns ErrFooter and Err, if any.
func (e *FooterError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrFooter}
	}
	return []error{ErrFooter, e.Err}
}

const (
	parquetMagic   = "PAR1"
	footerTailSize = 8 // footer length (4 bytes, little endian) and magic
	// maxSchemaDepth bounds the nesting of the schema and of the footer's
	// thrift structures; rlrec's deepest column is three levels deep.
	maxSchemaDepth = 64
)

// CheckFooter reads the footer of the Parquet file r of size bytes and
// checks it as strict readers (Spark, Athena, parquet-java, hyparquet)
// rely on it:
//
//   - the file starts and ends with the magic PAR1, and the footer's
//     length fits in the file and its thrift decodes without bytes left
//     over;
//   - the schema is a well-formed tree whose leaves have a physical type;
//   - the file's num_rows is the sum of its row groups' num_rows, and
//     their ordinals, when set, are their positions;
//   - every row group has one column chunk per schema leaf, in leaf order,
//     with its metadata inline (not in another file);
//   - every column chunk's path_in_schema is its leaf's path and its type
//     the leaf's type; its num_values is num_rows for a column that does
//     not repeat and at least num_rows for one that does, none for an
//     empty row group; its codec is a known one; its sizes are not
//     negative, and its pages, column index and offset index lie between
//     the leading magic and the footer.
//
// It returns nil, a *FooterError (which wraps ErrFooter, and
// ErrFooterUnreadable too when the footer cannot be read at all) naming
// the first problem and counting the others, or an error of reading r. It reads
// only the footer, never the pages, and does not panic on any input.
func CheckFooter(r io.ReaderAt, size int64) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = unreadable(nil, "the footer does not decode: %v", p)
		}
	}()
	bad := func(format string, args ...any) error { return unreadable(nil, format, args...) }
	if size < int64(len(parquetMagic)+footerTailSize) {
		return bad("a file of %d bytes is too short for a Parquet file", size)
	}
	var head [4]byte
	var tail [footerTailSize]byte
	if err := readAt(r, head[:], 0); err != nil {
		return fmt.Errorf("parquetout: read the file header: %w", err)
	}
	if err := readAt(r, tail[:], size-footerTailSize); err != nil {
		return fmt.Errorf("parquetout: read the footer length: %w", err)
	}
	if string(head[:]) != parquetMagic {
		return bad("the file starts with %q, not the magic %q", head[:], parquetMagic)
	}
	if string(tail[4:]) != parquetMagic {
		return bad("the file ends with %q, not the magic %q", tail[4:], parquetMagic)
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	footerStart := size - footerTailSize - n
	if n == 0 || footerStart < int64(len(parquetMagic)) {
		return bad("the footer length %d does not fit in a file of %d bytes", n, size)
	}
	buf := make([]byte, n)
	if err := readAt(r, buf, footerStart); err != nil {
		return fmt.Errorf("parquetout: read the footer: %w", err)
	}
	// parquet-go's decoder allocates lists by their declared length:
	// check every length against the bytes left before decoding.
	if err := checkCompact(buf); err != nil {
		return unreadable(err, "the footer does not decode: %v", err)
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf, &md); err != nil {
		return unreadable(err, "the footer does not decode: %v", err)
	}
	c := footerCheck{dataEnd: footerStart}
	c.check(&md)
	if c.first == nil {
		return nil
	}
	c.first.More = c.n - 1
	return c.first
}

// unreadable is the error of a footer that cannot be read at all.
func unreadable(cause error, format string, args ...any) *FooterError {
	err := ErrFooterUnreadable
	if cause != nil {
		err = fmt.Errorf("%w: %w", ErrFooterUnreadable, cause)
	}
	return &FooterError{RowGroup: -1, Column: -1, Problem: fmt.Sprintf(format, args...), Err: err}
}

// readAt fills p from r at off; io.EOF with p filled is no error.
func readAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// footerCheck collects the problems of one footer.
type footerCheck struct {
	dataEnd int64 // where the footer starts: pages and indexes lie before
	first   *FooterError
	n       int
}

func (c *footerCheck) add(rowGroup, column int, path, format string, args ...any) {
	c.n++
	if c.first == nil {
		c.first = &FooterError{RowGroup: rowGroup, Column: column, Path: path, Problem: fmt.Sprintf(format, args...)}
	}
}

// leafColumn is a leaf of the schema: a column.
type leafColumn struct {
	path     []string
	typ      format.Type
	repeated bool // it or a group above it is repeated
}

func (c *footerCheck) check(md *format.FileMetaData) {
	leaves, ok := c.leaves(md.Schema)
	if !ok {
		return
	}
	// ordinal is optional: all zero means absent.
	ordinals := slices.ContainsFunc(md.RowGroups, func(rg format.RowGroup) bool { return rg.Ordinal != 0 })
	var rows int64
	for i := range md.RowGroups {
		rg := &md.RowGroups[i]
		rows += rg.NumRows
		if ordinals && int(rg.Ordinal) != i {
			c.add(i, -1, "", "ordinal is %d, not the row group's position", rg.Ordinal)
		}
		c.checkRowGroup(i, rg, leaves)
	}
	if rows != md.NumRows {
		c.add(-1, -1, "", "num_rows is %d, its row groups hold %d", md.NumRows, rows)
	}
}

// leaves walks the schema tree (depth first, as Parquet flattens it) and
// returns its leaves; false when the tree is broken (reported).
func (c *footerCheck) leaves(schema []format.SchemaElement) ([]leafColumn, bool) {
	if len(schema) == 0 {
		c.add(-1, -1, "", "the schema is empty")
		return nil, false
	}
	var leaves []leafColumn
	var walk func(i int, path []string, repeated bool, depth int) (int, bool)
	walk = func(i int, path []string, repeated bool, depth int) (int, bool) {
		if i >= len(schema) {
			c.add(-1, -1, "", "the schema ends within %s: it has fewer elements than num_children says", schemaName(path))
			return i, false
		}
		if depth > maxSchemaDepth {
			c.add(-1, -1, "", "the schema nests deeper than %d levels", maxSchemaDepth)
			return i, false
		}
		e := &schema[i]
		if i > 0 {
			path = append(slices.Clip(path), e.Name)
			if rt, ok := e.RepetitionType.Get(); ok && rt == format.Repeated {
				repeated = true
			}
		}
		children, group := e.NumChildren.Get()
		if i > 0 && (!group || children == 0) {
			t, ok := e.Type.Get()
			if !ok {
				c.add(-1, -1, "", "schema element %d (%s) has neither children nor a type", i, schemaName(path))
				return i + 1, false
			}
			leaves = append(leaves, leafColumn{path: path, typ: t, repeated: repeated})
			return i + 1, true
		}
		if children < 0 {
			c.add(-1, -1, "", "schema element %d (%s) has %d children", i, schemaName(path), children)
			return i + 1, false
		}
		next := i + 1
		for range children {
			var ok bool
			if next, ok = walk(next, path, repeated, depth+1); !ok {
				return next, false
			}
		}
		return next, true
	}
	next, ok := walk(0, nil, false, 0)
	if ok && next != len(schema) {
		c.add(-1, -1, "", "the schema has %d elements, its tree %d", len(schema), next)
		ok = false
	}
	return leaves, ok
}

func (c *footerCheck) checkRowGroup(i int, rg *format.RowGroup, leaves []leafColumn) {
	if rg.NumRows < 0 {
		c.add(i, -1, "", "num_rows is %d", rg.NumRows)
	}
	if len(rg.Columns) != len(leaves) {
		c.add(i, -1, "", "%d column chunks, the schema has %d columns", len(rg.Columns), len(leaves))
	}
	for j := range min(len(rg.Columns), len(leaves)) {
		c.checkChunk(i, j, rg.NumRows, &rg.Columns[j], &leaves[j])
	}
}

func (c *footerCheck) checkChunk(i, j int, rows int64, cc *format.ColumnChunk, leaf *leafColumn) {
	name := strings.Join(leaf.path, ".")
	add := func(format string, args ...any) { c.add(i, j, name, format, args...) }
	if cc.FilePath != "" {
		add("file_path is %q: the column chunk is in another file", cc.FilePath)
		return
	}
	if len(cc.EncryptedColumnMetadata) > 0 {
		add("the column chunk's metadata is encrypted")
		return
	}
	md := &cc.MetaData
	if !slices.Equal(md.PathInSchema, leaf.path) {
		add("path_in_schema is %s, the schema's path of the column is %s", quoteList(md.PathInSchema), quoteList(leaf.path))
	}
	if md.Type != leaf.typ {
		add("type is %s, the schema's type of the column is %s", md.Type, leaf.typ)
	}
	switch {
	case md.NumValues < 0:
		add("num_values is %d", md.NumValues)
	case rows == 0 && md.NumValues != 0:
		add("num_values is %d in a row group of no rows", md.NumValues)
	case !leaf.repeated && md.NumValues != rows:
		add("num_values is %d, the row group has %d rows and the column does not repeat", md.NumValues, rows)
	case leaf.repeated && md.NumValues < rows:
		add("num_values is %d, fewer than the row group's %d rows", md.NumValues, rows)
	}
	if md.Codec < format.Uncompressed || md.Codec > format.Lz4Raw {
		add("codec %d is not a Parquet compression codec", md.Codec)
	}
	if md.TotalCompressedSize < 0 || md.TotalUncompressedSize < 0 {
		add("total_compressed_size %d, total_uncompressed_size %d", md.TotalCompressedSize, md.TotalUncompressedSize)
		return
	}
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 {
		if md.DictionaryPageOffset >= md.DataPageOffset {
			add("dictionary_page_offset %d is not before data_page_offset %d", md.DictionaryPageOffset, md.DataPageOffset)
		}
		start = min(start, md.DictionaryPageOffset)
	}
	if md.NumValues > 0 || md.TotalCompressedSize > 0 {
		c.checkRange(i, j, name, "the pages", start, md.TotalCompressedSize)
	}
	if cc.ColumnIndexLength != 0 || cc.ColumnIndexOffset != 0 {
		c.checkRange(i, j, name, "the column index", cc.ColumnIndexOffset, int64(cc.ColumnIndexLength))
	}
	if cc.OffsetIndexLength != 0 || cc.OffsetIndexOffset != 0 {
		c.checkRange(i, j, name, "the offset index", cc.OffsetIndexOffset, int64(cc.OffsetIndexLength))
	}
}

// checkRange checks that n bytes at off lie between the leading magic and
// the footer.
func (c *footerCheck) checkRange(i, j int, name, what string, off, n int64) {
	if off < int64(len(parquetMagic)) || n <= 0 || n > c.dataEnd-off {
		c.add(i, j, name, "%s: %d bytes at offset %d, not within bytes %d to %d between the leading magic and the footer", what, n, off, len(parquetMagic), c.dataEnd)
	}
}

// schemaName names a schema element by its path.
func schemaName(path []string) string {
	if len(path) == 0 {
		return "the root"
	}
	return strings.Join(path, ".")
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, e := range s {
		q[i] = fmt.Sprintf("%q", e)
	}
	return "[" + strings.Join(q, " ") + "]"
}

// errCompact is the cause of a footer whose thrift does not parse.
var errCompact = errors.New("malformed thrift compact protocol")

// checkCompact walks one thrift struct in the compact protocol and checks
// that it ends exactly at the end of b and that every length it declares
// (lists, sets, maps, binaries) fits in the bytes left, so that decoding it
// allocates no more than b's size calls for.
func checkCompact(b []byte) error {
	w := compactWalker{b: b}
	if err := w.structure(0); err != nil {
		return err
	}
	if w.i != len(b) {
		return fmt.Errorf("%w: %d bytes after the footer's end", errCompact, len(b)-w.i)
	}
	return nil
}

type compactWalker struct {
	b []byte
	i int
}

func (w *compactWalker) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at byte %d: %s", errCompact, w.i, fmt.Sprintf(format, args...))
}

func (w *compactWalker) byte() (byte, error) {
	if w.i >= len(w.b) {
		return 0, w.errorf("unexpected end")
	}
	w.i++
	return w.b[w.i-1], nil
}

func (w *compactWalker) uvarint() (uint64, error) {
	v, n := binary.Uvarint(w.b[w.i:])
	if n <= 0 {
		return 0, w.errorf("bad varint")
	}
	w.i += n
	return v, nil
}

// length reads a declared count of items of at least min bytes each and
// checks that they fit.
func (w *compactWalker) length(v uint64, min int) (int, error) {
	if v > uint64(len(w.b)-w.i)/uint64(min) {
		return 0, w.errorf("a length of %d does not fit in the %d bytes left", v, len(w.b)-w.i)
	}
	return int(v), nil
}

func (w *compactWalker) structure(depth int) error {
	if depth > maxSchemaDepth {
		return w.errorf("nested deeper than %d levels", maxSchemaDepth)
	}
	for {
		h, err := w.byte()
		if err != nil {
			return err
		}
		if h == 0 { // stop
			return nil
		}
		if h>>4 == 0 { // long form: the field id follows
			if _, err := w.uvarint(); err != nil {
				return err
			}
		}
		switch t := h & 0x0F; t {
		case 1, 2: // bool, its value in the header
		default:
			if err := w.value(t, depth); err != nil {
				return err
			}
		}
	}
}

func (w *compactWalker) value(t byte, depth int) error {
	switch t {
	case 1, 2, 3: // bool (in lists), byte
		_, err := w.byte()
		return err
	case 4, 5, 6: // i16, i32, i64
		_, err := w.uvarint()
		return err
	case 7: // double
		if len(w.b)-w.i < 8 {
			return w.errorf("unexpected end")
		}
		w.i += 8
		return nil
	case 8: // binary
		v, err := w.uvarint()
		if err != nil {
			return err
		}
		n, err := w.length(v, 1)
		if err != nil {
			return err
		}
		w.i += n
		return nil
	case 9, 10: // list, set
		h, err := w.byte()
		if err != nil {
			return err
		}
		v := uint64(h >> 4)
		if v == 15 {
			if v, err = w.uvarint(); err != nil {
				return err
			}
		}
		n, err := w.length(v, 1)
		if err != nil {
			return err
		}
		for range n {
			if err := w.value(h&0x0F, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 11: // map
		v, err := w.uvarint()
		if err != nil || v == 0 {
			return err
		}
		kv, err := w.byte()
		if err != nil {
			return err
		}
		n, err := w.length(v, 2)
		if err != nil {
			return err
		}
		for range n {
			if err := w.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := w.value(kv&0x0F, depth+1); err != nil {
				return err
			}
		}
		return nil
	case 12: // struct
		return w.structure(depth + 1)
	}
	return w.errorf("unknown type %d", t)
}
