// Package frame handles camera frames: the image leaves of an observation
// space, a uint8 Box of shape (H, W, 3) (RGB) or (H, W, 1) (grey), whose
// bytes are the H×W×C pixel values in row-major order, as the leaf holds
// them. It is the one definition of an image leaf for the LeRobot export
// (which stores frames as PNG) and for rlrec report (which shows them,
// shrunk).
package frame

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/png"

	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// ErrSize is returned when a frame's bytes do not match its shape.
var ErrSize = errors.New("frame: pixel bytes do not match the shape")

// IsImage reports whether a leaf holds camera frames: a uint8 Box of shape
// (H, W, 3) or (H, W, 1) with H, W > 0.
func IsImage(l *schema.Leaf) bool {
	return l.Kind == schema.KindBox && l.DType == spacesv1.DataType_DATA_TYPE_UINT8 &&
		len(l.Shape) == 3 && (l.Shape[2] == 3 || l.Shape[2] == 1) && l.Shape[0] > 0 && l.Shape[1] > 0
}

// Shape returns an image leaf's height, width and channels.
func Shape(l *schema.Leaf) (h, w, c int) {
	return int(l.Shape[0]), int(l.Shape[1]), int(l.Shape[2])
}

// ShrinkFactor is the smallest integer k ≥ 1 with ceil(h/k) and
// ceil(w/k) both at most maxSide.
func ShrinkFactor(h, w, maxSide int) int {
	k := 1
	for (h+k-1)/k > maxSide || (w+k-1)/k > maxSide {
		k++
	}
	return k
}

// Encoder encodes frames as PNG, reusing its buffers; it is not safe for
// concurrent use.
type Encoder struct {
	enc png.Encoder
	buf bytes.Buffer
}

// Encode returns the PNG encoding of the h×w×c pixels, shrunk by the
// integer factor k (each output pixel the rounded mean of a k×k block,
// partial at the right and bottom edges; k = 1 keeps every pixel), and
// the encoded width and height (ceil(w/k), ceil(h/k)). RGB frames become
// opaque NRGBA images, grey ones Gray images.
func (e *Encoder) Encode(pix []byte, h, w, c, k int) (out []byte, ow, oh int, err error) {
	if h <= 0 || w <= 0 || (c != 1 && c != 3) || len(pix) != h*w*c {
		return nil, 0, 0, fmt.Errorf("%w: %d bytes for %dx%dx%d", ErrSize, len(pix), h, w, c)
	}
	k = max(k, 1)
	oh, ow = (h+k-1)/k, (w+k-1)/k
	var img image.Image
	var dst []byte
	var stride int
	if c == 1 {
		g := image.NewGray(image.Rect(0, 0, ow, oh))
		img, dst, stride = g, g.Pix, 1
	} else {
		rgba := image.NewNRGBA(image.Rect(0, 0, ow, oh))
		img, dst, stride = rgba, rgba.Pix, 4
	}
	if k == 1 {
		for i := range h * w {
			copy(dst[i*stride:i*stride+c], pix[i*c:i*c+c])
			if stride == 4 {
				dst[i*4+3] = 255
			}
		}
	} else {
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
				o := dst[(oy*ow+ox)*stride:]
				for ch := range c {
					o[ch] = byte((sum[ch] + n/2) / n)
				}
				if stride == 4 {
					o[3] = 255
				}
			}
		}
	}
	e.buf.Reset()
	if err := e.enc.Encode(&e.buf, img); err != nil {
		return nil, 0, 0, err
	}
	return bytes.Clone(e.buf.Bytes()), ow, oh, nil
}
