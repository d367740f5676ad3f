package logreplay

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// Events replays the log in three stages on their own goroutines, so
// that reading (file reads, checksums, decompression), decoding and
// the caller's assembly, each about a third of the work, run on both
// cores:
//
//	reader ──record batches──▶ decoder ──event batches──▶ caller (assembly)
//
// Records travel in batches (one arena of copied bytes each) to keep the
// cost of the channels small against records of a few hundred bytes; the
// channels' capacity bounds what is in flight to a few batches.

// replayBatch is a run of consecutive event records (logrec.TypeEvent
// and TypeInvalid): their bytes in arena, cut by end, and their positions.
type replayBatch struct {
	arena []byte
	end   []int
	pos   []wal.Pos
}

// Batch bounds: a batch is sent once it holds this many records or bytes.
const (
	replayBatchRecords = 256
	replayBatchBytes   = 1 << 20
	replayQueue        = 4 // batches in flight between two stages
)

// Event is one decoded event of the log: the event (a logrec.Sequenced
// or *logrec.InvalidEvent where its record says so), its time and its
// position in the log.
type Event struct {
	Ev  events.Event
	At  time.Time
	Pos wal.Pos
}

// Events reads the event records of the log in dir from position from
// (0: the first) in order and calls apply for each one that decodes
// (logrec.DecodeEvent), from the calling goroutine. A
// record that passed its checksum but does not decode (written by a
// different version) is logged and skipped. It returns the number of
// event records read, decodable or not, and the error that stopped the
// reader, if any; apply has then seen everything before it.
func Events(fsys vfs.FS, dir string, from wal.Pos, log *slog.Logger, apply func(Event)) (records int64, err error) {
	rd, err := wal.NewReaderFrom(fsys, dir, from)
	if err != nil {
		return 0, err
	}
	defer rd.Close()

	free := make(chan *replayBatch, replayQueue+2)
	raw := make(chan *replayBatch, replayQueue)
	decoded := make(chan []Event, replayQueue)
	stop := make(chan struct{})
	defer close(stop)

	go func() {
		defer close(raw)
		b := &replayBatch{}
		for rd.Next() {
			rec := rd.Record()
			if !logrec.Of(rec).IsEvent() {
				continue
			}
			b.arena = append(b.arena, rec...)
			b.end = append(b.end, len(b.arena))
			b.pos = append(b.pos, rd.Pos())
			if len(b.end) >= replayBatchRecords || len(b.arena) >= replayBatchBytes {
				select {
				case raw <- b:
				case <-stop:
					return
				}
				select {
				case b = <-free:
					b.arena, b.end, b.pos = b.arena[:0], b.end[:0], b.pos[:0]
				default:
					b = &replayBatch{}
				}
			}
		}
		if len(b.end) > 0 {
			select {
			case raw <- b:
			case <-stop:
			}
		}
	}()

	var n int64 // written by the decoder, read after decoded is closed
	go func() {
		defer close(decoded)
		var dec events.Decoder
		for b := range raw {
			out := make([]Event, 0, len(b.end))
			start := 0
			for i, end := range b.end {
				n++
				ev, t, err := logrec.DecodeEvent(&dec, b.arena[start:end])
				start = end
				if err != nil {
					log.Error("skipping an undecodable log record", "pos", b.pos[i], "err", err)
					continue
				}
				out = append(out, Event{Ev: ev, At: t, Pos: b.pos[i]})
			}
			select {
			case free <- b: // events share nothing with the arena
			default:
			}
			select {
			case decoded <- out:
			case <-stop:
				return
			}
		}
	}()

	for batch := range decoded {
		for _, d := range batch {
			apply(d)
		}
	}
	// The reader goroutine has finished: decoded closed after raw did.
	if err := rd.Err(); err != nil {
		return n, fmt.Errorf("read log: %w", err)
	}
	return n, nil
}
