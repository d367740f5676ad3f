package blob

import (
	"testing"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

const (
	benchLanes    = 64
	benchImageLen = 224 * 224 * 3 // one uint8 camera image per lane, 150528 B
)

func imageSlab() []byte {
	slab := make([]byte, benchLanes*benchImageLen)
	for i := range slab {
		slab[i] = byte(i)
	}
	return slab
}

// BenchmarkDecode decodes the blob of a 64-lane batch of 224x224x3 images
// (one 9.6 MB leaf) into a reused leaf slice: no copy, no allocation.
func BenchmarkDecode(b *testing.B) {
	blob := Encode([][]byte{imageSlab()})
	dst := make([][]byte, 0, 1)
	b.SetBytes(int64(len(blob)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = DecodeInto(dst, blob); err != nil || len(dst) != 1 {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeLanes decodes a blob of 64 per-lane images, one leaf each.
func BenchmarkDecodeLanes(b *testing.B) {
	slab := imageSlab()
	leaves := make([][]byte, benchLanes)
	for i := range leaves {
		leaves[i] = slab[i*benchImageLen : (i+1)*benchImageLen]
	}
	blob := Encode(leaves)
	dst := make([][]byte, 0, benchLanes)
	b.SetBytes(int64(len(blob)))
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = DecodeInto(dst, blob); err != nil || len(dst) != benchLanes {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitLanesInto splits a 64-lane image slab plus an action into
// a reused lane array: sub-slices only.
func BenchmarkSplitLanesInto(b *testing.B) {
	layout := compile(b, tupleSpec(
		boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 224, 224, 3),
		boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 7),
	))
	slabs := [][]byte{imageSlab(), make([]byte, benchLanes*7*4)}
	dst, err := SplitLanesInto(nil, layout, slabs, benchLanes)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(slabs[0]) + len(slabs[1])))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = SplitLanesInto(dst, layout, slabs, benchLanes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSplitLanesIntoText splits 64 lanes of an instruction text.
func BenchmarkSplitLanesIntoText(b *testing.B) {
	layout := compile(b, textSpec())
	texts := make([]string, benchLanes)
	for i := range texts {
		texts[i] = "pick up the red block and put it in the bowl"
	}
	slabs := [][]byte{textSlab(texts...)}
	dst, err := SplitLanesInto(nil, layout, slabs, benchLanes)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(slabs[0])))
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = SplitLanesInto(dst, layout, slabs, benchLanes); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncode encodes a 1 KiB single-lane value (one allocation).
func BenchmarkEncode(b *testing.B) {
	leaves := [][]byte{make([]byte, 1000), make([]byte, 24)}
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		_ = Encode(leaves)
	}
}

// BenchmarkAppend appends a 1 KiB value to a buffer with room (no
// allocation).
func BenchmarkAppend(b *testing.B) {
	leaves := [][]byte{make([]byte, 1000), make([]byte, 24)}
	buf := make([]byte, 0, 2048)
	b.SetBytes(1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = Append(buf[:0], leaves)
	}
}

// BenchmarkAppendJSON renders a CartPole observation (Box(4) float32).
func BenchmarkAppendJSON(b *testing.B) {
	layout := compile(b, boxSpec(spacesv1.DataType_DATA_TYPE_FLOAT32, 4))
	leaves := [][]byte{f32bits(0.0273956, -0.00611216, 0.03585979, 0.0197368)}
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = AppendJSON(buf[:0], layout, leaves); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkJoinLanes joins 64 image lanes back into a slab (copies).
func BenchmarkJoinLanes(b *testing.B) {
	layout := compile(b, boxSpec(spacesv1.DataType_DATA_TYPE_UINT8, 224, 224, 3))
	lanes, err := SplitLanesInto(nil, layout, [][]byte{imageSlab()}, benchLanes)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(benchLanes * benchImageLen)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := JoinLanesLayout(layout, lanes); err != nil {
			b.Fatal(err)
		}
	}
}
