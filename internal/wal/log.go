package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// Options configure a Log. The zero value gives the defaults.
type Options struct {
	// SegmentSize is the size at which a new segment is started
	// (default 64 MiB).
	SegmentSize int64
	// SyncInterval is how often appended records are written and fsynced
	// when nobody waits for them (default 100 ms).
	SyncInterval time.Duration
	// MaxPending bounds the bytes appended but not yet written; Append
	// blocks while it is reached (back-pressure). Default 16 MiB. A single
	// record larger than the bound is accepted when nothing is pending.
	MaxPending int
	// FlushSize wakes the writer to write (without fsync) once this many
	// bytes are pending (default 1 MiB).
	FlushSize int
	// Compression is the payload codec (default S2).
	Compression Compression
	// MinCompressSize is the smallest payload that is compressed
	// (default 512 bytes).
	MinCompressSize int
	// Salvage lets Open repair a corrupt log (see Repair), dropping the
	// damaged records and keeping every intact one, instead of refusing.
	Salvage bool
	// Logger receives repair reports (nil: silent).
	Logger *slog.Logger
}

func (o Options) withDefaults() (Options, error) {
	if o.SegmentSize == 0 {
		o.SegmentSize = 64 << 20
	}
	if o.SyncInterval == 0 {
		o.SyncInterval = 100 * time.Millisecond
	}
	if o.MaxPending == 0 {
		o.MaxPending = 16 << 20
	}
	if o.FlushSize == 0 {
		o.FlushSize = 1 << 20
	}
	if o.Compression == CompressionDefault {
		o.Compression = CompressionS2
	}
	if o.MinCompressSize == 0 {
		o.MinCompressSize = 512
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case o.SegmentSize < segmentHeaderSize+recordHeaderSize:
		return o, fmt.Errorf("wal: SegmentSize %d too small", o.SegmentSize)
	case o.SyncInterval < 0:
		return o, fmt.Errorf("wal: negative SyncInterval %v", o.SyncInterval)
	case o.MaxPending < 0 || o.FlushSize < 0 || o.MinCompressSize < 0:
		return o, fmt.Errorf("wal: negative MaxPending, FlushSize or MinCompressSize")
	case o.Compression < CompressionDefault || o.Compression > CompressionZstd:
		return o, fmt.Errorf("wal: unknown %v", o.Compression)
	}
	return o, nil
}

// lockName is the lock file Open holds in the log directory.
const lockName = "LOCK"

// Log appends records to a log directory. Its methods are safe for
// concurrent use.
type Log struct {
	fsys vfs.FS
	dir  string
	opts Options
	lock io.Closer
	rep  RepairReport

	mu       sync.Mutex
	cur      []byte // records appended, not yet taken by the writer, framed but for CRC and type
	spare    []byte // the writer's previous batch buffer, for reuse
	pending  int    // bytes in cur and in the batch being written
	last     Pos    // last appended
	written  Pos    // last handed to the file system
	synced   Pos    // last durable
	syncWant Pos    // the highest position a waiter asked to be synced
	closed   bool
	stopped  bool          // the writer goroutine has exited
	err      error         // sticky write or sync failure
	progress chan struct{} // closed and replaced after every batch

	kick    chan struct{}
	closing chan struct{}
	done    chan struct{}

	// Owned by the writer goroutine.
	seg      vfs.File
	segNum   uint64
	segSize  int64
	segEmpty bool // no record in seg yet
	dirty    bool // written since the last fsync
	durable  Pos  // last record known durable, stored in each record framed
	mark     []byte
	// markUnsynced is set while the last thing written is a mark, not
	// synced yet.
	markUnsynced bool
	enc          *encoder

	segMu sync.Mutex
	segs  []segmentInfo // every segment, oldest first; the last is active

	// pend, when set, is the mapped pending file (pending.go): cur is a
	// view of its half curHalf, or a heap buffer (curHalf -1) holding one
	// record too large for a half. batchHalf is the half the writer is
	// writing (-1: none).
	pend      *pendingFile
	curHalf   int
	batchHalf int
	// out is the writer's buffer of framed records, a chunk of a batch
	// (writeBatch).
	out []byte
}

type segmentInfo struct {
	path  string
	num   uint64
	first Pos
}

// Open opens the log in dir for appending, creating dir if needed. It
// takes a lock file in dir that excludes other writers, repairs the log
// (see Repair; the report is in Recovered and logged to Options.Logger)
// and continues after its last intact record, in the last segment while
// it has room.
func Open(fsys vfs.FS, dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := mkdirAllDurable(fsys, dir); err != nil {
		return nil, err
	}
	lock, err := fsys.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("wal: open %s: %w", dir, err)
	}
	l, err := open(fsys, dir, opts, lock)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return l, nil
}

// mkdirAllDurable creates dir and its missing parents and fsyncs the
// parent of every directory it created, so that the log directory itself
// survives a crash.
func mkdirAllDurable(fsys vfs.FS, dir string) error {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := fsys.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("wal: stat %s: %w", d, err)
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(created) == 0 {
		return nil
	}
	if err := fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("wal: create log directory: %w", err)
	}
	for _, d := range created {
		if err := fsys.SyncDir(filepath.Dir(d)); err != nil {
			return fmt.Errorf("wal: sync directory %s after creating %s: %w", filepath.Dir(d), d, err)
		}
	}
	return nil
}

func open(fsys vfs.FS, dir string, opts Options, lock io.Closer) (*Log, error) {
	if err := removeTemps(fsys, dir); err != nil {
		return nil, err
	}
	rep, err := Repair(fsys, dir, opts.Salvage, opts.Logger)
	if err != nil {
		return nil, err
	}
	return openRepaired(fsys, dir, opts, lock, rep, true)
}

// openRepaired opens the repaired log in dir for appending; mapped asks
// for the pending file where the file system can map it.
func openRepaired(fsys vfs.FS, dir string, opts Options, lock io.Closer, rep RepairReport, mapped bool) (*Log, error) {
	enc, err := newEncoder(opts.Compression, opts.MinCompressSize)
	if err != nil {
		return nil, err
	}
	l := &Log{
		fsys: fsys, dir: dir, opts: opts, lock: lock, rep: rep, enc: enc,
		progress: make(chan struct{}),
		kick:     make(chan struct{}, 1),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
		last:     rep.NextPos - 1,
		curHalf:  -1, batchHalf: -1,
	}
	l.written, l.synced = l.last, l.last

	segs, err := listSegments(fsys, dir)
	if err != nil {
		return nil, err
	}
	var hdr [segmentHeaderSize]byte
	var lastVersion uint32
	for _, s := range segs {
		v, first, err := readHeader(fsys, s.path, hdr[:])
		if err != nil {
			return nil, fmt.Errorf("wal: read header of %s: %w", s.path, err)
		}
		l.segs = append(l.segs, segmentInfo{path: s.path, num: s.num, first: first})
		lastVersion = v
	}
	if len(segs) > 0 {
		// A log of an earlier version has no manifest: from now on it
		// names its segments.
		if m, ok, err := readManifest(fsys, dir); err != nil || !ok || m != manifestOf(segs) {
			if err := writeManifest(fsys, dir, manifestOf(segs), false); err != nil {
				return nil, err
			}
		}
	}
	if n := len(segs); n > 0 {
		// The last segment may hold records written but never synced by
		// the previous writer: sync them before new records say they are
		// durable.
		s := segs[n-1]
		f, err := fsys.OpenAppend(s.path)
		if err != nil {
			return nil, fmt.Errorf("wal: reopen last segment: %w", err)
		}
		st, err := f.Stat()
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("wal: sync last segment %s: %w", s.path, err)
		}
		l.segNum = s.num
		// Records are appended to it in its own format only.
		if st.Size() < opts.SegmentSize && lastVersion == formatVersion {
			l.seg, l.segSize, l.segEmpty = f, st.Size(), st.Size() == segmentHeaderSize
		} else if err := f.Close(); err != nil {
			return nil, fmt.Errorf("wal: close last segment %s: %w", s.path, err)
		}
	}
	l.durable = l.last
	if l.seg == nil {
		if err := l.newSegment(rep.NextPos); err != nil {
			return nil, err
		}
	}
	if mapped {
		p, err := mapPending(fsys, dir, opts.MaxPending)
		if err != nil {
			// The log works without it, but a record is then in the
			// kernel only once the writer has written it.
			opts.Logger.Warn("wal: no pending file: a process crash can lose records appended in the last moments before it", "dir", dir, "err", err)
		} else if p != nil {
			l.pend, l.curHalf = p, 0
			p.start(0, l.last+1)
			l.cur = p.area(0)[:0]
		}
	}
	// The log expects its segments, and the pending file once it is in
	// use (expect.go).
	l.segMu.Lock()
	e := logExpectation{m: manifest{first: l.segs[0].num, last: l.segs[len(l.segs)-1].num}, pending: l.pend != nil}
	l.segMu.Unlock()
	if err := writeExpectation(fsys, dir, e); err != nil {
		l.pend.close()
		if l.seg != nil {
			l.seg.Close()
		}
		return nil, err
	}
	go l.run()
	return l, nil
}

// Mapped reports whether appended records go to the pending file, which
// makes them survive the death of the process as soon as Append returns.
func (l *Log) Mapped() bool { return l.pend != nil }

// Recovered returns what Open's repair found and cut.
func (l *Log) Recovered() RepairReport { return l.rep }

// Append copies payload into the log's buffer and returns its position. It
// does no disk I/O: a background goroutine writes and fsyncs in groups
// (see WaitSynced). It blocks only while Options.MaxPending bytes wait to
// be written. After a write or fsync failure it returns an error wrapping
// ErrFailed and the cause.
func (l *Log) Append(payload []byte) (Pos, error) {
	return l.AppendContext(context.Background(), payload)
}

// AppendContext is Append, but gives up waiting for room once ctx is done
// (returning its error, with nothing appended).
func (l *Log) AppendContext(ctx context.Context, payload []byte) (Pos, error) {
	if len(payload) > MaxRecordSize {
		return 0, fmt.Errorf("wal: append %d bytes: %w (limit %d)", len(payload), ErrTooLarge, MaxRecordSize)
	}
	need := recordHeaderSize + len(payload)
	l.mu.Lock()
	for {
		if l.err != nil {
			err := l.err
			l.mu.Unlock()
			return 0, fmt.Errorf("wal: append: %w: %w", ErrFailed, err)
		}
		if l.closed {
			l.mu.Unlock()
			return 0, ErrClosed
		}
		if l.pending == 0 || l.pending+need <= l.opts.MaxPending {
			break
		}
		ch := l.progress
		l.mu.Unlock()
		l.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, fmt.Errorf("wal: append: wait for room: %w", ctx.Err())
		}
		l.mu.Lock()
	}
	// The record goes in framed but for its CRC and type, which the writer
	// fills in (it may compress the payload first).
	off := len(l.cur)
	if cap(l.cur)-off < need {
		if l.pend != nil {
			// Only a record larger than a half, with nothing pending
			// (MaxPending bounds a half's records otherwise): it goes to
			// the heap, and Append returns once it is written.
			l.curHalf = -1
			l.cur = make([]byte, 0, need)
			off = 0
		} else {
			l.cur = grow(l.cur, need, l.opts.MaxPending)
		}
	}
	l.cur = l.cur[:off+need]
	binary.LittleEndian.PutUint32(l.cur[off+4:], uint32(len(payload)))
	copy(l.cur[off+recordHeaderSize:], payload)
	if l.pend != nil && l.curHalf >= 0 {
		l.pend.commit(l.curHalf, len(l.cur))
	}
	l.pending += need
	l.last++
	pos := l.last
	full := len(l.cur) >= l.opts.FlushSize
	unmapped := l.pend != nil && l.curHalf < 0
	l.mu.Unlock()
	if unmapped {
		return pos, l.waitWritten(pos)
	}
	if full {
		l.wake()
	}
	return pos, nil
}

// waitWritten waits until the record at pos is written to its segment.
func (l *Log) waitWritten(pos Pos) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.written < pos {
		if l.err != nil {
			return fmt.Errorf("wal: append: %w: %w", ErrFailed, l.err)
		}
		if l.stopped {
			return ErrClosed
		}
		ch := l.progress
		l.mu.Unlock()
		l.wake()
		<-ch
		l.mu.Lock()
	}
	return nil
}

// grow returns b with room for need more bytes, doubling its capacity up
// to limit so that a buffer reaches its working size in a few steps.
func grow(b []byte, need, limit int) []byte {
	c := max(2*cap(b), 64<<10)
	c = min(c, max(limit, len(b)+need))
	c = max(c, len(b)+need)
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

func (l *Log) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// WaitSynced blocks until the record at pos is durable, the log fails, or
// ctx is done. It asks for an fsync at once rather than waiting for the
// next SyncInterval.
func (l *Log) WaitSynced(ctx context.Context, pos Pos) error {
	l.mu.Lock()
	for l.synced < pos {
		if l.err != nil {
			err := l.err
			l.mu.Unlock()
			return fmt.Errorf("wal: wait for position %d: %w: %w", pos, ErrFailed, err)
		}
		if pos > l.last {
			last := l.last
			l.mu.Unlock()
			return fmt.Errorf("wal: wait for position %d: only %d records appended", pos, last)
		}
		if l.stopped {
			l.mu.Unlock()
			return fmt.Errorf("wal: wait for position %d: %w", pos, ErrClosed)
		}
		l.syncWant = max(l.syncWant, pos)
		ch := l.progress
		l.mu.Unlock()
		l.wake()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wal: wait for position %d: %w", pos, ctx.Err())
		}
		l.mu.Lock()
	}
	l.mu.Unlock()
	return nil
}

// Sync makes every record appended so far durable.
func (l *Log) Sync(ctx context.Context) error {
	l.mu.Lock()
	last, err := l.last, l.err
	l.mu.Unlock()
	if err != nil {
		return fmt.Errorf("wal: sync: %w: %w", ErrFailed, err)
	}
	return l.WaitSynced(ctx, last)
}

// LastPos returns the position of the last appended record (0: none).
func (l *Log) LastPos() Pos {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// SyncedPos returns the position of the last durable record (0: none).
func (l *Log) SyncedPos() Pos {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced
}

// Close writes and fsyncs everything appended, closes the files and
// releases the lock. It returns the log's failure, if any; closing a
// closed Log returns ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.closed = true
	l.mu.Unlock()
	close(l.closing)
	<-l.done
	var errs []error
	l.mu.Lock()
	if l.err != nil {
		errs = append(errs, fmt.Errorf("wal: close: %w: %w", ErrFailed, l.err))
	}
	l.mu.Unlock()
	if l.seg != nil {
		if err := l.seg.Close(); err != nil && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("wal: close segment: %w", err))
		}
	}
	if l.enc.zstd != nil {
		l.enc.zstd.Close()
	}
	if err := l.pend.close(); err != nil && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("wal: unmap pending file: %w", err))
	}
	if err := l.lock.Close(); err != nil {
		errs = append(errs, fmt.Errorf("wal: release lock: %w", err))
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

// RemoveBefore removes the sealed segments whose records all lie before
// pos, then fsyncs the directory. The active segment is never removed.
func (l *Log) RemoveBefore(pos Pos) error {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	k := 0
	for k+1 < len(l.segs) && l.segs[k+1].first <= pos {
		k++
	}
	if k == 0 {
		return nil
	}
	// The manifest stops naming them before they go.
	if err := writeManifest(l.fsys, l.dir, manifest{first: l.segs[k].num, last: l.segs[len(l.segs)-1].num}, l.pend != nil); err != nil {
		return err
	}
	removed := 0
	for len(l.segs) > 1 && l.segs[1].first <= pos {
		if err := l.fsys.Remove(l.segs[0].path); err != nil {
			return fmt.Errorf("wal: remove segment before %d: %w", pos, err)
		}
		l.segs = l.segs[1:]
		removed++
	}
	if removed == 0 {
		return nil
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("wal: sync log directory %s after removing segments: %w", l.dir, err)
	}
	return nil
}

// ActiveFirst returns the position of the first record of the segment
// being appended to, or 0 before any segment exists: records before it
// are in sealed segments, which RemoveBefore can remove.
func (l *Log) ActiveFirst() Pos {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[len(l.segs)-1].first
}

// Segments returns the number of segment files the log holds.
func (l *Log) Segments() int {
	l.segMu.Lock()
	defer l.segMu.Unlock()
	return len(l.segs)
}
