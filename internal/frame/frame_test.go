package frame

import (
	"bytes"
	"errors"
	"image/color"
	"image/png"
	"testing"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

func TestIsImage(t *testing.T) {
	u8, f32 := spacesv1.DataType_DATA_TYPE_UINT8, spacesv1.DataType_DATA_TYPE_FLOAT32
	tests := []struct {
		name string
		leaf schema.Leaf
		want bool
	}{
		{"rgb", schema.Leaf{Kind: schema.KindBox, DType: u8, Shape: []int64{84, 84, 3}}, true},
		{"grey", schema.Leaf{Kind: schema.KindBox, DType: u8, Shape: []int64{64, 32, 1}}, true},
		{"rgba is not", schema.Leaf{Kind: schema.KindBox, DType: u8, Shape: []int64{8, 8, 4}}, false},
		{"float is not", schema.Leaf{Kind: schema.KindBox, DType: f32, Shape: []int64{8, 8, 3}}, false},
		{"rank 2 is not", schema.Leaf{Kind: schema.KindBox, DType: u8, Shape: []int64{8, 8}}, false},
		{"empty is not", schema.Leaf{Kind: schema.KindBox, DType: u8, Shape: []int64{0, 8, 3}}, false},
		{"multibinary is not", schema.Leaf{Kind: schema.KindMultiBinary, DType: u8, Shape: []int64{8, 8, 3}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsImage(&tc.leaf); got != tc.want {
				t.Fatalf("IsImage = %t, want %t", got, tc.want)
			}
		})
	}
}

func TestEncode(t *testing.T) {
	tests := []struct {
		name         string
		h, w, c      int
		side         int
		wantW, wantH int
	}{
		{"small stays", 84, 84, 3, 96, 84, 84},
		{"camera shrinks by 3", 224, 224, 3, 96, 75, 75},
		{"wide grey", 100, 300, 1, 96, 75, 25},
		{"odd sizes round up", 97, 50, 3, 96, 25, 49},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pix := make([]byte, tc.h*tc.w*tc.c)
			for i := range pix {
				pix[i] = byte(i * 7)
			}
			k := ShrinkFactor(tc.h, tc.w, tc.side)
			// The top-left block is white, so its shrunk pixel is.
			for y := range k {
				for x := range k {
					for ch := range tc.c {
						pix[(y*tc.w+x)*tc.c+ch] = 255
					}
				}
			}
			var e Encoder
			b, w, h, err := e.Encode(pix, tc.h, tc.w, tc.c, k)
			if err != nil {
				t.Fatal(err)
			}
			im, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if w != tc.wantW || h != tc.wantH || im.Bounds().Dx() != tc.wantW || im.Bounds().Dy() != tc.wantH {
				t.Fatalf("frame %dx%d (PNG %v), want %dx%d", w, h, im.Bounds(), tc.wantW, tc.wantH)
			}
			if r, g, b, _ := im.At(0, 0).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 {
				t.Fatalf("top-left pixel %d %d %d, want white", r>>8, g>>8, b>>8)
			}
		})
	}
}

// TestEncodeExact: unshrunk, every pixel comes back as it was recorded.
func TestEncodeExact(t *testing.T) {
	for _, c := range []int{1, 3} {
		h, w := 5, 7
		pix := make([]byte, h*w*c)
		for i := range pix {
			pix[i] = byte(i*37 + 11)
		}
		var e Encoder
		b, _, _, err := e.Encode(pix, h, w, c, 1)
		if err != nil {
			t.Fatal(err)
		}
		im, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for y := range h {
			for x := range w {
				p := pix[(y*w+x)*c:]
				want := color.NRGBA{p[0], p[0], p[0], 255}
				if c == 3 {
					want = color.NRGBA{p[0], p[1], p[2], 255}
				}
				if got := color.NRGBAModel.Convert(im.At(x, y)); got != want {
					t.Fatalf("c=%d pixel (%d,%d) = %v, want %v", c, x, y, got, want)
				}
			}
		}
	}
}

func TestEncodeRefusesWrongSize(t *testing.T) {
	var e Encoder
	for _, tc := range []struct{ n, h, w, c int }{{10, 2, 2, 3}, {12, 2, 2, 4}, {0, 0, 0, 3}} {
		if _, _, _, err := e.Encode(make([]byte, tc.n), tc.h, tc.w, tc.c, 1); !errors.Is(err, ErrSize) {
			t.Errorf("%d bytes as %dx%dx%d: got %v, want ErrSize", tc.n, tc.h, tc.w, tc.c, err)
		}
	}
}

// TestEncoderReuse encodes frames of changing sizes, channels, shrink
// factors and levels with one Encoder: each encoding is byte for byte a
// fresh Encoder's (nothing of the previous frame's image or zlib state
// leaks into it), and a frame's bytes stay the caller's after the next
// Encode.
func TestEncoderReuse(t *testing.T) {
	frame := func(h, w, c int, seed byte) []byte {
		pix := make([]byte, h*w*c)
		for i := range pix {
			pix[i] = byte(i*31) ^ seed
		}
		return pix
	}
	steps := []struct {
		name    string
		h, w, c int
		k       int
		level   png.CompressionLevel
		seed    byte
	}{
		{"rgb", 24, 32, 3, 1, png.BestSpeed, 1},
		{"rgb again, other pixels", 24, 32, 3, 1, png.BestSpeed, 2},
		{"grey", 24, 32, 1, 1, png.BestSpeed, 3},
		{"larger rgb", 48, 40, 3, 1, png.BestSpeed, 4},
		{"shrunk", 48, 40, 3, 3, png.DefaultCompression, 5},
		{"smaller rgb", 8, 8, 3, 1, png.BestCompression, 6},
		{"rgb at the first size", 24, 32, 3, 1, png.BestSpeed, 1},
	}
	var e Encoder
	var prev, prevWant []byte
	for _, st := range steps {
		pix := frame(st.h, st.w, st.c, st.seed)
		e.Level = st.level
		got, w, h, err := e.Encode(pix, st.h, st.w, st.c, st.k)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		fresh := Encoder{Level: st.level}
		want, fw, fh, err := fresh.Encode(pix, st.h, st.w, st.c, st.k)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if !bytes.Equal(got, want) || w != fw || h != fh {
			t.Errorf("%s: %d bytes %dx%d from a reused encoder, %d bytes %dx%d from a fresh one", st.name, len(got), w, h, len(want), fw, fh)
		}
		if prev != nil && !bytes.Equal(prev, prevWant) {
			t.Errorf("%s: the previous frame's bytes changed", st.name)
		}
		prev, prevWant = got, bytes.Clone(got)
	}
}

// TestEncoderLevel: the level changes the bytes, never the pixels.
func TestEncoderLevel(t *testing.T) {
	h, w := 64, 64
	pix := make([]byte, h*w*3)
	for i := range pix {
		pix[i] = byte(i / 5)
	}
	fast, best := Encoder{Level: png.BestSpeed}, Encoder{Level: png.BestCompression}
	a, _, _, err := fast.Encode(pix, h, w, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _, err := best.Encode(pix, h, w, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatalf("BestSpeed and BestCompression gave the same %d bytes: the level is not used", len(a))
	}
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	for y := range h {
		for x := range w {
			if ia.At(x, y) != ib.At(x, y) {
				t.Fatalf("pixel (%d,%d): %v at BestSpeed, %v at BestCompression", x, y, ia.At(x, y), ib.At(x, y))
			}
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	pix := make([]byte, 84*84*3)
	for i := range pix {
		pix[i] = byte(i / 97)
	}
	for _, bc := range []struct {
		name  string
		level png.CompressionLevel
	}{{"default", png.DefaultCompression}, {"best-speed", png.BestSpeed}} {
		b.Run(bc.name, func(b *testing.B) {
			e := Encoder{Level: bc.level}
			b.ReportAllocs()
			b.SetBytes(int64(len(pix)))
			for b.Loop() {
				if _, _, _, err := e.Encode(pix, 84, 84, 3, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
