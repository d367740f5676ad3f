package recorder

import (
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
)

// Object storage (a ROOT in a bucket, WithStore with store.S3) has no
// temp files and no rename. The group commit (commit.go) keeps its order,
// and the log says what recovery needs (internal/store, settle.go): the
// files about to go up in pieces (logBegun), then each write's marker
// with its uploads (store.MarkUploads), before the parts are published.
// Recovery settles them with store.SettleUploads (recover.go).

// logBegun makes the TypeUploadBegun records of a group durable before
// Sync creates the uploads.
func (w *writer) logBegun(up store.Uploader, group []commitItem) error {
	var recs [][]byte
	for _, it := range group {
		var files []string
		for _, p := range it.parts {
			if up.Multipart(p) {
				files = append(files, p.Rel())
			}
		}
		if len(files) > 0 {
			recs = append(recs, logrec.AppendUploadBegun(nil, logrec.Marker{Recording: it.rec, Files: files}))
		}
	}
	if len(recs) == 0 {
		return nil
	}
	return w.now().logMarkers(recs)
}
