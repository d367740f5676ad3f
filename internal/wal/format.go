package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// On-disk format constants. They are part of the on-disk format: do not
// change them (add a new version instead).
const (
	segmentMagic      = "rlrecWAL" // segment header bytes 0..7
	formatVersion     = 1          // segment header bytes 8..11
	segmentHeaderSize = 24         // magic 8 + version 4 + first Pos 8 + CRC 4
	recordHeaderSize  = 9          // CRC 4 + length 4 + type 1

	kindMask  = 0x0f
	kindFull  = 0x01 // a whole record; 0 is never a valid kind
	codecMask = 0xf0
	codecNone = 0x00
	codecS2   = 0x10
	codecZstd = 0x20

	segmentSuffix    = ".wal"
	segmentNameWidth = 16
)

// MaxRecordSize is the largest payload Append accepts, and the largest a
// stored record may decode to (256 MiB). Part of the on-disk format: a
// reader refuses larger records, so do not lower it.
const MaxRecordSize = 256 << 20

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func segmentName(num uint64) string {
	return fmt.Sprintf("%0*d%s", segmentNameWidth, num, segmentSuffix)
}

// parseSegmentName returns the number of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != segmentNameWidth {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return n, err == nil
}

func appendSegmentHeader(dst []byte, first Pos) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, formatVersion)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(first))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// parseSegmentHeader returns the first Pos of a segment from its bytes.
func parseSegmentHeader(b []byte) (Pos, error) {
	if len(b) < segmentHeaderSize {
		return 0, fmt.Errorf("%w: header has %d of %d bytes", ErrTruncated, len(b), segmentHeaderSize)
	}
	if string(b[:8]) != segmentMagic {
		return 0, fmt.Errorf("%w: magic %q, want %q", ErrBadHeader, b[:8], segmentMagic)
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:24]) {
		return 0, fmt.Errorf("%w: header checksum mismatch", ErrBadHeader)
	}
	if v := binary.LittleEndian.Uint32(b[8:12]); v != formatVersion {
		return 0, fmt.Errorf("%w: format version %d, this build reads %d", ErrBadHeader, v, formatVersion)
	}
	first := Pos(binary.LittleEndian.Uint64(b[12:20]))
	if first == 0 {
		return 0, fmt.Errorf("%w: first position 0", ErrBadHeader)
	}
	return first, nil
}

// parseRecord checks the record at b[off:] and returns its type byte and
// the bounds of its stored payload. It never allocates unless it fails.
func parseRecord(b []byte, off int) (typ byte, start, end int, err error) {
	typ, end, bad := checkRecord(b, off)
	if bad == recordOK {
		return typ, off + recordHeaderSize, end, nil
	}
	rest := len(b) - off
	switch bad {
	case recordShortHeader:
		err = fmt.Errorf("%w: %d bytes left, a record header needs %d", ErrTruncated, rest, recordHeaderSize)
	case recordBadType:
		err = fmt.Errorf("%w: type byte 0x%02x", ErrBadRecord, b[off+8])
	case recordShortPayload:
		err = fmt.Errorf("%w: length %d, %d bytes left", ErrTruncated, binary.LittleEndian.Uint32(b[off+4:]), rest-recordHeaderSize)
	default:
		err = ErrChecksum
	}
	return 0, 0, 0, err
}

const (
	recordOK = iota
	recordShortHeader
	recordBadType
	recordShortPayload
	recordBadChecksum
)

// checkRecord validates the record at b[off:] and returns its type byte
// and end offset, or why it is not a record.
func checkRecord(b []byte, off int) (typ byte, end int, bad int) {
	rest := len(b) - off
	if rest < recordHeaderSize {
		return 0, 0, recordShortHeader
	}
	h := b[off : off+recordHeaderSize]
	n := binary.LittleEndian.Uint32(h[4:8])
	typ = h[8]
	if typ&kindMask != kindFull || (typ&codecMask != codecNone && typ&codecMask != codecS2 && typ&codecMask != codecZstd) {
		return 0, 0, recordBadType
	}
	if uint64(n) > uint64(rest-recordHeaderSize) {
		return 0, 0, recordShortPayload
	}
	end = off + recordHeaderSize + int(n)
	if crc32.Checksum(b[off+4:end], castagnoli) != binary.LittleEndian.Uint32(h[0:4]) {
		return 0, 0, recordBadChecksum
	}
	return typ, end, recordOK
}

// finishRecord fills in the header of rec, a record whose stored payload
// follows its header space.
func finishRecord(rec []byte, codec byte) {
	binary.LittleEndian.PutUint32(rec[4:8], uint32(len(rec)-recordHeaderSize))
	rec[8] = kindFull | codec
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], castagnoli))
}
