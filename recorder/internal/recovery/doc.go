// Package recovery holds the recorder's crash settlement that is not
// replay: what its state directory and its object store say a crash left,
// and how it is settled before the log is replayed.
//
//   - journal.go: the recovery journal (the markers of the one group of
//     files a recovery publishes, since recovery has no log to append
//     to) and the open marker (a recorder may have left temp files);
//   - uploads.go: the uploads a recorder on object storage records in its
//     log (BegunMarker, StreamLogged, MarkUploads) and their settlement
//     after a crash (SettleUploads).
//
// Their bytes are internal/logrec's, their names hive's; the files and
// objects they settle are internal/store's. The replay itself (the
// markers, the doneSet, the temp files) is the recorder's recover.go.
package recovery
