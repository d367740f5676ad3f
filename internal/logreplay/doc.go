// Package logreplay reads a recorder's log (internal/wal, records of
// internal/logrec) back for recovery, in the two passes recovery makes:
//
//   - Markers reads the markers, which say which writes are published
//     (a logrec.Published), and the last snapshot record a seal follows,
//     where the replay may start; it skips event records without
//     decompressing them.
//   - Events reads the event records from a position on, in order, and
//     decodes them (logrec.DecodeEvent) on goroutines of their own while
//     the caller assembles, so that a replay uses both cores.
//
// A record that passed its checksum but does not decode (written by a
// different version) is logged and skipped. Neither pass writes anything;
// the caller, the recorder, decides what to do with what they read.
package logreplay
