package recorder

import "github.com/rlrec/rlrec/internal/store"

// uploader is a store whose parts go up as uploads a crash can leave in
// flight (store.S3): recovery settles them instead of temp files.
type uploader interface {
	store.Root
	Uploads(rel string) ([]store.Upload, error)
	CompleteUpload(u store.Upload) error
	AbortUpload(u store.Upload) error
}

// settleUploads settles what a crashed writer left in object storage.
func (r *Recorder) settleUploads(up uploader, done *doneSet) error {
	return nil
}
