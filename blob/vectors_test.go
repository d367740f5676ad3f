package blob

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// wireVectors mirrors testdata/wire-vectors.json at the module root.
type wireVectors struct {
	Blobs []struct {
		Name      string   `json:"name"`
		LeavesHex []string `json:"leaves_hex"`
		BlobHex   string   `json:"blob_hex"`
	} `json:"blobs"`
	BadBlobs []struct {
		Name    string `json:"name"`
		BlobHex string `json:"blob_hex"`
	} `json:"bad_blobs"`
	Specs []struct {
		Name           string          `json:"name"`
		Spec           json.RawMessage `json:"spec"`
		NumLanes       int             `json:"num_lanes"`
		LeafPaths      []string        `json:"leaf_paths"`
		BatchLeavesHex []string        `json:"batch_leaves_hex"`
		BatchBlobHex   string          `json:"batch_blob_hex"`
		Lanes          []struct {
			LeavesHex []string        `json:"leaves_hex"`
			BlobHex   string          `json:"blob_hex"`
			Value     json.RawMessage `json:"value"`
		} `json:"lanes"`
	} `json:"specs"`
	BadSlabs []struct {
		Name           string          `json:"name"`
		Spec           json.RawMessage `json:"spec"`
		NumLanes       int             `json:"num_lanes"`
		BatchLeavesHex []string        `json:"batch_leaves_hex"`
	} `json:"bad_slabs"`
}

func loadVectors(tb testing.TB) *wireVectors {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "wire-vectors.json"))
	if err != nil {
		tb.Fatalf("read wire vectors: %v", err)
	}
	var v wireVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatalf("parse wire vectors: %v", err)
	}
	if len(v.Blobs) == 0 || len(v.BadBlobs) == 0 || len(v.Specs) == 0 || len(v.BadSlabs) == 0 {
		tb.Fatalf("wire vectors incomplete: %d blobs, %d bad blobs, %d specs, %d bad slabs",
			len(v.Blobs), len(v.BadBlobs), len(v.Specs), len(v.BadSlabs))
	}
	return &v
}

func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

func unhexAll(tb testing.TB, ss []string) [][]byte {
	tb.Helper()
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = unhex(tb, s)
	}
	return out
}

func parseSpec(tb testing.TB, raw json.RawMessage) *spacesv1.SpaceSpec {
	tb.Helper()
	spec, err := schema.ParseSpecJSON(raw)
	if err != nil {
		tb.Fatalf("parse spec %s: %v", raw, err)
	}
	return spec
}

func equalLeaves(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
}

func TestVectorBlobs(t *testing.T) {
	v := loadVectors(t)
	for _, tc := range v.Blobs {
		t.Run(tc.Name, func(t *testing.T) {
			leaves := unhexAll(t, tc.LeavesHex)
			want := unhex(t, tc.BlobHex)
			got := Encode(leaves)
			if !bytes.Equal(got, want) {
				t.Fatalf("Encode = %x, want %x", got, want)
			}
			if Size(leaves) != len(want) {
				t.Errorf("Size = %d, want %d", Size(leaves), len(want))
			}
			dec, err := Decode(want)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equalLeaves(dec, leaves) {
				t.Fatalf("Decode = %x, want %x", dec, leaves)
			}
			into, err := DecodeInto(make([][]byte, 0, 1), want)
			if err != nil || !equalLeaves(into, leaves) {
				t.Fatalf("DecodeInto = %x, %v; want %x", into, err, leaves)
			}
		})
	}
}

func TestVectorBadBlobs(t *testing.T) {
	v := loadVectors(t)
	// Each bad vector must fail for its own reason.
	wantErr := map[string]error{
		"truncated-length-varint":     ErrTruncated,
		"length-past-end":             ErrTruncated,
		"unterminated-varint":         ErrTruncated,
		"varint-overflow":             ErrVarintOverflow,
		"wrong-wire-type-for-field-1": ErrWireType,
	}
	for _, tc := range v.BadBlobs {
		t.Run(tc.Name, func(t *testing.T) {
			want, ok := wantErr[tc.Name]
			if !ok {
				t.Fatalf("no expected error listed for bad blob %q; add it to this test", tc.Name)
			}
			_, err := Decode(unhex(t, tc.BlobHex))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Decode error = %v (%T), want *DecodeError", err, err)
			}
			if !errors.Is(err, want) {
				t.Fatalf("Decode error = %v, want %v", err, want)
			}
		})
	}
}

func TestVectorSpecs(t *testing.T) {
	v := loadVectors(t)
	for _, tc := range v.Specs {
		t.Run(tc.Name, func(t *testing.T) {
			spec := parseSpec(t, tc.Spec)
			layout, err := schema.Compile(spec)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			var paths []string
			for _, lf := range layout.Leaves {
				paths = append(paths, lf.Path)
			}
			if !slices.Equal(paths, tc.LeafPaths) {
				t.Fatalf("leaf paths %q, want %q", paths, tc.LeafPaths)
			}
			batch := unhexAll(t, tc.BatchLeavesHex)
			if got := Encode(batch); !bytes.Equal(got, unhex(t, tc.BatchBlobHex)) {
				t.Errorf("batch blob %x, want %s", got, tc.BatchBlobHex)
			}
			lanes, err := SplitLanes(spec, batch, tc.NumLanes)
			if err != nil {
				t.Fatalf("SplitLanes: %v", err)
			}
			if len(lanes) != len(tc.Lanes) {
				t.Fatalf("%d lanes, want %d", len(lanes), len(tc.Lanes))
			}
			for i, lane := range tc.Lanes {
				want := unhexAll(t, lane.LeavesHex)
				if !equalLeaves(lanes[i], want) {
					t.Errorf("lane %d leaves %x, want %x", i, lanes[i], want)
				}
				for li, l := range lanes[i] {
					if l == nil {
						t.Errorf("lane %d leaf %d is nil, want non-nil", i, li)
					}
				}
				if got := Encode(lanes[i]); !bytes.Equal(got, unhex(t, lane.BlobHex)) {
					t.Errorf("lane %d blob %x, want %s", i, got, lane.BlobHex)
				}
				js, err := AppendJSON(nil, layout, lanes[i])
				if err != nil {
					t.Fatalf("lane %d AppendJSON: %v", i, err)
				}
				var got, wantV any
				if err := json.Unmarshal(js, &got); err != nil {
					t.Fatalf("lane %d AppendJSON output %s is not JSON: %v", i, js, err)
				}
				if err := json.Unmarshal(lane.Value, &wantV); err != nil {
					t.Fatalf("lane %d vector value: %v", i, err)
				}
				if !reflect.DeepEqual(got, wantV) {
					t.Errorf("lane %d JSON %s, want %s", i, js, lane.Value)
				}
			}
			joined, err := JoinLanes(spec, lanes)
			if err != nil {
				t.Fatalf("JoinLanes: %v", err)
			}
			if !equalLeaves(joined, batch) {
				t.Fatalf("JoinLanes = %x, want %x", joined, batch)
			}
		})
	}
}

func TestVectorBadSlabs(t *testing.T) {
	v := loadVectors(t)
	wantErr := map[string]error{
		"fixed-slab-wrong-length": ErrSlabSize,
		"leaf-count-mismatch":     ErrLeafCount,
		"text-count-not-n":        ErrTextCount,
		"text-body-truncated":     ErrTextLength,
		"text-trailing-bytes":     ErrTextTrailing,
		"text-invalid-utf8":       ErrInvalidUTF8,
		"text-huge-length":        ErrTextLength,
	}
	for _, tc := range v.BadSlabs {
		t.Run(tc.Name, func(t *testing.T) {
			want, ok := wantErr[tc.Name]
			if !ok {
				t.Fatalf("no expected error listed for bad slab %q; add it to this test", tc.Name)
			}
			spec := parseSpec(t, tc.Spec)
			lanes, err := SplitLanes(spec, unhexAll(t, tc.BatchLeavesHex), tc.NumLanes)
			var se *SlabError
			if !errors.As(err, &se) {
				t.Fatalf("SplitLanes = %d lanes, error %v (%T), want *SlabError", len(lanes), err, err)
			}
			if !errors.Is(err, want) {
				t.Fatalf("SplitLanes error = %v, want %v", err, want)
			}
			if len(lanes) != 0 {
				t.Errorf("SplitLanes returned %d lanes with an error", len(lanes))
			}
		})
	}
}
