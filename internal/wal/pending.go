package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/rlrec/rlrec/internal/vfs"
)

// The pending file. On a file system that can map a file shared with the
// kernel's page cache (vfs.Mapper: the OS on Linux), Append copies each
// record into a file mapped into the process, PendingName in the log
// directory, instead of into process memory. A store into that mapping is
// in the page cache at once, without a system call, so a record is in the
// kernel when Append returns: it survives the death of the process
// (SIGKILL, a panic) whatever the sync policy, as a record already written
// to a segment does. The pending file is never fsynced: a power cut loses
// what it held, as it loses a segment's unsynced records.
//
// Layout (little-endian, but for the four state words, which are stored
// atomically in native byte order: the file is only read back on the
// machine that wrote it, in the same boot):
//
//	offset 0     magic "rlrecPND" (8 bytes)
//	offset 8     version uint32 = 1
//	offset 16    half size H uint64
//	offset 24    epoch length uint32, then at 32 the epoch (up to 64 bytes):
//	             the kernel's boot id when the file was set up
//	offset 128   half 0: first Pos uint64, committed length uint64
//	offset 144   half 1: first Pos uint64, committed length uint64
//	offset 4096  half 0's H bytes, then half 1's H bytes
//
// A half holds records back to back as Append framed them: the 25-byte
// record header with only the payload length filled in (at offset 4),
// then the payload. The first record of a half is at the half's first
// Pos, the next at the one after, and so on. Append stores a record, then
// the half's new committed length (an atomic store, after the record's
// bytes); recovery reads only committed bytes, so a process killed in the
// middle of a copy leaves nothing half-read. The writer goroutine takes
// one half as a batch while Append fills the other, and sets the batch's
// committed length to 0 once the batch is written to its segment (in the
// page cache too). A half whose length is not 0 may hold records that are
// also in a segment; recovery skips those by their positions.
//
// Repair restores the records a dead process left: when the file's epoch
// is the current boot id, every committed record at or after the log's
// next position, in order and without a gap, is appended to the log and
// synced, then the halves are emptied. A file of an earlier boot is
// ignored (its contents may be torn, and power-cut durability is what the
// sync policy says). Values of this layout are part of the on-disk format:
// do not change them.
const (
	// PendingName is the pending file's name in the log directory.
	PendingName = "pending"

	pendingMagic      = "rlrecPND"
	pendingVersion    = 1
	pendingHeaderSize = 4096
	pendOffVersion    = 8
	pendOffHalf       = 16
	pendOffEpochLen   = 24
	pendOffEpoch      = 32
	pendMaxEpoch      = 64
	pendOffState      = 128 // half i's first Pos at 128+16i, its length at 136+16i
)

// pendingFile is the mapped pending file.
type pendingFile struct {
	m    vfs.Mapping
	b    []byte
	half int
}

func (p *pendingFile) word(off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&p.b[off]))
}

// area returns half i's bytes.
func (p *pendingFile) area(i int) []byte {
	start := pendingHeaderSize + i*p.half
	return p.b[start : start+p.half : start+p.half]
}

// start empties half i and makes its first record's position first.
func (p *pendingFile) start(i int, first Pos) {
	atomic.StoreUint64(p.word(pendOffState+16*i+8), 0)
	atomic.StoreUint64(p.word(pendOffState+16*i), uint64(first))
}

// commit sets half i's committed length, after its records' bytes.
func (p *pendingFile) commit(i, n int) {
	atomic.StoreUint64(p.word(pendOffState+16*i+8), uint64(n))
}

func (p *pendingFile) state(i int) (first Pos, n int) {
	return Pos(atomic.LoadUint64(p.word(pendOffState + 16*i))), int(atomic.LoadUint64(p.word(pendOffState + 16*i + 8)))
}

func (p *pendingFile) close() error {
	if p == nil || p.m == nil {
		return nil
	}
	err := p.m.Close()
	p.m, p.b = nil, nil
	return err
}

// mapPending maps the pending file of dir, creating it or resizing it for
// halves of half bytes, and sets up an empty one under epoch. It returns
// nil, nil when fsys cannot map files.
func mapPending(fsys vfs.FS, dir string, half int) (*pendingFile, error) {
	mp, ok := fsys.(vfs.Mapper)
	if !ok {
		return nil, nil
	}
	epoch, err := mp.Epoch()
	if err != nil {
		return nil, fmt.Errorf("wal: pending file: %w", err)
	}
	if len(epoch) > pendMaxEpoch {
		epoch = epoch[:pendMaxEpoch]
	}
	half = (half + 4095) &^ 4095
	size := int64(pendingHeaderSize + 2*half)
	path := filepath.Join(dir, PendingName)
	if st, err := fsys.Stat(path); err != nil || st.Size() != size {
		// A new file, or one sized for another MaxPending: start afresh.
		// It needs no fsync: what it holds matters only until a restart.
		f, err := fsys.Create(path)
		if err != nil {
			return nil, fmt.Errorf("wal: create pending file: %w", err)
		}
		err = f.Truncate(size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, fmt.Errorf("wal: size pending file %s: %w", path, err)
		}
	}
	m, err := mp.MapShared(path, size)
	if err != nil {
		return nil, fmt.Errorf("wal: pending file: %w", err)
	}
	p := &pendingFile{m: m, b: m.Bytes(), half: half}
	p.start(0, 0)
	p.start(1, 0)
	copy(p.b, pendingMagic)
	binary.LittleEndian.PutUint32(p.b[pendOffVersion:], pendingVersion)
	binary.LittleEndian.PutUint64(p.b[pendOffHalf:], uint64(half))
	binary.LittleEndian.PutUint32(p.b[pendOffEpochLen:], uint32(len(epoch)))
	copy(p.b[pendOffEpoch:pendOffEpoch+pendMaxEpoch], epoch)
	return p, nil
}

// pendingRecords returns the payloads of the committed records of dir's
// pending file from position next on, in order, stopping at a gap. It
// returns nil when there is no pending file of the current boot.
func pendingRecords(fsys vfs.FS, dir string, next Pos, logger *slog.Logger) (*pendingFile, [][]byte, error) {
	mp, ok := fsys.(vfs.Mapper)
	if !ok {
		return nil, nil, nil
	}
	path := filepath.Join(dir, PendingName)
	st, err := fsys.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	} else if err != nil {
		return nil, nil, fmt.Errorf("wal: stat pending file: %w", err)
	}
	if st.Size() < pendingHeaderSize {
		return nil, nil, nil // created, not yet set up
	}
	m, err := mp.MapShared(path, st.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("wal: read pending file: %w", err)
	}
	p := &pendingFile{m: m, b: m.Bytes()}
	b := p.b
	half := int(binary.LittleEndian.Uint64(b[pendOffHalf:]))
	elen := int(binary.LittleEndian.Uint32(b[pendOffEpochLen:]))
	if string(b[:8]) != pendingMagic || binary.LittleEndian.Uint32(b[pendOffVersion:]) != pendingVersion ||
		half <= 0 || int64(half) > st.Size() || int64(pendingHeaderSize)+2*int64(half) != st.Size() || elen > pendMaxEpoch {
		logger.Warn("wal: ignoring a pending file that is not one this build writes", "path", path)
		return p, nil, nil
	}
	p.half = half
	epoch, err := mp.Epoch()
	if err != nil {
		p.close()
		return nil, nil, fmt.Errorf("wal: pending file: %w", err)
	}
	if len(epoch) > pendMaxEpoch {
		epoch = epoch[:pendMaxEpoch]
	}
	if string(b[pendOffEpoch:pendOffEpoch+elen]) != epoch {
		// Written before the machine restarted: the page cache it lived
		// in is gone, and what reached the disk may be torn.
		if f0, n0 := p.state(0); n0 > 0 || f0 > 0 {
			logger.Info("wal: ignoring the pending file of a previous boot: power-cut durability is what the sync policy gave", "path", path)
		}
		return p, nil, nil
	}
	type span struct {
		first Pos
		data  []byte
	}
	var spans []span
	for i := range 2 {
		first, n := p.state(i)
		if n <= 0 || first == 0 {
			continue
		}
		if n > half {
			logger.Warn("wal: pending file half longer than its size; ignoring it", "path", path, "half", i, "length", n)
			continue
		}
		spans = append(spans, span{first, p.area(i)[:n]})
	}
	slices.SortFunc(spans, func(a, b span) int {
		switch {
		case a.first < b.first:
			return -1
		case a.first > b.first:
			return 1
		}
		return 0
	})
	var recs [][]byte
	want := next
	for _, s := range spans {
		pos := s.first
		for off := 0; off < len(s.data); pos++ {
			if len(s.data)-off < recordHeaderSize {
				logger.Warn("wal: pending file half ends inside a record header", "path", path, "position", pos)
				break
			}
			n := int(binary.LittleEndian.Uint32(s.data[off+4:]))
			end := off + recordHeaderSize + n
			if n > MaxRecordSize || end > len(s.data) {
				logger.Warn("wal: pending file record runs past its half", "path", path, "position", pos)
				break
			}
			switch {
			case pos < want:
			case pos == want:
				recs = append(recs, s.data[off+recordHeaderSize:end])
				want++
			default:
				logger.Warn("wal: pending records do not continue the log; not restored", "path", path, "log_next", want, "pending_from", pos)
				return p, recs, nil
			}
			off = end
		}
	}
	return p, recs, nil
}

// restorePending appends to the log in dir the records a dead process
// left in its pending file (see PendingName), syncs them and empties the
// file. rep is the log's state after its repair; it is updated.
func restorePending(fsys vfs.FS, dir string, rep *RepairReport, logger *slog.Logger) error {
	p, recs, err := pendingRecords(fsys, dir, rep.NextPos, logger)
	if err != nil {
		return err
	}
	if p == nil {
		return nil
	}
	defer p.close()
	if len(recs) > 0 {
		opts, err := Options{Logger: logger}.withDefaults()
		if err != nil {
			return err
		}
		l, err := openRepaired(fsys, dir, opts, nopCloser{}, *rep, false)
		if err != nil {
			return fmt.Errorf("wal: restore pending records: %w", err)
		}
		for _, r := range recs {
			if _, err := l.Append(r); err != nil {
				l.Close()
				return fmt.Errorf("wal: restore pending records: %w", err)
			}
		}
		if err := l.Sync(context.Background()); err != nil {
			l.Close()
			return fmt.Errorf("wal: restore pending records: %w", err)
		}
		if err := l.Close(); err != nil {
			return fmt.Errorf("wal: restore pending records: %w", err)
		}
		n := int64(len(recs))
		rep.Records += n
		rep.NextPos += Pos(n)
		rep.Restored = n
		segs, err := listSegments(fsys, dir)
		if err != nil {
			return err
		}
		rep.Segments = len(segs)
		logger.Info("wal: restored records a process that died had appended but not yet written", "records", n, "next_position", rep.NextPos)
	}
	// Durable in the segments now: the pending copies are not needed.
	if p.half > 0 {
		p.start(0, 0)
		p.start(1, 0)
	}
	return nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
