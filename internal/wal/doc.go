// Package wal is the recorder's durable log: an append-only sequence of
// checksummed records in numbered segment files under one directory
// (ROOT/_rlrec/log/), written and fsynced in groups by a background
// goroutine, and read back in order after a crash.
//
// # Usage
//
//	l, err := wal.Open(fsys, dir, wal.Options{Logger: logger})
//	pos, err := l.Append(event)      // copies event; no system call here
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
// # The pending file
//
// Where the file system maps files (vfs.Mapper: the OS on Linux), Append
// copies each record into PendingName, a file in the log directory mapped
// shared into the process, instead of into process memory: once Append
// returns, the record is in the kernel's page cache and survives the death
// of the process (SIGKILL, a panic) whatever SyncInterval says, with no
// system call on Append's path. Repair (and so Open) appends the records a
// dead process left there and the segments lack. pending.go has the
// file's layout. A power cut loses what the pending file held, as it loses
// unsynced segment records: a file of an earlier boot is ignored.
//
// # Positions
//
// A Pos numbers records: the first record of a log is 1 and each later one
// has the next number, across segments, so positions compare with <. Pos 0
// means "no record". Each segment header stores the Pos of its first record
// and each record its own, so that a duplicated or dropped record is
// found (ErrSequence). When Repair cuts a torn tail, the positions of the
// records it cut are given to the next records appended (a torn tail held
// nothing that was reported durable). Positions a salvage found destroyed
// are marked lost and never reused: a reader skips them (Reader.Lost).
//
// # Segment files
//
// Segments are named by a 16-digit zero-padded decimal sequence number and
// the suffix ".wal" (0000000000000001.wal, ...). A new segment is started
// when the next record would grow the current one past Options.SegmentSize
// (a record larger than that gets a segment of its own). A segment is
// created under a temporary name (the suffix ".tmp" added), its header
// written and fsynced, then renamed to its name and the directory fsynced,
// all before any record goes into it: a segment file always has a whole
// header, so a bad header is never a crash's doing. Every segment but the
// last is sealed: it is never written again. Open continues in the last
// segment after repairing it, if it is of the current format version.
//
// Segment header, 24 bytes, little-endian:
//
//	+----------------+-----------+-------------+-----------+
//	| magic (8)      | version   | first Pos   | CRC-32C   |
//	| "rlrecWAL"     | uint32 =2 | uint64      | of 0..19  |
//	+----------------+-----------+-------------+-----------+
//
// Then records, back to back, each (format version 2):
//
//	+---------+---------+--------+---------+-------------+-----------+
//	| CRC-32C | length  | type   | Pos     | durable Pos | payload   |
//	| uint32  | uint32  | 1 byte | uint64  | uint64      | length B  |
//	+---------+---------+--------+---------+-------------+-----------+
//	          |<--------------- covered by the CRC ----------------->|
//
// CRC-32C is the Castagnoli polynomial. length is the number of payload
// bytes as stored. Pos is the record's position. durable Pos is the last
// position that was durable (fsynced) when the writer framed the record;
// it is always less than Pos. The type byte's low four bits are the record
// kind and its high four bits the payload codec: 0 none, 1 S2 block format
// (github.com/klauspost/compress/s2), 2 a zstd frame. Kinds (0 never is
// one, so zero-filled space never parses as a record):
//
//   - 1, a record: the payload Append was given.
//   - 2, lost: written by a salvage, no codec; the payload is a uint64
//     count of positions from Pos that damage destroyed. It takes those
//     positions; readers return nothing for them.
//   - 3, mark: no payload, no codec; written after each fsync, it says that
//     every record before Pos is durable (its durable Pos is Pos-1). It
//     takes no position: the next record has the same Pos.
//
// The stored payload decodes to at most MaxRecordSize bytes. A record is
// compressed only when it is at least Options.MinCompressSize bytes and the
// codec saves at least a sixteenth of it.
//
// Format version 1, written by earlier builds, is still read: its records
// are framed CRC-32C, length, type (kind 1 only) and payload, without
// positions, the CRC covering length to payload. Open never appends to a
// version 1 segment (it starts a new one), and a salvage rewrites a
// damaged one as version 2.
//
// # Crashes and corruption
//
// After a power cut the last segment may end in a torn tail: zeroes, a
// partial record or garbage where an unsynced write was lost, with perhaps
// intact records of other unsynced writes after it. None of those records
// was reported durable, and none of the records after the damage says it
// was: each of them was framed, and each mark written, before the damaged
// record was synced. That is how Repair tells a torn tail from corruption:
// damage at the record due at position p, in the last segment, is a torn
// tail when no record (or mark) after it has a durable Pos of p or more.
// Repair cuts a torn tail and reports it.
//
// Everything else is corruption of data that was durable: a bad record
// that a later record or mark shows was durable, a bad segment header, a
// record out of sequence, a segment that does not start where the one
// before it ends, any damage in a sealed segment. Repair refuses it with a
// *CorruptionError naming the segment and offset, and leaves the log
// alone, unless Options.Salvage is set. A salvage rewrites each damaged
// segment (through a temporary file) without its damaged bytes: it scans
// forward from the damage for the next record whose framing and checksum
// are valid and whose position continues, keeps it and every intact
// record after it, marks the positions in between lost, and drops
// duplicates. It reports what it kept, dropped and marked lost.
//
// A missing segment. A segment missing between two others leaves a gap in
// the positions (ErrGap). One missing at either end does not: the oldest
// segments are removed in the normal course, and a log whose newest
// segment is gone ends earlier. The segment manifest (ManifestName,
// manifest.go) names the oldest and the newest segment the log must have,
// and Repair refuses a log that lacks one (ErrSegmentMissing, naming every
// file missing); a salvage recovers what the others hold, reports the
// files missing (RepairReport.SegmentsMissing) and writes the manifest of
// what is left. A log without a manifest (written by an earlier version)
// is not checked, and Open gives it one.
//
// What cannot be told apart. Damage that leaves nothing after it, a last
// segment cut short past its header, looks like a log that ends there:
// the records it took are missed without a report (so is a newest
// segment removed after a crash that came between its creation and the
// manifest's update). After a power cut
// that also lost the mark written after the last fsync, damage to the last
// batch of records synced is taken for a torn tail (nothing after it says
// it was durable). In a version 1 segment, which stores no durable
// positions, any intact record after damage in the last segment makes it
// corruption, and a salvage cannot number the records after damage in a
// version 1 segment: it drops them and reports them.
//
// # Concurrency
//
// Log methods are safe for concurrent use. A Reader is not; read a log
// before appending to it (Open repairs it first), or read only up to
// Log.SyncedPos.
package wal
