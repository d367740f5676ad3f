package wal

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// run is the writer goroutine: it takes the appended records in batches,
// frames and compresses them, writes them and fsyncs when a waiter asked,
// every SyncInterval and at Close.
func (l *Log) run() {
	defer close(l.done)
	defer func() {
		l.mu.Lock()
		l.stopped = true
		close(l.progress)
		l.progress = make(chan struct{})
		l.mu.Unlock()
	}()
	t := time.NewTicker(l.opts.SyncInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.flush(true)
		case <-l.kick:
			l.flush(false)
		case <-l.closing:
			l.flush(true)
			l.syncMark()
			return
		}
	}
}

func (l *Log) flush(sync bool) {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return
	}
	batch, first, last := l.cur, l.written+1, l.last
	// A waiter's wish is met by any sync after it: the flush that ran
	// when it asked may already have covered it, so compare positions
	// rather than keep a flag a finished sync would leave set.
	wanted := l.syncWant > l.synced
	sync = sync || wanted
	if len(batch) == 0 && !(sync && l.dirty) && !wanted {
		l.mu.Unlock()
		return
	}
	batchHalf := -1
	if l.pend != nil {
		// The batch stays in its half of the pending file until it is
		// written; Append goes on in the other half.
		batchHalf = l.curHalf
		next := 0
		if batchHalf == 0 {
			next = 1
		}
		if len(batch) == 0 {
			batch, batchHalf = nil, -1
		} else {
			l.curHalf, l.cur = next, l.pend.area(next)[:0]
			l.pend.start(next, l.last+1)
		}
		l.batchHalf = batchHalf
	} else {
		l.cur, l.spare = l.spare[:0], nil
	}
	l.mu.Unlock()

	err := l.writeBatch(batch, first)
	if err == nil && sync && l.dirty {
		if err = l.seg.Sync(); err != nil {
			err = fmt.Errorf("sync segment %s: %w", l.seg.Name(), err)
		}
		l.dirty = false
		if err == nil {
			// Say so in the log, so that a crash cannot make damage to
			// these records look like a torn tail. The mark is synced with
			// the next records (or at Close).
			l.durable = last
			err = l.writeMark(last + 1)
		}
	}

	l.mu.Lock()
	l.pending -= len(batch)
	if l.pend == nil {
		l.spare = batch[:0]
	}
	if err != nil {
		l.err = err
	} else {
		if batchHalf >= 0 {
			l.pend.start(batchHalf, 0) // written: in the page cache
		}
		l.batchHalf = -1
		l.written = last
		if sync {
			l.synced = last
		}
	}
	close(l.progress)
	l.progress = make(chan struct{})
	l.mu.Unlock()
}

// writeBatch frames the records in batch, the first at pos, and writes
// them, starting new segments as they fill. batch holds the records as
// Append left them (their headers with only the payload length) and is
// only read: a batch in a half of the pending file must hold them as
// appended until they are written. Each record is framed into out, its
// payload compressed straight into it, and out is written a chunk at a
// time: a batch grows to megabytes while the writer syncs, and a copy of
// the whole of it was as much fresh memory, each page a fault, in every
// new log's first seconds.
func (l *Log) writeBatch(batch []byte, pos Pos) error {
	out := l.out[:0]
	unwritten := 0 // start of the output not yet written
	for r := 0; r < len(batch); pos++ {
		n := int(binary.LittleEndian.Uint32(batch[r+4:]))
		p := batch[r+recordHeaderSize : r+recordHeaderSize+n]
		r += recordHeaderSize + n
		need := recordHeaderSize + l.enc.maxStored(n)
		if len(out) > 0 && len(out)+need > max(cap(out), scratchChunk) {
			// The chunk is full: write it.
			if err := l.write(out[unwritten:]); err != nil {
				return err
			}
			out, unwritten = out[:0], 0
		}
		out = room(out, need)
		start := len(out)
		out = out[:start+recordHeaderSize]
		codec, framed := l.enc.appendEncoded(out, p)
		out = framed
		finishRecord(out[start:], codec, pos, l.durable)
		if l.segSize+int64(len(out)-unwritten) > l.opts.SegmentSize && !(l.segEmpty && start == unwritten) {
			// This record starts the next segment.
			if err := l.write(out[unwritten:start]); err != nil {
				return err
			}
			if err := l.sealSegment(); err != nil {
				return err
			}
			l.durable = pos - 1
			finishRecord(out[start:], codec, pos, l.durable)
			if err := l.newSegment(pos); err != nil {
				return err
			}
			unwritten = start
		}
		l.segEmpty = false
	}
	err := l.write(out[unwritten:])
	l.out = out[:0]
	return err
}

// scratchChunk is how many bytes of framed records the writer gathers
// before it writes them (a larger record is a chunk of its own).
const scratchChunk = 256 << 10

// room returns out with room for n more bytes, growing it to a chunk, or
// to what one record needs.
func room(out []byte, n int) []byte {
	if cap(out)-len(out) >= n {
		return out
	}
	grown := make([]byte, len(out), max(len(out)+n, scratchChunk))
	copy(grown, out)
	return grown
}

func (l *Log) write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	n, err := l.seg.Write(b)
	l.segSize += int64(n)
	l.dirty = true
	l.markUnsynced = false // synced with b
	if err != nil {
		return fmt.Errorf("write segment %s: %w", l.seg.Name(), err)
	}
	return nil
}

// writeMark writes a mark saying that every record before pos is durable.
func (l *Log) writeMark(pos Pos) error {
	l.mark = appendMarkRecord(l.mark[:0], pos)
	n, err := l.seg.Write(l.mark)
	l.segSize += int64(n)
	l.markUnsynced = true
	if err != nil {
		return fmt.Errorf("write segment %s: %w", l.seg.Name(), err)
	}
	return nil
}

// syncMark makes the last mark durable, at Close.
func (l *Log) syncMark() {
	l.mu.Lock()
	failed := l.err != nil
	l.mu.Unlock()
	if failed || !l.markUnsynced || l.dirty {
		return
	}
	if err := l.seg.Sync(); err != nil {
		l.mu.Lock()
		l.err = fmt.Errorf("sync segment %s: %w", l.seg.Name(), err)
		l.mu.Unlock()
	}
	l.markUnsynced = false
}

func (l *Log) sealSegment() error {
	if err := l.seg.Sync(); err != nil {
		return fmt.Errorf("sync segment %s: %w", l.seg.Name(), err)
	}
	l.dirty = false
	if err := l.seg.Close(); err != nil {
		return fmt.Errorf("close segment %s: %w", l.seg.Name(), err)
	}
	l.seg = nil
	return nil
}

// newSegment creates the next segment, whose first record will be at
// first, and makes it and its header durable before any record goes in.
// The header is written under a temporary name that is renamed to the
// segment's once synced, so that a segment file always has a whole
// header: a bad header is never a crash's doing.
func (l *Log) newSegment(first Pos) error {
	num := l.segNum + 1
	path := filepath.Join(l.dir, segmentName(num))
	hdr := appendSegmentHeader(make([]byte, 0, segmentHeaderSize), first)
	if err := vfs.WriteFile(l.fsys, path+tempSuffix, path, hdr); err != nil {
		return fmt.Errorf("create segment: %w", err)
	}
	if err := l.fsys.SyncDir(l.dir); err != nil {
		return fmt.Errorf("sync log directory %s: %w", l.dir, err)
	}
	f, err := l.fsys.OpenAppend(path)
	if err != nil {
		return fmt.Errorf("open segment: %w", err)
	}
	l.seg, l.segNum, l.segSize, l.segEmpty = f, num, segmentHeaderSize, true
	l.segMu.Lock()
	defer l.segMu.Unlock()
	l.segs = append(l.segs, segmentInfo{path: path, num: num, first: first})
	// The segment is durable: the manifest may name it.
	return writeManifest(l.fsys, l.dir, manifest{first: l.segs[0].num, last: num}, l.pend != nil)
}
