package blob

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name string
		blob []byte
		want [][]byte
	}{
		{"empty", nil, nil},
		{"non-minimal tag", []byte{0x8a, 0x00, 0x01, 'x'}, [][]byte{[]byte("x")}},
		{"non-minimal length", []byte{0x0a, 0x82, 0x80, 0x00, 'a', 'b'}, [][]byte{[]byte("ab")}},
		{"ten-byte zero length", []byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, [][]byte{{}}},
		{"two leaves, second empty", []byte{0x0a, 0x01, 0xff, 0x0a, 0x00}, [][]byte{{0xff}, {}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.blob)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equalLeaves(got, tc.want) {
				t.Fatalf("Decode = %x, want %x", got, tc.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		blob   []byte
		want   error
		offset int
		leaf   int
	}{
		{"tag only", []byte{0x0a}, ErrTruncated, 0, 0},
		{"second leaf truncated", []byte{0x0a, 0x01, 'a', 0x0a, 0x03, 'b'}, ErrTruncated, 3, 1},
		{"unterminated tag", []byte{0x0a, 0x00, 0x8a}, ErrTruncated, 2, 1},
		{"length beyond int", []byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, ErrTruncated, 0, 0},
		{"ten-byte varint with high bits", []byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02}, ErrVarintOverflow, 0, 0},
		{"eleven-byte varint", []byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, ErrVarintOverflow, 0, 0},
		{"field 1 varint", []byte{0x08, 0x00}, ErrWireType, 0, 0},
		{"field 1 fixed64", []byte{0x0a, 0x00, 0x09, 0, 0, 0, 0, 0, 0, 0, 0}, ErrWireType, 2, 1},
		{"field 1 start group", []byte{0x0b, 0x0c}, ErrWireType, 0, 0},
		{"field 2 bytes", []byte{0x12, 0x00}, ErrUnknownField, 0, 0},
		{"field 0", []byte{0x02, 0x00}, ErrUnknownField, 0, 0},
		{"huge field number", []byte{0xfa, 0xff, 0xff, 0xff, 0x7f, 0x00}, ErrUnknownField, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			leaves, err := Decode(tc.blob)
			if leaves != nil {
				t.Errorf("Decode returned leaves %x with an error", leaves)
			}
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, tc.want) {
				t.Fatalf("Decode error = %v, want *DecodeError wrapping %v", err, tc.want)
			}
			if de.Offset != tc.offset || de.Leaf != tc.leaf {
				t.Errorf("error at offset %d leaf %d, want offset %d leaf %d (%v)", de.Offset, de.Leaf, tc.offset, tc.leaf, err)
			}
			into, err2 := DecodeInto(make([][]byte, 4), tc.blob)
			if len(into) != 0 || !errors.Is(err2, tc.want) {
				t.Errorf("DecodeInto = %d leaves, %v", len(into), err2)
			}
		})
	}
}

func TestDecodeLeavesAliasAndAreCapped(t *testing.T) {
	b := Encode([][]byte{[]byte("ab"), []byte("cd")})
	leaves, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if &leaves[0][0] != &b[2] {
		t.Fatalf("leaf 0 is a copy, want a sub-slice of the blob")
	}
	if cap(leaves[0]) != 2 {
		t.Fatalf("leaf cap %d, want 2", cap(leaves[0]))
	}
	_ = append(leaves[0], 'X')
	if !bytes.Equal(b, Encode([][]byte{[]byte("ab"), []byte("cd")})) {
		t.Fatalf("appending to a leaf overwrote the blob: %x", b)
	}
}

func TestAppend(t *testing.T) {
	leaves := [][]byte{[]byte("hi"), nil, bytes.Repeat([]byte{7}, 200)}
	prefix := []byte("prefix")
	got := Append(append([]byte{}, prefix...), leaves)
	want := append(append([]byte{}, prefix...), Encode(leaves)...)
	if !bytes.Equal(got, want) {
		t.Fatalf("Append = %x, want %x", got, want)
	}
	if got := Encode(nil); len(got) != 0 {
		t.Fatalf("Encode(nil) = %x, want empty", got)
	}
	// 200 needs a two-byte length varint.
	if n := Size(leaves); n != 1+1+2+1+1+0+1+2+200 {
		t.Fatalf("Size = %d", n)
	}
}

// TestAppendIsSpaceValue: Append writes what protobuf writes of
// SpaceValue{leaves}, for leaves whose lengths take one to four varint
// bytes, into a dst with room and into one without.
func TestAppendIsSpaceValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
	}{
		{"one byte", []int{0, 1, 127}},
		{"two bytes", []int{128, 16383}},
		{"three and four", []int{16384, 1<<21 - 1, 1 << 21}},
		{"mixed", []int{5, 300, 0, 70000, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var leaves [][]byte
			for i, n := range tc.sizes {
				leaves = append(leaves, bytes.Repeat([]byte{byte(i + 1)}, n))
			}
			want, err := proto.Marshal(&spacesv1.SpaceValue{Leaves: leaves})
			if err != nil {
				t.Fatal(err)
			}
			for _, dst := range [][]byte{nil, make([]byte, 3, 3+len(want))} {
				got := Append(dst, leaves)
				if !bytes.Equal(got[len(dst):], want) || len(got) != len(dst)+Size(leaves) {
					t.Fatalf("Append into %d of room: %d bytes differ from the %d of proto.Marshal", cap(dst)-len(dst), len(got)-len(dst), len(want))
				}
			}
		})
	}
}

func TestAllocations(t *testing.T) {
	leaves := [][]byte{make([]byte, 1024), make([]byte, 4)}
	blob := Encode(leaves)
	buf := make([]byte, 0, 4096)
	dst := make([][]byte, 0, 8)
	tests := []struct {
		name string
		max  float64
		fn   func()
	}{
		{"Encode 1 KiB", 1, func() { _ = Encode(leaves) }},
		{"Append with capacity", 0, func() { _ = Append(buf[:0], leaves) }},
		{"DecodeInto with capacity", 0, func() { _, _ = DecodeInto(dst, blob) }},
		{"Decode", 1, func() { _, _ = Decode(blob) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := testing.AllocsPerRun(100, tc.fn); got > tc.max {
				t.Fatalf("%v allocations, want at most %v", got, tc.max)
			}
		})
	}
}
