// Package frame handles camera frames: the image leaves of an observation
// space, a uint8 Box of shape (H, W, 3) (RGB) or (H, W, 1) (grey), whose
// bytes are the H×W×C pixel values in row-major order, as the leaf holds
// them. It is the one definition of an image leaf, and the one PNG
// encoder of frames (Encoder), for the LeRobot export (which stores
// frames as PNG at zlib's fastest level) and for rlrec report (which
// shows them, shrunk, at the default level).
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

// Encoder encodes frames as PNG (lossless). It reuses, from frame to
// frame, its output buffer, its image while the frame size stays, and the
// PNG encoder's zlib state (png.EncoderBuffer): a new zlib writer per
// frame allocated about 1 MB. The LeRobot export writes every frame with
// one (Level png.BestSpeed), rlrec report its shrunk frames (the default
// level). It is not safe for concurrent use.
type Encoder struct {
	// Level is the zlib compression level; the zero value is
	// png.DefaultCompression, as for png.Encoder.
	Level png.CompressionLevel

	enc  png.Encoder
	pool encoderPool
	buf  bytes.Buffer
	gray *image.Gray
	rgba *image.NRGBA
}

// encoderPool keeps the one png.EncoderBuffer an Encoder reuses.
type encoderPool struct{ b *png.EncoderBuffer }

func (p *encoderPool) Get() *png.EncoderBuffer  { return p.b }
func (p *encoderPool) Put(b *png.EncoderBuffer) { p.b = b }

// Encode returns the PNG encoding of the h×w×c pixels, shrunk by the
// integer factor k (each output pixel the rounded mean of a k×k block,
// partial at the right and bottom edges; k = 1 keeps every pixel), and
// the encoded width and height (ceil(w/k), ceil(h/k)). RGB frames become
// opaque NRGBA images, grey ones Gray images. The bytes returned are the
// caller's.
func (e *Encoder) Encode(pix []byte, h, w, c, k int) (out []byte, ow, oh int, err error) {
	if h <= 0 || w <= 0 || (c != 1 && c != 3) || len(pix) != h*w*c {
		return nil, 0, 0, fmt.Errorf("%w: %d bytes for %dx%dx%d", ErrSize, len(pix), h, w, c)
	}
	k = max(k, 1)
	oh, ow = (h+k-1)/k, (w+k-1)/k
	r := image.Rect(0, 0, ow, oh)
	var img image.Image
	var dst []byte
	var stride int
	if c == 1 {
		if e.gray == nil || e.gray.Rect != r {
			e.gray = image.NewGray(r)
		}
		img, dst, stride = e.gray, e.gray.Pix, 1
	} else {
		if e.rgba == nil || e.rgba.Rect != r {
			e.rgba = image.NewNRGBA(r)
		}
		img, dst, stride = e.rgba, e.rgba.Pix, 4
	}
	switch {
	case k == 1 && c == 1:
		copy(dst, pix)
	case k == 1:
		for i := range h * w {
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = pix[3*i], pix[3*i+1], pix[3*i+2], 255
		}
	default:
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
	e.enc.CompressionLevel, e.enc.BufferPool = e.Level, &e.pool
	e.buf.Reset()
	if err := e.enc.Encode(&e.buf, img); err != nil {
		return nil, 0, 0, err
	}
	return bytes.Clone(e.buf.Bytes()), ow, oh, nil
}
