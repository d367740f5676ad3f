package wal

import (
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// Compression selects the codec records are compressed with. Compression
// values are options, not stored; the stored codec ids are in format.go.
type Compression int

const (
	// CompressionDefault is CompressionS2.
	CompressionDefault Compression = iota
	// CompressionNone stores every payload as it is.
	CompressionNone
	// CompressionS2 uses S2 block compression: fast, modest ratio.
	CompressionS2
	// CompressionZstd uses zstd at its fastest level: smaller, slower.
	CompressionZstd
)

func (c Compression) String() string {
	switch c {
	case CompressionDefault:
		return "default"
	case CompressionNone:
		return "none"
	case CompressionS2:
		return "s2"
	case CompressionZstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", int(c))
}

// encoder compresses payloads on the flusher goroutine.
type encoder struct {
	codec   Compression
	minSize int
	zstd    *zstd.Encoder
}

func newEncoder(c Compression, minSize int) (*encoder, error) {
	e := &encoder{codec: c, minSize: minSize}
	if c == CompressionZstd {
		z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
		if err != nil {
			return nil, fmt.Errorf("wal: zstd encoder: %w", err)
		}
		e.zstd = z
	}
	return e, nil
}

// maxStored is the most bytes appendEncoded appends for a payload of n
// bytes with room to spare (zstd may take more, and then grows dst).
func (e *encoder) maxStored(n int) int {
	if e.codec == CompressionS2 && n >= e.minSize {
		return s2.MaxEncodedLen(n)
	}
	return n
}

// appendEncoded appends the bytes to store for p to dst and returns their
// codec id and the extended dst: p compressed when that saves at least a
// sixteenth, else p as it is. With S2 and maxStored(len(p)) bytes of room
// in dst, p is compressed in place, into dst's spare capacity.
func (e *encoder) appendEncoded(dst, p []byte) (byte, []byte) {
	if len(p) < e.minSize {
		return codecNone, append(dst, p...)
	}
	start := len(dst)
	var id byte
	switch e.codec {
	case CompressionS2:
		// s2.Encode writes into its dst when that has the capacity
		// (else into a new slice, appended here).
		enc := s2.Encode(dst[start:start], p)
		if cap(dst)-start >= len(enc) && (len(enc) == 0 || &dst[:start+1][start] == &enc[0]) {
			dst = dst[:start+len(enc)]
		} else {
			dst = append(dst, enc...)
		}
		id = codecS2
	case CompressionZstd:
		dst = e.zstd.EncodeAll(p, dst)
		id = codecZstd
	default:
		return codecNone, append(dst, p...)
	}
	if len(dst)-start > len(p)-len(p)/16 {
		return codecNone, append(dst[:start], p...)
	}
	return id, dst
}

// decoder expands stored payloads, reusing its buffer.
type decoder struct {
	buf  []byte
	zstd *zstd.Decoder
	// limit is the largest decoded payload accepted; 0 means
	// MaxRecordSize. Tests lower it.
	limit int
}

func (d *decoder) max() int {
	if d.limit > 0 {
		return d.limit
	}
	return MaxRecordSize
}

func (d *decoder) decode(typ byte, body []byte) ([]byte, error) {
	switch typ & codecMask {
	case codecNone:
		return body, nil
	case codecS2:
		n, err := s2.DecodedLen(body)
		if err != nil {
			return nil, fmt.Errorf("%w: s2 payload: %v", ErrBadRecord, err)
		}
		if n > d.max() {
			return nil, fmt.Errorf("%w: s2 payload decodes to %d bytes, over the %d limit", ErrBadRecord, n, d.max())
		}
		if cap(d.buf) < n {
			d.buf = make([]byte, n)
		}
		out, err := s2.Decode(d.buf[:n], body)
		if err != nil {
			return nil, fmt.Errorf("%w: s2 payload: %v", ErrBadRecord, err)
		}
		return out, nil
	case codecZstd:
		if d.zstd == nil {
			z, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(d.max())))
			if err != nil {
				return nil, fmt.Errorf("wal: zstd decoder: %w", err)
			}
			d.zstd = z
		}
		out, err := d.zstd.DecodeAll(body, d.buf[:0])
		if err != nil {
			return nil, fmt.Errorf("%w: zstd payload: %v", ErrBadRecord, err)
		}
		d.buf = out
		return out, nil
	}
	return nil, fmt.Errorf("%w: type byte 0x%02x", ErrBadRecord, typ)
}

// first returns the first byte of the payload body decodes to, when it
// can be had without decoding: an uncompressed payload's first byte, or
// the first byte of the literal an S2 block starts with (a block cannot
// start with a copy: there is nothing before it to copy from). ok is false
// otherwise (zstd, an empty payload, or a block that is not as expected,
// which decode will report).
func (d *decoder) first(typ byte, body []byte) (b byte, ok bool) {
	switch typ & codecMask {
	case codecNone:
		if len(body) > 0 {
			return body[0], true
		}
	case codecS2:
		n, k := binary.Uvarint(body)
		if k <= 0 || n == 0 || k >= len(body) {
			return 0, false
		}
		tag := body[k]
		if tag&0x03 != 0x00 { // not a literal
			return 0, false
		}
		start := k + 1
		if x := int(tag >> 2); x >= 60 {
			start += x - 59 // the literal's length takes 1-4 more bytes
		}
		if start < len(body) {
			return body[start], true
		}
	}
	return 0, false
}

func (d *decoder) close() {
	if d.zstd != nil {
		d.zstd.Close()
	}
}
