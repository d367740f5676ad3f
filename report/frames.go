package report

import (
	"bytes"
	"fmt"
	"image"
	"image/png"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// isImage reports whether a leaf is shown as camera frames: a uint8 Box of
// shape (H, W, 3) (RGB) or (H, W, 1) (grey), the rule the LeRobot export
// uses for its image features.
func isImage(l *schema.Leaf) bool {
	return l.Kind == schema.KindBox && l.DType == spacesv1.DataType_DATA_TYPE_UINT8 &&
		len(l.Shape) == 3 && (l.Shape[2] == 3 || l.Shape[2] == 1) && l.Shape[0] > 0 && l.Shape[1] > 0
}

// Frame is one shown camera frame.
type Frame struct {
	// Step is the frame's step within its episode (0-based).
	Step int64
	// W and H are the shown size in pixels (after shrinking).
	W, H int
	// PNG is the encoded frame.
	PNG []byte
}

// frameEncoder shrinks HxWxC uint8 pixels by an integer factor (box
// average) until no side exceeds maxSide, and encodes them as PNG.
type frameEncoder struct {
	maxSide int
	enc     png.Encoder
	buf     bytes.Buffer
}

// shrinkFactor is the smallest integer k with ceil(side/k) <= maxSide for
// both sides.
func shrinkFactor(h, w, maxSide int) int {
	k := 1
	for (h+k-1)/k > maxSide || (w+k-1)/k > maxSide {
		k++
	}
	return k
}

func (e *frameEncoder) encode(pix []byte, h, w, c int) (Frame, error) {
	if len(pix) != h*w*c {
		return Frame{}, fmt.Errorf("frame of %d bytes, want %dx%dx%d", len(pix), h, w, c)
	}
	k := shrinkFactor(h, w, e.maxSide)
	oh, ow := (h+k-1)/k, (w+k-1)/k
	var img image.Image
	var out []byte
	var stride int
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, ow, oh))
		img, out, stride = g, g.Pix, 1
	} else {
		rgba := image.NewNRGBA(image.Rect(0, 0, ow, oh))
		img, out, stride = rgba, rgba.Pix, 4
	}
	for oy := range oh {
		for ox := range ow {
			var sum [3]int
			n := 0
			for y := oy * k; y < min((oy+1)*k, h); y++ {
				for x := ox * k; x < min((ox+1)*k, w); x++ {
					p := pix[(y*w+x)*c:]
					for ch := range c {
						sum[ch] += int(p[ch])
					}
					n++
				}
			}
			o := out[(oy*ow+ox)*stride:]
			for ch := range c {
				o[ch] = byte((sum[ch] + n/2) / n)
			}
			if stride == 4 {
				o[3] = 255
			}
		}
	}
	e.buf.Reset()
	if err := e.enc.Encode(&e.buf, img); err != nil {
		return Frame{}, err
	}
	return Frame{W: ow, H: oh, PNG: bytes.Clone(e.buf.Bytes())}, nil
}

// sampleSteps returns up to k positions in [0, n), evenly spaced, first
// and last included.
func sampleSteps(n int64, k int) []int64 {
	if n <= 0 || k <= 0 {
		return nil
	}
	if n <= int64(k) {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	if k == 1 {
		return []int64{0}
	}
	out := make([]int64, k)
	for i := range out {
		out[i] = (int64(i)*(n-1) + int64(k-1)/2) / int64(k-1)
	}
	return out
}
