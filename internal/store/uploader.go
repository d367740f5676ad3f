package store

import "github.com/rlrec/rlrec/internal/logrec"

// Uploader is a store whose parts go up as uploads a crash can leave in
// flight (S3): a writer records them in its log, and its recovery settles
// them instead of temp files (the recorder's internal recovery package says how).
type Uploader interface {
	Root
	Multipart(p Part) bool
	PendingUpload(p Part) (logrec.Upload, bool)
	Uploads(rel string) ([]logrec.Upload, error)
	CompleteUpload(u logrec.Upload) error
	AbortUpload(u logrec.Upload) error
	Exists(rel string) (bool, error)
	Delete(rel string) error
}

var _ Uploader = (*S3)(nil)
