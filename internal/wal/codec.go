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

// encoder compresses payloads on the flusher goroutine, reusing its
// buffer.
type encoder struct {
	codec   Compression
	minSize int
	buf     []byte
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

// encode returns the codec id and the bytes to store for p; the bytes are
// valid until the next call.
func (e *encoder) encode(p []byte) (byte, []byte) {
	if len(p) < e.minSize {
		return codecNone, p
	}
	var id byte
	switch e.codec {
	case CompressionS2:
		if n := s2.MaxEncodedLen(len(p)); cap(e.buf) < n {
			e.buf = make([]byte, n)
		}
		e.buf = s2.Encode(e.buf[:cap(e.buf)], p)
		id = codecS2
	case CompressionZstd:
		e.buf = e.zstd.EncodeAll(p, e.buf[:0])
		id = codecZstd
	default:
		return codecNone, p
	}
	if len(e.buf) > len(p)-len(p)/16 {
		return codecNone, p
	}
	return id, e.buf
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
