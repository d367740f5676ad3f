package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
)

// On-disk format constants. They are part of the on-disk format: do not
// change them (add a new version instead, and keep reading the old ones).
const (
	segmentMagic      = "rlrecWAL" // segment header bytes 0..7
	segmentHeaderSize = 24         // magic 8 + version 4 + first Pos 8 + CRC 4

	// formatV1 segments (written by earlier builds) hold records framed
	// without positions: CRC 4 + length 4 + type 1.
	formatV1           = 1
	recordHeaderSizeV1 = 9

	// formatV2 records carry their own position and the last position
	// that was durable when they were framed: CRC 4 + length 4 + type 1 +
	// Pos 8 + durable Pos 8.
	formatV2         = 2
	recordHeaderSize = 25

	// formatVersion is the version this build writes.
	formatVersion = formatV2

	kindMask  = 0x0f
	kindFull  = 0x01 // a whole record; 0 is never a valid kind
	kindLost  = 0x02 // formatV2 only: positions Repair found damaged and gave up (payload: uint64 count)
	kindMark  = 0x03 // formatV2 only: no record, a note that the records before Pos are durable (no payload)
	codecMask = 0xf0
	codecNone = 0x00
	codecS2   = 0x10
	codecZstd = 0x20

	lostPayloadSize = 8

	segmentSuffix    = ".wal"
	segmentNameWidth = 16
	// tempSuffix names a segment being created or rewritten; it is renamed
	// to its segment name once durable, so a segment file always has a
	// whole header.
	tempSuffix = ".tmp"
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
	return appendSegmentHeaderVersion(dst, formatVersion, first)
}

func appendSegmentHeaderVersion(dst []byte, version uint32, first Pos) []byte {
	start := len(dst)
	dst = append(dst, segmentMagic...)
	dst = binary.LittleEndian.AppendUint32(dst, version)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(first))
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// parseSegmentHeader returns the format version and first Pos of a segment
// from its bytes.
func parseSegmentHeader(b []byte) (version uint32, first Pos, err error) {
	if len(b) < segmentHeaderSize {
		return 0, 0, fmt.Errorf("%w: header has %d of %d bytes", ErrTruncated, len(b), segmentHeaderSize)
	}
	if string(b[:8]) != segmentMagic {
		return 0, 0, fmt.Errorf("%w: magic %q, want %q", ErrBadHeader, b[:8], segmentMagic)
	}
	if crc32.Checksum(b[:20], castagnoli) != binary.LittleEndian.Uint32(b[20:24]) {
		return 0, 0, fmt.Errorf("%w: header checksum mismatch", ErrBadHeader)
	}
	version = binary.LittleEndian.Uint32(b[8:12])
	if version != formatV1 && version != formatV2 {
		return 0, 0, fmt.Errorf("%w: format version %d, this build reads %d and %d", ErrBadHeader, version, formatV1, formatV2)
	}
	first = Pos(binary.LittleEndian.Uint64(b[12:20]))
	if first == 0 {
		return 0, 0, fmt.Errorf("%w: first position 0", ErrBadHeader)
	}
	return version, first, nil
}

// frame is a record that checkRecord found whole.
type frame struct {
	typ        byte
	pos        Pos    // formatV2: the record's position (0 in formatV1)
	durable    Pos    // formatV2: the last durable position when it was framed
	lost       uint64 // kindLost: how many positions from pos are lost
	start, end int    // the stored payload is b[start:end]
}

// parseRecord checks the record at b[off:] of a segment of the given
// format version. It never allocates unless it fails.
func parseRecord(b []byte, off int, version uint32) (frame, error) {
	f, bad := checkRecord(b, off, version)
	if bad == recordOK {
		return f, nil
	}
	hs := headerSize(version)
	rest := len(b) - off
	var err error
	switch bad {
	case recordShortHeader:
		err = fmt.Errorf("%w: %d bytes left, a record header needs %d", ErrTruncated, rest, hs)
	case recordBadType:
		err = fmt.Errorf("%w: type byte 0x%02x", ErrBadRecord, b[off+8])
	case recordShortPayload:
		err = fmt.Errorf("%w: length %d, %d bytes left", ErrTruncated, binary.LittleEndian.Uint32(b[off+4:]), rest-hs)
	case recordBadFields:
		err = fmt.Errorf("%w: position %d, durable position %d, type 0x%02x, length %d", ErrBadRecord,
			binary.LittleEndian.Uint64(b[off+9:]), binary.LittleEndian.Uint64(b[off+17:]), b[off+8], binary.LittleEndian.Uint32(b[off+4:]))
	default:
		err = ErrChecksum
	}
	return frame{}, err
}

const (
	recordOK = iota
	recordShortHeader
	recordBadType
	recordShortPayload
	recordBadChecksum
	recordBadFields
)

func headerSize(version uint32) int {
	if version == formatV1 {
		return recordHeaderSizeV1
	}
	return recordHeaderSize
}

// checkRecord validates the record at b[off:] and returns it, or why it
// is not a record.
func checkRecord(b []byte, off int, version uint32) (frame, int) {
	hs := headerSize(version)
	rest := len(b) - off
	if rest < hs {
		return frame{}, recordShortHeader
	}
	h := b[off : off+hs]
	n := binary.LittleEndian.Uint32(h[4:8])
	typ := h[8]
	switch {
	case typ&kindMask == kindFull:
		if c := typ & codecMask; c != codecNone && c != codecS2 && c != codecZstd {
			return frame{}, recordBadType
		}
	case (typ == kindLost || typ == kindMark) && version >= formatV2:
	default:
		return frame{}, recordBadType
	}
	if uint64(n) > uint64(rest-hs) {
		return frame{}, recordShortPayload
	}
	end := off + hs + int(n)
	if crc32.Checksum(b[off+4:end], castagnoli) != binary.LittleEndian.Uint32(h[0:4]) {
		return frame{}, recordBadChecksum
	}
	f := frame{typ: typ, start: off + hs, end: end}
	if version == formatV1 {
		return f, recordOK
	}
	f.pos = Pos(binary.LittleEndian.Uint64(h[9:17]))
	f.durable = Pos(binary.LittleEndian.Uint64(h[17:25]))
	if f.pos == 0 || f.durable >= f.pos {
		return frame{}, recordBadFields
	}
	if typ == kindMark && n != 0 {
		return frame{}, recordBadFields
	}
	if typ == kindLost {
		if n != lostPayloadSize {
			return frame{}, recordBadFields
		}
		f.lost = binary.LittleEndian.Uint64(b[f.start:end])
		if f.lost == 0 || Pos(f.lost) > ^Pos(0)-f.pos {
			return frame{}, recordBadFields
		}
	}
	return f, recordOK
}

// finishRecord fills in the header of rec, a formatV2 record at pos whose
// stored payload follows its header space.
func finishRecord(rec []byte, codec byte, pos, durable Pos) {
	binary.LittleEndian.PutUint32(rec[4:8], uint32(len(rec)-recordHeaderSize))
	rec[8] = kindFull | codec
	binary.LittleEndian.PutUint64(rec[9:17], uint64(pos))
	binary.LittleEndian.PutUint64(rec[17:25], uint64(durable))
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], castagnoli))
}

// appendLostRecord appends a formatV2 record saying that the n positions
// from pos were lost to damage.
func appendLostRecord(dst []byte, pos Pos, n uint64) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize+lostPayloadSize)...)
	rec := dst[start:]
	binary.LittleEndian.PutUint32(rec[4:8], lostPayloadSize)
	rec[8] = kindLost
	binary.LittleEndian.PutUint64(rec[9:17], uint64(pos))
	binary.LittleEndian.PutUint64(rec[17:25], uint64(pos-1))
	binary.LittleEndian.PutUint64(rec[25:33], n)
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], castagnoli))
	return dst
}

// appendMarkRecord appends a formatV2 mark saying that every record
// before pos is durable.
func appendMarkRecord(dst []byte, pos Pos) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize)...)
	rec := dst[start:]
	rec[8] = kindMark
	binary.LittleEndian.PutUint64(rec[9:17], uint64(pos))
	binary.LittleEndian.PutUint64(rec[17:25], uint64(pos-1))
	binary.LittleEndian.PutUint32(rec[0:4], crc32.Checksum(rec[4:], castagnoli))
	return dst
}

// appendRecordV2 appends the formatV2 framing of a record whose type and
// stored payload were read from a segment of any version.
func appendRecordV2(dst []byte, typ byte, payload []byte, pos, durable Pos) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, recordHeaderSize)...)
	dst = append(dst, payload...)
	finishRecord(dst[start:], typ&codecMask, pos, durable)
	return dst
}
