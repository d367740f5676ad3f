package recorder

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
)

// Object storage (a ROOT in a bucket, WithStore with store.S3) has no
// temp files and no rename: a part becomes visible whole when it is put,
// or when its multipart upload is completed, both with If-None-Match: *
// (never by copy, never replacing an object). The group commit
// (commit.go) keeps its order, and the log says what recovery needs:
//
//  1. the files of the group that go up in pieces (larger than the
//     store's part size) are named in a TypeUploadBegun record, synced
//     before their uploads are created, so that no upload is in flight
//     that the log cannot name by its exact key;
//  2. Sync uploads their pieces: durable on the service, invisible;
//  3. each write's marker names its files and, for those uploaded in
//     pieces, the upload id and the pieces' ETags, synced as before;
//  4. Publish puts the small parts and completes the uploads.
//
// A small part is durable only once it is put; until then the log holds
// the events it is built from (its write is in flight). Recovery
// (settleUploads) therefore checks the files of every write the markers
// name: it completes the recorded upload of a missing file, and a write
// whose files the bucket still does not all hold (a crash among its
// puts) is taken back (its published files deleted) and done again
// whole from the log, so that no row is published twice. Then it aborts
// every upload still in flight of a file the log names.

// uploader is a store whose parts go up as uploads a crash can leave in
// flight (store.S3): recovery settles them instead of temp files.
type uploader interface {
	store.Root
	Multipart(p store.Part) bool
	PendingUpload(p store.Part) (store.Upload, bool)
	UploadOf(rel, id string, pieces []store.Piece) store.Upload
	Uploads(rel string) ([]store.Upload, error)
	CompleteUpload(u store.Upload) error
	AbortUpload(u store.Upload) error
	Exists(rel string) (bool, error)
	Delete(rel string) error
}

var _ uploader = (*store.S3)(nil)

// logBegun makes the TypeUploadBegun records of a group durable (step
// 1 above) before Sync creates the uploads.
func (w *writer) logBegun(up uploader, group []commitItem) error {
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

// withUploads adds to the markers of a synced group the uploads in flight
// of the files they name (step 3 above).
func withUploads(up uploader, group []commitItem, markers [][]byte) ([][]byte, error) {
	ups := map[string]logrec.Upload{}
	for _, it := range group {
		for _, p := range it.parts {
			u, ok := up.PendingUpload(p)
			if !ok {
				continue
			}
			lu := logrec.Upload{File: p.Rel(), ID: u.ID, Pieces: make([]logrec.Piece, len(u.Pieces))}
			for i, pc := range u.Pieces {
				lu.Pieces[i] = logrec.Piece{Number: pc.Number, ETag: pc.ETag, Size: pc.Size}
			}
			ups[p.Rel()] = lu
		}
	}
	if len(ups) == 0 {
		return markers, nil
	}
	out := make([][]byte, len(markers))
	for i, rec := range markers {
		out[i] = rec
		m, err := logrec.ParseMarker(rec[1:])
		if err != nil {
			return nil, fmt.Errorf("add uploads to a marker: %w", err)
		}
		for _, f := range m.Files {
			if u, ok := ups[f]; ok {
				m.Uploads = append(m.Uploads, u)
			}
		}
		if len(m.Uploads) > 0 {
			out[i] = logrec.AppendMarker(nil, logrec.Of(rec), m)
		}
	}
	return out, nil
}

// settleUploads settles what a crashed writer left in object storage
// (see above). A write whose small files the bucket does not all hold is
// taken back: its published files are deleted and its uploads aborted,
// and replay does it again whole. The recorded uploads of the other
// writes are completed where their objects are missing (a write whose
// upload is gone is taken back in turn). Last, every upload still in
// flight of a file the log names, found by its exact key, is aborted. A
// recorded upload that cannot be completed because its name is taken
// fails its recording, whose events stay in the log.
func (r *Recorder) settleUploads(up uploader, done *doneSet) error {
	published := map[string]bool{}
	exists := func(f string) (bool, error) {
		if ok, seen := published[f]; seen {
			return ok, nil
		}
		ok, err := up.Exists(f)
		if err != nil {
			return false, fmt.Errorf("recover %s: %w", r.root, err)
		}
		published[f] = ok
		return ok, nil
	}
	recorded := map[string]bool{} // files with an upload in a marker
	lost := map[string]bool{}     // of those, files whose upload is gone
	for _, wr := range done.Writes() {
		for _, u := range wr.Uploads {
			recorded[u.File] = true
		}
	}
	for {
		if err := r.takeBack(up, done, exists, published, recorded, lost); err != nil {
			return err
		}
		again := false
		for _, wr := range done.Writes() {
			for _, u := range wr.Uploads {
				ok, err := exists(u.File)
				if err != nil {
					return err
				}
				if ok || lost[u.File] {
					continue
				}
				pieces := make([]store.Piece, len(u.Pieces))
				for i, pc := range u.Pieces {
					pieces[i] = store.Piece{Number: pc.Number, ETag: pc.ETag, Size: pc.Size}
				}
				err = up.CompleteUpload(up.UploadOf(u.File, u.ID, pieces))
				var code interface{ ErrorCode() string }
				switch {
				case err == nil:
					published[u.File] = true
					r.opts.logger.Info("completed an upload the crashed recorder had made whole", "root", r.root, "file", up.Path(u.File))
				case errors.Is(err, store.ErrExists):
					if err := r.failTemp(u.File, fmt.Errorf("complete the upload of %s: %w", up.Path(u.File), err)); err != nil {
						return err
					}
				case errors.As(err, &code) && code.ErrorCode() == "NoSuchUpload":
					// Gone, and the object missing: its write is taken back.
					lost[u.File], again = true, true
				default:
					return fmt.Errorf("recover %s: %w", r.root, err)
				}
			}
		}
		if !again {
			break
		}
	}
	// Abort every upload still in flight of a file the log names.
	files := make([]string, 0, len(done.Begun())+len(recorded))
	for f := range done.Begun() {
		files = append(files, f)
	}
	for f := range recorded {
		if !done.Begun()[f] {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		ups, err := up.Uploads(f)
		if err != nil {
			return fmt.Errorf("recover %s: %w", r.root, err)
		}
		for _, u := range ups {
			if err := up.AbortUpload(u); err != nil {
				return fmt.Errorf("recover %s: %w", r.root, err)
			}
			r.opts.logger.Info("aborted an upload the crashed recorder left in flight", "root", r.root, "file", up.Path(f), "upload", u.ID)
		}
	}
	return nil
}

// takeBack takes back, until none is left, the writes with a missing
// file that no recorded upload will publish (a small file not put, or
// one whose upload is lost): their published files are deleted and the
// writes forgotten, so that replay does them again. A file such writes
// share (a batch's episodes file) takes back the others that name it.
func (r *Recorder) takeBack(up uploader, done *doneSet, exists func(string) (bool, error), published, recorded, lost map[string]bool) error {
	for again := true; again; {
		again = false
		for _, wr := range done.Writes() {
			incomplete := false
			for _, f := range wr.Files {
				ok, err := exists(f)
				if err != nil {
					return err
				}
				if !ok && (!recorded[f] || lost[f]) {
					incomplete = true
				}
			}
			if !incomplete {
				continue
			}
			for _, f := range wr.Files {
				if !published[f] {
					continue
				}
				if err := up.Delete(f); err != nil {
					return fmt.Errorf("recover %s: take back the half published write of %s: %w", r.root, wr.Recording, err)
				}
				published[f] = false
				r.opts.logger.Info("took back a file of a write a crash left half published; the write is done again whole", "root", r.root, "file", up.Path(f))
			}
			for _, f := range wr.Files {
				if recorded[f] {
					// Its upload is not completed: aborted below.
					lost[f] = true
				}
			}
			done.Forget(wr)
			again = true
			break
		}
	}
	return nil
}
