// Package logrec is the vocabulary of rlrec's log: the records the
// recorder writes into the payloads of internal/wal's frames, and their
// byte codecs. It does no I/O. docs/format/log.md draws every record.
//
// The first byte of a record is its Type; the body follows:
//
//	+--------+--------------------------------------------------+
//	| Type   | body                                             |
//	| 1 byte | depends on the type (protobuf wire data for all) |
//	+--------+--------------------------------------------------+
//
//	1 TypeEvent         an rlrec.events.v1.Event (package events encodes it)
//	2 TypeEpisodeDone   Marker: an episode's files are durable
//	3 TypeSessionDone   Marker: the k-th session write's files are durable
//	4 TypeSessionWrite  Marker: the k-th session write was handed over
//	5 TypeSnapshot      Snapshot (snapshot.proto): the assembly state
//	6 TypeSealed        as_of: the snapshot as of that position is safe
//	7 TypeInvalid       Invalid: an ingested message that was no event
//	8 TypeUploadBegun   Marker: multipart uploads of its files begin
//
// The type numbers, the field numbers of every body and the journal's
// layout are part of the on-disk format: do not change them. A new record
// type takes a new number; a retired number is never reused.
//
// # Usage
//
//	rec := logrec.AppendEpisodeDone(buf[:0], logrec.Marker{...}) // appends to a caller's buffer
//	switch logrec.Of(rec) {
//	case logrec.TypeSealed:
//		asOf, err := logrec.ParseSealed(rec[1:])                  // parsers take the body
//	}
//
// Encoders append to the caller's buffer, type byte first; parsers take
// the body (the record after its type byte) and return errors wrapping
// the sentinels of errors.go.
//
// # Record buffers
//
// BufPool recycles the buffers event records are encoded into, keeping at
// most Max bytes of idle ones (bufpool.go); PayloadBytes is the size of
// an event's payload slabs, most of its record's size, by which a buffer
// is chosen.
//
// # Markers and seals
//
// Markers let recovery skip work already done and name the files a write
// published (Marker); they carry no data of their own. In object storage
// a marker also holds the multipart uploads (Upload: id and pieces'
// ETags) that publish its large files, and TypeUploadBegun names the files
// whose uploads are about to be created, so that recovery completes the
// uploads the log says are whole and aborts the rest, by exact key. A seal says that
// every write handed to the writer before a snapshot was taken is
// durable, so recovery may restore that snapshot and skip the events up
// to its as_of.
// Published collects what a log's markers say is published, for
// recovery.
//
// # Snapshots
//
// A snapshot's body is the Snapshot message of snapshot.proto, with
// generated code in snapshot.pb.go (go generate ./internal/logrec: protoc
// from Debian's protobuf-compiler and protoc-gen-go v1.36.12). The first
// snapshots were written by hand-written code with the same field numbers
// and wire types; testdata/snapshot-inline.bin is one, and it parses with
// the generated code. as_of is always the first field written, so that
// SnapshotAsOf reads it without decoding the rest.
//
// How a field holds a Go value is written once, in snapshotfields.go:
// times as optional Unix nanoseconds (UnixNanos, TimeOf), a space as its
// deterministic wire form (SpecBytes), an optional bytes field that is
// present but empty (Present), the route (RouteOf, Route.Context), a step
// row's flag bits (RowFlags, RowFirst...), log and telemetry rows (LogOf,
// Log.SourceOf, TelemetryOf, Telemetry.Row). The recorder fills and reads
// the message with them.
//
// # The recovery journal
//
// ROOT/_rlrec/journal holds the markers of the one group of files a
// recovery publishes, since recovery writes no log (AppendJournal,
// ParseJournal).
package logrec
