package logrec

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// JournalMagic starts every recovery journal. Part of the on-disk format:
// do not change it.
const JournalMagic = "rlrec-journal-1\n"

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// AppendJournal appends a whole recovery journal holding markers (each a
// marker record, type byte first) to dst.
func AppendJournal(dst []byte, markers [][]byte) []byte {
	start := len(dst)
	dst = append(dst, JournalMagic...)
	for _, m := range markers {
		dst = binary.AppendUvarint(dst, uint64(len(m)))
		dst = append(dst, m...)
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// ParseJournal returns the marker records of a recovery journal; they
// alias b.
func ParseJournal(b []byte) ([][]byte, error) {
	if len(b) < len(JournalMagic)+4 || string(b[:len(JournalMagic)]) != JournalMagic {
		return nil, fmt.Errorf("%w: not a recovery journal", ErrJournal)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrJournal)
	}
	var out [][]byte
	for p := body[len(JournalMagic):]; len(p) > 0; {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return nil, fmt.Errorf("%w: truncated record", ErrJournal)
		}
		out = append(out, p[k:k+int(n)])
		p = p[k+int(n):]
	}
	return out, nil
}
