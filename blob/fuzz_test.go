package blob

import (
	"bytes"
	"errors"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// FuzzDecode checks Decode against the protobuf decoder: Decode accepts b
// exactly when proto.Unmarshal into SpaceValue accepts it and finds no
// unknown fields, with the same leaves; accepted blobs re-encode to what
// proto.Marshal writes and decode back to the same leaves.
func FuzzDecode(f *testing.F) {
	v := loadVectors(f)
	for _, b := range v.Blobs {
		f.Add(unhex(f, b.BlobHex))
	}
	for _, b := range v.BadBlobs {
		f.Add(unhex(f, b.BlobHex))
	}
	for _, s := range v.Specs {
		f.Add(unhex(f, s.BatchBlobHex))
		for _, l := range s.Lanes {
			f.Add(unhex(f, l.BlobHex))
		}
	}
	for _, b := range [][]byte{
		{0x8a, 0x00, 0x01, 'x'},       // non-minimal tag
		{0x0a, 0x82, 0x80, 0x00, 'a'}, // non-minimal length, truncated
		{0x0a, 0x00, 0x12, 0x00},      // unknown field after a leaf
		{0x0b, 0x0c},                  // field 1 as a group
		{0x0a, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		leaves, err := Decode(b)
		var msg spacesv1.SpaceValue
		perr := proto.Unmarshal(b, &msg)
		protoOK := perr == nil && len(msg.ProtoReflect().GetUnknown()) == 0
		if (err == nil) != protoOK {
			t.Fatalf("Decode error %v, proto.Unmarshal error %v with %d unknown bytes", err, perr, len(msg.ProtoReflect().GetUnknown()))
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Offset < 0 || de.Offset >= len(b) {
				t.Fatalf("error %v: want a *DecodeError with an offset inside the blob", err)
			}
			return
		}
		if !equalLeaves(leaves, msg.Leaves) {
			t.Fatalf("Decode = %x, proto = %x", leaves, msg.Leaves)
		}
		enc := Encode(leaves)
		want, err := proto.Marshal(&msg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(enc, want) {
			t.Fatalf("Encode = %x, proto.Marshal = %x", enc, want)
		}
		again, err := Decode(enc)
		if err != nil || !equalLeaves(again, leaves) {
			t.Fatalf("Decode(Encode(leaves)) = %x, %v; want %x", again, err, leaves)
		}
	})
}

// FuzzSplitLanes splits fuzzed slabs (given as a blob) for the vector
// specs: it must never panic, and every accepted split must join back to
// the same slabs.
func FuzzSplitLanes(f *testing.F) {
	v := loadVectors(f)
	var layouts []*schema.Layout
	addSpec := func(raw []byte) int {
		spec, err := schema.ParseSpecJSON(raw)
		if err != nil {
			f.Fatal(err)
		}
		layouts = append(layouts, compile(f, spec))
		return len(layouts) - 1
	}
	for _, s := range v.Specs {
		i := addSpec(s.Spec)
		f.Add(uint8(i), unhex(f, s.BatchBlobHex), s.NumLanes)
		f.Add(uint8(i), unhex(f, s.BatchBlobHex), s.NumLanes+1)
	}
	for _, s := range v.BadSlabs {
		i := addSpec(s.Spec)
		f.Add(uint8(i), Encode(unhexAll(f, s.BatchLeavesHex)), s.NumLanes)
	}
	mixed := addSpec([]byte(`{"tuple":{"spaces":[{"text":{}},{"shape":["0"],"dtype":"DATA_TYPE_UINT8","box":{}},{"text":{}}]}}`))
	f.Add(uint8(mixed), Encode([][]byte{textSlab("a", "bc"), {}, textSlab("", "é")}), 2)
	f.Fuzz(func(t *testing.T, which uint8, blob []byte, n int) {
		layout := layouts[int(which)%len(layouts)]
		slabs, err := Decode(blob)
		if err != nil {
			return
		}
		lanes, err := SplitLanesInto(nil, layout, slabs, n)
		if err != nil {
			var se *SlabError
			if !errors.As(err, &se) || len(lanes) != 0 {
				t.Fatalf("error %v (%T) with %d lanes: want a *SlabError and no lanes", err, err, len(lanes))
			}
			return
		}
		if len(lanes) != n {
			t.Fatalf("%d lanes, want %d", len(lanes), n)
		}
		for i, lane := range lanes {
			for li, l := range lane {
				lf := &layout.Leaves[li]
				if l == nil || (lf.Fixed() && int64(len(l)) != lf.Stride) || (!lf.Fixed() && !utf8.Valid(l)) {
					t.Fatalf("lane %d leaf %d = %x does not fit %s", i, li, l, lf)
				}
			}
		}
		joined, err := JoinLanesLayout(layout, lanes)
		if err != nil {
			t.Fatalf("JoinLanesLayout of an accepted split: %v", err)
		}
		if !equalLeaves(joined, slabs) {
			t.Fatalf("JoinLanesLayout = %x, want the input slabs %x", joined, slabs)
		}
	})
}

// FuzzAppendJSON renders fuzzed single-lane values: it must never panic,
// and whatever it accepts must be valid JSON.
func FuzzAppendJSON(f *testing.F) {
	v := loadVectors(f)
	var layouts []*schema.Layout
	for _, s := range v.Specs {
		spec, err := schema.ParseSpecJSON(s.Spec)
		if err != nil {
			f.Fatal(err)
		}
		layouts = append(layouts, compile(f, spec))
		for _, l := range s.Lanes {
			f.Add(uint8(len(layouts)-1), unhex(f, l.BlobHex))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, blob []byte) {
		layout := layouts[int(which)%len(layouts)]
		leaves, err := Decode(blob)
		if err != nil {
			return
		}
		out, err := AppendJSON(nil, layout, leaves)
		if err != nil {
			return
		}
		if !jsonValid(out) {
			t.Fatalf("AppendJSON produced invalid JSON %s", out)
		}
		for i := range leaves {
			if _, err := DecodeLeaf(&layout.Leaves[i], leaves[i]); err != nil {
				t.Fatalf("AppendJSON accepted leaf %d that DecodeLeaf rejects: %v", i, err)
			}
		}
	})
}
