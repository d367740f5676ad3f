// Package wal is the recorder's durable log: an append-only sequence of
// checksummed records in numbered segment files under one directory
// (ROOT/_rlrec/log/), written and fsynced in groups by a background
// goroutine, and read back in order after a crash.
//
// # Usage
//
//	l, err := wal.Open(fsys, dir, wal.Options{Logger: logger})
//	pos, err := l.Append(event)      // copies event; no disk I/O here
//	err = l.WaitSynced(ctx, pos)     // only when the caller must know
//	err = l.Close()                  // makes everything appended durable
//
//	r, err := wal.NewReader(fsys, dir)
//	for r.Next() {
//		use(r.Pos(), r.Record()) // Record is valid until the next Next
//	}
//	err = r.Err() // a *CorruptionError when the log is damaged
//
//	r.Filter(func(first byte) bool { return first != 1 }) // before Next:
//	// skip records by their first payload byte, without decompressing them
//
// # Positions
//
// A Pos numbers records: the first record of a log is 1 and each later one
// has the next number, across segments, so positions compare with <. Pos 0
// means "no record". Each segment header stores the Pos of its first record.
// When Open cuts a damaged tail, the positions of the records it cut are
// given to the next records appended (a torn tail held nothing that was
// reported durable).
//
// # Segment files
//
// Segments are named by a 16-digit zero-padded decimal sequence number and
// the suffix ".wal" (0000000000000001.wal, ...). A new segment is started
// when the next record would grow the current one past Options.SegmentSize
// (a record larger than that gets a segment of its own). A segment is
// created, its header written and fsynced and the directory fsynced before
// any record goes into it, so after a crash a segment either is absent or
// has a whole header. Every segment but the last is sealed: it is never
// written again. Open continues in the last segment after repairing it.
// Segments are append-only and so are not written through a temporary name.
//
// Segment header, 24 bytes, little-endian:
//
//	+----------------+-----------+-------------+-----------+
//	| magic (8)      | version   | first Pos   | CRC-32C   |
//	| "rlrecWAL"     | uint32 =1 | uint64      | of 0..19  |
//	+----------------+-----------+-------------+-----------+
//
// Then records, back to back, each:
//
//	+-----------+------------+--------+---------------------+
//	| CRC-32C   | length     | type   | payload             |
//	| uint32    | uint32     | 1 byte | length bytes        |
//	+-----------+------------+--------+---------------------+
//	            |<-------- covered by the CRC ------------->|
//
// CRC-32C is the Castagnoli polynomial. length is the number of payload
// bytes as stored. The type byte's low four bits are the record kind (only
// 1, "full record", is defined; 0 never is, so zero-filled space never
// parses as a record) and its high four bits the payload codec: 0 none,
// 1 S2 block format (github.com/klauspost/compress/s2), 2 a zstd frame. The
// stored payload decodes to at most MaxRecordSize bytes. A record is
// compressed only when it is at least Options.MinCompressSize bytes and the
// codec saves at least a sixteenth of it.
//
// # Crashes and corruption
//
// After a power cut the last segment may end in a torn tail: zeroes, a
// partial record or garbage where an unsynced write was lost. Everything
// before the first bad record is intact (every record's CRC says so), and
// nothing after it was ever reported durable. Open (through Repair) cuts
// such a tail, reports it and continues. A bad record inside a sealed
// segment, or a segment whose first Pos does not follow its predecessor, is
// real corruption: Repair refuses with a *CorruptionError unless
// Options.Salvage is set, in which case it cuts the log at the damage and
// reports what was lost.
//
// # Concurrency
//
// Log methods are safe for concurrent use. A Reader is not; read a log
// before appending to it (Open repairs it first), or read only up to
// Log.SyncedPos.
package wal
