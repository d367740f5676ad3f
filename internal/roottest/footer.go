package roottest

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// EditFooter returns the Parquet file b with its footer decoded, changed
// by edit and encoded again; the data before the footer is kept as it is.
func EditFooter(t testing.TB, b []byte, edit func(md *format.FileMetaData)) []byte {
	t.Helper()
	if len(b) < 12 || string(b[len(b)-4:]) != "PAR1" {
		t.Fatalf("edit a footer: %d bytes, no Parquet file", len(b))
	}
	start := len(b) - 8 - int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	if start < 4 {
		t.Fatalf("edit a footer: footer length past the file's start")
	}
	var md format.FileMetaData
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[start:len(b)-8], &md); err != nil {
		t.Fatal(err)
	}
	edit(&md)
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	if err != nil {
		t.Fatal(err)
	}
	out := append(b[:start:start], footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

// EditFooterFile is EditFooter of the file at path, written back in
// place.
func EditFooterFile(t testing.TB, path string, edit func(md *format.FileMetaData)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, EditFooter(t, b, edit), 0o644); err != nil {
		t.Fatal(err)
	}
}
