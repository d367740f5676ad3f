package wal

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlrec/rlrec/internal/vfs"
)

// failScript appends records with a Sync every few, on a log whose file
// system may fail. It returns how many records a successful Sync covered
// and the first error seen.
func failScript(t *testing.T, fsys vfs.FS) (acked int, failure error) {
	t.Helper()
	opts := Options{SegmentSize: 3 << 10, SyncInterval: time.Hour}
	l, err := Open(fsys, testDir, opts)
	if err != nil {
		return 0, err
	}
	for i := 0; i < 40; i++ {
		_, err := l.Append(payload(i))
		if err == nil && i%5 == 4 {
			if err = l.Sync(context.Background()); err == nil {
				acked = i + 1
			}
		}
		if err != nil {
			if !errors.Is(err, ErrFailed) {
				t.Fatalf("record %d: error %v does not wrap ErrFailed", i, err)
			}
			// The failure is sticky.
			if _, err2 := l.Append(payload(i + 1)); !errors.Is(err2, ErrFailed) || !errors.Is(err2, vfs.ErrInjected) {
				t.Fatalf("append after failure: %v", err2)
			}
			if err2 := l.Sync(context.Background()); !errors.Is(err2, ErrFailed) {
				t.Fatalf("sync after failure: %v", err2)
			}
			if err2 := l.Close(); !errors.Is(err2, ErrFailed) {
				t.Fatalf("close after failure: %v", err2)
			}
			return acked, err
		}
	}
	return acked, l.Close()
}

// TestInjectedErrors fails, in turn, every write, fsync, directory fsync,
// create and close the log does: the failure must surface, stick, and lose
// nothing that a Sync had reported durable.
func TestInjectedErrors(t *testing.T) {
	for _, tc := range []struct {
		op    vfs.Op
		short bool
	}{
		{vfs.OpWrite, false},
		{vfs.OpWrite, true},
		{vfs.OpSync, false},
		{vfs.OpSyncDir, false},
		{vfs.OpCreate, false},
		{vfs.OpClose, false},
	} {
		t.Run(fmt.Sprintf("%v short=%v", tc.op, tc.short), func(t *testing.T) {
			count := vfs.FailAt(0, tc.op)
			if _, err := failScript(t, vfs.WithErrors(vfs.NewMem(), count)); err != nil {
				t.Fatal(err)
			}
			if count.Seen() == 0 {
				t.Fatalf("the script does no %v", tc.op)
			}
			for k := int64(1); k <= count.Seen(); k++ {
				mem := vfs.NewMem()
				trig := vfs.FailAt(k, tc.op)
				if tc.short {
					trig.ShortWrites()
				}
				acked, err := failScript(t, vfs.WithErrors(mem, trig))
				if !errors.Is(err, vfs.ErrInjected) {
					t.Fatalf("%v #%d: error %v, want the injected one", tc.op, k, err)
				}
				crashed := mem.Crash()
				l, err := Open(crashed, testDir, Options{})
				if err != nil {
					t.Fatalf("%v #%d: reopen: %v", tc.op, k, err)
				}
				if _, err := l.Append(payload(int(l.LastPos()))); err != nil {
					t.Fatal(err)
				}
				l.Close()
				checkPrefix(t, crashed, testDir, acked)
			}
		})
	}
}

// gate blocks writes while closed.
type gate struct {
	on      atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Inject(op vfs.Op, name string) error {
	if op == vfs.OpWrite && g.on.Load() {
		g.entered <- struct{}{}
		<-g.release
	}
	return nil
}

func TestBackPressure(t *testing.T) {
	g := &gate{entered: make(chan struct{}, 100), release: make(chan struct{})}
	fsys := vfs.WithErrors(vfs.NewMem(), g)
	l, err := Open(fsys, testDir, Options{MaxPending: 8 << 10, FlushSize: 1, SyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	g.on.Store(true)
	rec := make([]byte, 1014-recordHeaderSize) // 1014 pending bytes each
	if _, err := l.Append(rec); err != nil {
		t.Fatal(err)
	}
	<-g.entered              // the writer is stuck in its first write
	for i := 0; i < 7; i++ { // 8 records: 8112 of 8192 bytes
		if _, err := l.Append(rec); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Bool
	returned := make(chan Pos)
	go func() {
		pos, _ := l.Append(rec) // would make 9126: must wait
		done.Store(true)
		returned <- pos
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	err = l.WaitSynced(ctx, 1)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitSynced on a stuck writer: %v, want deadline exceeded", err)
	}
	if done.Load() {
		t.Fatal("Append returned while the pending bound was reached")
	}
	g.on.Store(false)
	close(g.release)
	if pos := <-returned; pos != 9 {
		t.Fatalf("blocked append got pos %d, want 9", pos)
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.SyncedPos() != 9 {
		t.Fatalf("synced %d, want 9", l.SyncedPos())
	}
	l.Close()
}

func TestRemoveBefore(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		l.Append(payload(i))
	}
	if err := l.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := l.Segments()
	if before < 5 {
		t.Fatalf("only %d segments", before)
	}
	if err := l.RemoveBefore(50); err != nil {
		t.Fatal(err)
	}
	crashed := fsys.Crash() // the removal must be durable
	for _, f := range []vfs.FS{fsys, crashed} {
		r, err := NewReader(f, testDir)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Next() || r.Pos() > 50 || r.Pos() == 1 {
			t.Fatalf("first record after RemoveBefore(50) at %d, %v", r.Pos(), r.Err())
		}
		first := r.Pos()
		segs, _ := listSegments(f, testDir)
		// The segment holding 50 stays; the one before it does not.
		var hdr [segmentHeaderSize]byte
		if len(segs) > 1 {
			_, second, _ := readHeader(f, segs[1].path, hdr[:])
			if second <= 50 || first > 50 {
				t.Fatalf("kept segments start at %d and %d", first, second)
			}
		}
		r.Close()
		r, err = NewReaderFrom(f, testDir, 50)
		if err != nil {
			t.Fatal(err)
		}
		want := Pos(50)
		for r.Next() {
			if r.Pos() != want || string(r.Record()) != string(payload(int(want-1))) {
				t.Fatalf("NewReaderFrom(50): record %d, want %d", r.Pos(), want)
			}
			want++
		}
		if r.Err() != nil || want != 101 {
			t.Fatalf("NewReaderFrom(50) ended at %d: %v", want, r.Err())
		}
	}
	active := l.ActiveFirst()
	if active <= 50 || active > l.LastPos() {
		t.Fatalf("ActiveFirst %d, want the first record of the last of several segments (last %d)", active, l.LastPos())
	}
	if err := l.RemoveBefore(l.LastPos() + 1); err != nil {
		t.Fatal(err)
	}
	if l.Segments() != 1 {
		t.Fatalf("%d segments left, the active one must stay alone", l.Segments())
	}
	if r, err := NewReader(fsys, testDir); err != nil || !r.Next() || r.Pos() != active {
		t.Fatalf("the active segment starts at %d, ActiveFirst said %d (%v)", r.Pos(), active, err)
	}
	l.Close()
	l, err = Open(fsys, testDir, Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if pos, err := l.Append(payload(100)); pos != 101 || err != nil {
		t.Fatalf("append after removal and reopen: %d %v", pos, err)
	}
	l.Close()
}

func TestOpenLocksAndClose(t *testing.T) {
	fsys := vfs.NewMem()
	l, err := Open(fsys, testDir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(fsys, testDir, Options{}); !errors.Is(err, vfs.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	pos, err := l.Append([]byte("last words"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSynced(context.Background(), pos); err != nil {
		t.Fatalf("WaitSynced after Close for a record Close synced: %v", err)
	}
	if _, err := l.Append(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("append after close: %v", err)
	}
	if err := l.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	l, err = Open(fsys, testDir, Options{})
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	if err := l.WaitSynced(context.Background(), 5); err == nil {
		t.Fatal("WaitSynced past the last record returned nil")
	}
	l.Close()
}

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"tiny segment", Options{SegmentSize: 10}},
		{"negative interval", Options{SyncInterval: -1}},
		{"negative pending", Options{MaxPending: -1}},
		{"unknown codec", Options{Compression: 99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Open(vfs.NewMem(), testDir, tc.opts); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
