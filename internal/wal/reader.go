package wal

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/rlrec/rlrec/internal/vfs"
)

// Pos is the position of a record in a log; see the package doc.
type Pos uint64

type segmentRef struct {
	num  uint64
	path string
}

// listSegments returns the segment files of dir in order. Other files are
// ignored. A missing dir holds no segments.
func listSegments(fsys vfs.FS, dir string) ([]segmentRef, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("wal: list segments in %s: %w", dir, err)
	}
	var segs []segmentRef
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if n, ok := parseSegmentName(e.Name()); ok {
			segs = append(segs, segmentRef{num: n, path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(segs, func(a, b segmentRef) int {
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	})
	return segs, nil
}

// readFile reads a whole file into buf (reused when big enough). It never
// allocates more than the file's size.
func readFile(fsys vfs.FS, name string, buf []byte) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return buf, fmt.Errorf("wal: open segment: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return buf, fmt.Errorf("wal: stat segment %s: %w", name, err)
	}
	size := st.Size()
	if size > int64(^uint(0)>>1) {
		return buf, fmt.Errorf("wal: segment %s: size %d too large to read", name, size)
	}
	if int64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return buf, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return buf[:0], fmt.Errorf("wal: read segment %s: %w", name, err)
}

// Reader reads the records of a log in order. It reads one segment file
// at a time into memory (a buffer as large as the largest segment).
// A Reader is not safe for concurrent use.
type Reader struct {
	fsys vfs.FS
	segs []segmentRef
	idx  int // index in segs of the loaded segment, -1 before the first

	buf    []byte // the loaded segment's bytes
	ver    uint32 // the loaded segment's format version
	off    int    // offset of the next record in buf
	loaded bool
	// prevLen is the size of the segment before the loaded one.
	prevLen int
	// starts holds, for each segment loaded, the position the records
	// before it say it must start at (0 for the first: any).
	starts []Pos

	next    Pos   // position of the next record
	pos     Pos   // position of the current record
	lost    int64 // positions a salvage marked lost, read so far (the crash tests check them)
	rec     []byte
	skipTo  Pos
	verify  bool                  // check framing and CRCs only, do not decode payloads
	keep    func(first byte) bool // see Filter
	lastOff int                   // offset of the current record in its segment
	dec     decoder
	err     error
}

// NewReader returns a Reader of the log in dir, from its first record.
func NewReader(fsys vfs.FS, dir string) (*Reader, error) {
	segs, err := listSegments(fsys, dir)
	if err != nil {
		return nil, err
	}
	return &Reader{fsys: fsys, segs: segs, idx: -1}, nil
}

// NewReaderFrom returns a Reader of the log in dir whose first record is
// the one at from (or the first after it that exists). Whole segments
// before from are not read.
func NewReaderFrom(fsys vfs.FS, dir string, from Pos) (*Reader, error) {
	r, err := NewReader(fsys, dir)
	if err != nil {
		return nil, err
	}
	r.skipTo = from
	// Start at the last segment whose first Pos is <= from; segments are
	// few, so read their headers in turn.
	var hdr [segmentHeaderSize]byte
	start := 0
	for i := 1; i < len(r.segs); i++ {
		_, first, err := readHeader(fsys, r.segs[i].path, hdr[:])
		if err != nil || first > from {
			break // let Next report a damaged header
		}
		start = i
	}
	r.segs = r.segs[start:]
	return r, nil
}

func readHeader(fsys vfs.FS, name string, hdr []byte) (uint32, Pos, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	n, err := f.ReadAt(hdr, 0)
	if n < len(hdr) {
		return 0, 0, fmt.Errorf("%w: %v", ErrTruncated, err)
	}
	return parseSegmentHeader(hdr)
}

func (r *Reader) corrupt(off int, err error) bool {
	r.err = &CorruptionError{Segment: r.segs[r.idx].path, Offset: int64(off), Last: r.idx == len(r.segs)-1, Err: err}
	r.rec = nil
	return false
}

// damage reports the record at off in the loaded segment, which could
// not be read, and tells a torn tail from corruption. whole is true when
// the record's checksum is right (it is out of sequence or its payload
// does not decode): no crash leaves that.
func (r *Reader) damage(off int, err error, whole bool) bool {
	r.corrupt(off, err)
	ce := r.err.(*CorruptionError)
	ce.Torn = ce.Last && !whole && off >= segmentHeaderSize && !durableAfter(r.buf, off, r.ver, r.next)
	return false
}

// durableAfter reports whether a record after off in b, a segment of the
// given version, shows that the record at pos, which should be at off,
// had been durable: a formatV2 record framed once pos was durable, or, in
// a formatV1 segment (which does not say), any intact record at all.
func durableAfter(b []byte, off int, version uint32, pos Pos) bool {
	for o := off + 1; o+headerSize(version) <= len(b); o++ {
		f, bad := checkRecord(b, o, version)
		if bad == recordOK && (version == formatV1 || f.durable >= pos) {
			return true
		}
	}
	return false
}

// sequenceError describes a formatV2 record at pos where next was due.
func sequenceError(pos, next Pos) error {
	if pos < next {
		return fmt.Errorf("%w: a record at position %d again, after %d", ErrSequence, pos, next-1)
	}
	return fmt.Errorf("%w: a record at position %d where %d is due: positions %d to %d are missing", ErrSequence, pos, next, next, pos-1)
}

// gap reports a loaded segment whose first position first does not
// follow the records before it. Records are missing when it is later: a
// sealed segment ended early, or a whole segment is missing, and the
// damage is there, not in the loaded segment (which may be the last and
// must not be taken for a torn tail). When it is earlier, the loaded
// segment's header claims positions already read.
func (r *Reader) gap(first Pos) bool {
	prev := r.segs[r.idx-1]
	r.rec = nil
	switch {
	case first < r.next:
		return r.corrupt(0, fmt.Errorf("%w: segment starts at position %d, but the one before it ends at %d", ErrGap, first, r.next-1))
	case r.segs[r.idx].num != prev.num+1:
		missing := filepath.Join(filepath.Dir(prev.path), segmentName(prev.num+1))
		r.err = &CorruptionError{Segment: missing, Offset: 0, Err: fmt.Errorf("%w: segment is missing: positions %d to %d are in no segment", ErrGap, r.next, first-1)}
	default:
		r.err = &CorruptionError{Segment: prev.path, Offset: int64(r.prevLen), Err: fmt.Errorf("%w: segment ends before position %d, but the next one starts at %d", ErrGap, r.next, first)}
	}
	return false
}

// Filter makes Next return only the records whose payload's first byte
// keep accepts (an empty payload is never returned). Records it rejects
// are checked (framing, checksum) but, where the first byte can be read
// without decompressing (uncompressed and S2 payloads), not decompressed:
// a reader that wants a few kinds of small records skips the rest at the
// cost of the checksum. Call it before the first Next.
func (r *Reader) Filter(keep func(first byte) bool) { r.keep = keep }

// Next advances to the next record and reports whether there is one. It
// returns false at the end of the log or on an error (see Err).
func (r *Reader) Next() bool {
	for r.err == nil {
		if !r.loaded {
			if r.idx+1 >= len(r.segs) {
				r.rec = nil
				return false
			}
			r.idx++
			r.prevLen = len(r.buf)
			buf, err := readFile(r.fsys, r.segs[r.idx].path, r.buf)
			r.buf = buf
			if err != nil {
				r.err = err
				return false
			}
			if r.idx == 0 {
				r.starts = append(r.starts, 0)
			} else {
				r.starts = append(r.starts, r.next)
			}
			ver, first, err := parseSegmentHeader(r.buf)
			if err != nil {
				return r.damage(0, err, false)
			}
			if r.idx > 0 && first != r.next {
				return r.gap(first)
			}
			r.ver = ver
			r.next = first
			r.off = segmentHeaderSize
			r.loaded = true
		}
		if r.off == len(r.buf) {
			r.loaded = false
			continue
		}
		f, err := parseRecord(r.buf, r.off, r.ver)
		if err != nil {
			return r.damage(r.off, err, false)
		}
		if r.ver >= formatV2 && f.pos != r.next {
			return r.damage(r.off, sequenceError(f.pos, r.next), true)
		}
		r.lastOff = r.off
		r.off = f.end
		switch f.typ {
		case kindLost:
			r.next += Pos(f.lost)
			r.lost += int64(f.lost)
			continue
		case kindMark:
			continue
		}
		r.pos = r.next
		r.next++
		if r.pos < r.skipTo {
			continue
		}
		body := r.buf[f.start:f.end]
		if r.verify {
			r.rec = body
			return true
		}
		if r.keep != nil {
			if b, ok := r.dec.first(f.typ, body); ok && !r.keep(b) {
				continue
			}
		}
		rec, err := r.dec.decode(f.typ, body)
		if err != nil {
			return r.damage(r.lastOff, err, true)
		}
		if r.keep != nil && (len(rec) == 0 || !r.keep(rec[0])) {
			continue
		}
		r.rec = rec
		return true
	}
	return false
}

// Record returns the current record's payload, valid until the next call
// to Next.
func (r *Reader) Record() []byte { return r.rec }

// Pos returns the current record's position.
func (r *Reader) Pos() Pos { return r.pos }

// Err returns the error that stopped Next, or nil at a clean end. Damage
// is a *CorruptionError.
func (r *Reader) Err() error { return r.err }

// Close releases the Reader's buffers.
func (r *Reader) Close() error {
	r.dec.close()
	r.buf, r.rec = nil, nil
	return nil
}
