package report

import (
	"bytes"
	"image/png"
	"slices"
	"testing"
)

func TestSampleSteps(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		k    int
		want []int64
	}{
		{"none", 0, 8, nil},
		{"fewer steps than frames", 3, 8, []int64{0, 1, 2}},
		{"equal", 4, 4, []int64{0, 1, 2, 3}},
		{"one frame", 10, 1, []int64{0}},
		{"first and last", 10, 2, []int64{0, 9}},
		{"spread", 60, 4, []int64{0, 20, 39, 59}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sampleSteps(tc.n, tc.k); !slices.Equal(got, tc.want) {
				t.Fatalf("sampleSteps(%d, %d) = %v, want %v", tc.n, tc.k, got, tc.want)
			}
		})
	}
}

func TestFrameEncoder(t *testing.T) {
	tests := []struct {
		name         string
		h, w, c      int
		side         int
		wantW, wantH int
	}{
		{"small stays", 84, 84, 3, 96, 84, 84},
		{"camera shrinks by 3", 224, 224, 3, 96, 75, 75},
		{"wide", 100, 300, 1, 96, 75, 25},
		{"odd sizes round up", 97, 50, 3, 96, 25, 49},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pix := make([]byte, tc.h*tc.w*tc.c)
			for i := range pix {
				pix[i] = byte(i * 7)
			}
			// The top-left block is white, so its shrunk pixel is white.
			k := shrinkFactor(tc.h, tc.w, tc.side)
			for y := range k {
				for x := range k {
					for ch := range tc.c {
						pix[(y*tc.w+x)*tc.c+ch] = 255
					}
				}
			}
			enc := &frameEncoder{maxSide: tc.side}
			f, err := enc.encode(pix, tc.h, tc.w, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			im, err := png.Decode(bytes.NewReader(f.PNG))
			if err != nil {
				t.Fatal(err)
			}
			if f.W != tc.wantW || f.H != tc.wantH || im.Bounds().Dx() != tc.wantW || im.Bounds().Dy() != tc.wantH {
				t.Fatalf("frame %dx%d (PNG %v), want %dx%d", f.W, f.H, im.Bounds(), tc.wantW, tc.wantH)
			}
			if r, g, b, _ := im.At(0, 0).RGBA(); r>>8 != 255 || g>>8 != 255 || b>>8 != 255 {
				t.Fatalf("top-left pixel %d %d %d, want white", r>>8, g>>8, b>>8)
			}
		})
	}
	if _, err := (&frameEncoder{maxSide: 96}).encode(make([]byte, 10), 2, 2, 3); err == nil {
		t.Fatal("a frame of the wrong size encoded")
	}
}
