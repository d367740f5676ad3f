package recorder

import (
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
)

// The records of the recorder's log, their types and their codecs are
// package logrec's (internal/logrec, and docs/format/log.md). Every event
// goes into the log as a logrec.TypeEvent record (or TypeInvalid) before
// anything else happens to it; the committer adds markers
// (TypeEpisodeDone, TypeSessionDone) once a write's files are durable, the
// writer TypeSessionWrite as it hands a session write over, and the
// checkpointer snapshots and their seals (checkpoint.go).

// episodeMarker is the TypeEpisodeDone record of episode record of rec,
// whose files are files.
func episodeMarker(rec hive.Recording, record string, files []string) []byte {
	return logrec.AppendEpisodeDone(nil, logrec.Marker{Recording: rec, Record: record, Files: files})
}

// sessionMarker is the marker record of type typ (TypeSessionDone or
// TypeSessionWrite) of the k-th session write of rec.
func sessionMarker(typ logrec.Type, rec hive.Recording, k int, files []string) []byte {
	return logrec.AppendSessionMarker(nil, typ, logrec.Marker{Recording: rec, Write: k, Files: files})
}
