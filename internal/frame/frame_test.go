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

func BenchmarkEncode(b *testing.B) {
	pix := make([]byte, 84*84*3)
	for i := range pix {
		pix[i] = byte(i / 97)
	}
	var e Encoder
	b.ReportAllocs()
	b.SetBytes(int64(len(pix)))
	for b.Loop() {
		if _, _, _, err := e.Encode(pix, 84, 84, 3, 1); err != nil {
			b.Fatal(err)
		}
	}
}
