package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/vfs"
)

// The segment manifest. Positions find a segment missing between two
// others (ErrGap), but not one missing at either end: the oldest segments
// are removed in the normal course (RemoveBefore), so a log may start at
// any segment, and a log whose newest segment is gone looks like one that
// ends earlier. ManifestName, a file beside the segments, names the oldest
// and the newest segment the log must have; Repair refuses a log that
// lacks segments at either end of that range (ErrSegmentMissing), naming
// each file missing.
//
// Layout, 32 bytes, little-endian (part of the on-disk format: do not
// change it):
//
//	+-----------------+-----------+-------------+-------------+-----------+
//	| magic (8)       | version   | first       | last        | CRC-32C   |
//	| "rlrecSEG"      | uint32 =1 | uint64      | uint64      | of 0..27  |
//	+-----------------+-----------+-------------+-------------+-----------+
//
// first and last are segment numbers (the names' 16 digits): every
// segment from first to last must exist. The file is written whole under
// a temporary name, fsynced, renamed and its directory fsynced
// (vfs.WriteFile), in an order that never names a segment that may be
// absent after a crash: after a new segment is durable (last grows), and
// before old segments are removed (first grows). A crash between the two
// steps leaves a segment outside the range, which is harmless: a newer
// one is read, an older one is read or removed as before. A log without
// the file (written by an earlier version, or cleared) is not checked;
// Open writes one. After a salvage the file names the segments that are
// left.

// ManifestName is the name of the segment manifest in the log directory.
const ManifestName = "segments"

// ErrSegmentMissing is the cause of a CorruptionError for a log that lacks
// a segment its manifest names.
var ErrSegmentMissing = errors.New("wal: a segment of the log is missing")

const (
	manifestMagic   = "rlrecSEG"
	manifestVersion = 1 // do not change
	manifestSize    = 32
)

type manifest struct {
	first, last uint64
}

func (m manifest) encode() []byte {
	b := make([]byte, 0, manifestSize)
	b = append(b, manifestMagic...)
	b = binary.LittleEndian.AppendUint32(b, manifestVersion)
	b = binary.LittleEndian.AppendUint64(b, m.first)
	b = binary.LittleEndian.AppendUint64(b, m.last)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeManifest(b []byte) (manifest, error) {
	if len(b) != manifestSize || string(b[:8]) != manifestMagic ||
		binary.LittleEndian.Uint32(b[8:]) != manifestVersion ||
		binary.LittleEndian.Uint32(b[28:]) != crc32.Checksum(b[:28], castagnoli) {
		return manifest{}, fmt.Errorf("wal: bad segment manifest (%d bytes)", len(b))
	}
	m := manifest{first: binary.LittleEndian.Uint64(b[12:]), last: binary.LittleEndian.Uint64(b[20:])}
	if m.first == 0 || m.last < m.first {
		return manifest{}, fmt.Errorf("wal: bad segment manifest: segments %d to %d", m.first, m.last)
	}
	return m, nil
}

// readManifest reads the manifest of the log in dir; ok is false when
// there is none.
func readManifest(fsys vfs.FS, dir string) (m manifest, ok bool, err error) {
	name := filepath.Join(dir, ManifestName)
	b, ok, err := readSmall(fsys, name, manifestSize)
	if !ok || err != nil {
		return m, false, err
	}
	m, err = decodeManifest(b)
	if err != nil {
		return m, false, fmt.Errorf("%w: %s: delete it to recover without checking that no segment is missing", err, name)
	}
	return m, true, nil
}

// readSmall reads a file of at most size bytes (and one more, so that a
// longer file shows as too long to its decoder); ok is false when there
// is no such file.
func readSmall(fsys vfs.FS, name string, size int) (b []byte, ok bool, err error) {
	f, err := fsys.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("wal: open %s: %w", name, err)
	}
	defer f.Close()
	b = make([]byte, size+1)
	n, _ := readFull(f, b)
	return b[:n], true, nil
}

// readFull reads into b until it is full or the file ends.
func readFull(f vfs.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := f.Read(b[n:])
		n += k
		if err != nil || k == 0 {
			return n, err
		}
	}
	return n, nil
}

// writeManifest makes m the log's manifest, durably, and then the log's
// expectation (expect.go), with pending saying a pending file is in use.
func writeManifest(fsys vfs.FS, dir string, m manifest, pending bool) error {
	name := filepath.Join(dir, ManifestName)
	if err := vfs.WriteFile(fsys, name+tempSuffix, name, m.encode()); err != nil {
		return fmt.Errorf("wal: write segment manifest: %w", err)
	}
	if err := fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("wal: sync log directory %s: %w", dir, err)
	}
	return writeExpectation(fsys, dir, logExpectation{m: m, pending: pending})
}

// manifestOf is the manifest of segs, which must not be empty.
func manifestOf(segs []segmentRef) manifest {
	return manifest{first: segs[0].num, last: segs[len(segs)-1].num}
}

// missingSegments returns the segments m names that segs lacks at either
// end: before its first segment and after its last. A segment missing
// between two others is a gap in the positions, which the reader finds and
// names (ErrGap), and which a salvage marks lost, leaving the numbers
// with a hole that the manifest's range could not describe.
func missingSegments(m manifest, segs []segmentRef) []uint64 {
	var out []uint64
	if len(segs) == 0 {
		for n := m.first; n <= m.last; n++ {
			out = append(out, n)
		}
		return out
	}
	for n := m.first; n < segs[0].num && n <= m.last; n++ {
		out = append(out, n)
	}
	for n := max(segs[len(segs)-1].num+1, m.first); n <= m.last; n++ {
		out = append(out, n)
	}
	return out
}

// missingError is the CorruptionError of a log in dir that lacks the
// segments missing, which its manifest m names.
func missingError(dir string, m manifest, segs []segmentRef, missing []uint64) *CorruptionError {
	names := make([]string, len(missing))
	for i, n := range missing {
		names[i] = segmentName(n)
	}
	list := strings.Join(names, ", ")
	if len(names) > 4 {
		list = fmt.Sprintf("%s, %s, ... %s (%d files)", names[0], names[1], names[len(names)-1], len(names))
	}
	return &CorruptionError{
		Segment: filepath.Join(dir, names[0]),
		Last:    len(segs) == 0 || missing[len(missing)-1] > segs[len(segs)-1].num,
		Err: fmt.Errorf("%w: %s (the log's manifest, %s, says segments %s to %s must exist; %d segment files are present): "+
			"the records they held are lost unless the files are put back",
			ErrSegmentMissing, list, ManifestName, segmentName(m.first), segmentName(m.last), len(segs)),
	}
}
