// Package hive is rlrec's store layout: the table registry, the partition
// addresses of a recording, the names of part files and of the recorder's
// own state, and the one listing of a ROOT that readers and the checker
// share. Nothing outside this package builds or parses a path under ROOT.
//
// # Layout (schema version 2)
//
// A recording is one route run, named by the pair (session_id, env_id)
// (Recording): rlmesh's session id is only a correlation label that several
// runs may share, and its env_id is the routing key minted per run.
//
//	ROOT/
//	  steps/session_id=S/env_id=R/episode_record_id=E/part-00000.parquet  layout "episode"
//	  steps/session_id=S/env_id=R/part-00000.parquet                      layout "session"
//	  episodes/session_id=S/env_id=R/part-00000.parquet
//	  sessions/session_id=S/env_id=R/part-00000.parquet
//	  logs/session_id=S/env_id=R/part-00000.parquet
//	  telemetry/session_id=S/env_id=R/part-00000.parquet
//	  _rlrec/                          the recorder's state: log/, LOCK, layout
//
// Partition columns live in the path only. A part file is written as
// .part-N.parquet.tmp in its partition directory (the dot hides it from
// pyarrow, the suffix from DuckDB's *.parquet glob) and renamed to
// part-N.parquet once complete and durable.
//
// # Encoding of partition values
//
// Every byte of a value outside A-Z a-z 0-9 '-' '_' '.' '~' becomes %XX
// with two uppercase hex digits; all other bytes are kept. This is the rule
// DuckDB's partitioned writer uses, and DuckDB's hive reader and pyarrow's
// default (segment_encoding="uri") decoding both reverse it, so any id
// round-trips through a dataset scan. Go's url.PathEscape and
// url.QueryEscape follow other rules. "." and ".." are written "%2E" and
// "%2E%2E", so an escaped value is a safe path segment on its own, and the
// dot of a value ending in ".tmp" is written "%2Etmp", so that no value
// makes a name readers skip as a temp file.
//
// The empty value is written as the empty string: the segment "key=", a
// valid directory name inside ROOT that no other value maps to. DuckDB
// reads it back as the empty string; other readers may take it for null.
// The recorder counts an empty id as a problem of its recording.
//
// # Long values
//
// A file name may not exceed 255 bytes on the file systems rlrec runs on,
// so an escaped value longer than MaxValueLen bytes (a 245-byte session id,
// or 42 'é') is cut, at an escape boundary, to its first bytes and followed
// by '~' and 16 hex digits of the SHA-256 of the whole value. Such a name
// is longer than any name kept whole, so it can never equal one, and two
// values share it only if their hashes collide. The name no longer decodes
// to the value: every file in the partition carries the value in its
// metadata (rlrec.session_id, rlrec.env_id, rlrec.episode_record_id), and
// Value reports such a name as inexact so that readers take the value from
// there. A dataset scan shows the cut name in the partition column.
package hive
