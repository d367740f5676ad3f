package store

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
)

// A writer's uploads in its log.
//
// Object storage (a ROOT in a bucket, S3) has no temp files and no
// rename: a part becomes visible whole when it is put, or when its
// multipart upload is completed, both with If-None-Match: * (never by
// copy, never replacing an object). A writer that must survive a crash
// (the recorder) keeps the order of a group commit, and its log says what
// recovery needs:
//
//  1. the files of the group that go up in pieces (larger than the
//     store's part size, Multipart) are named in a logrec.TypeUploadBegun
//     record (BegunMarker), synced before their uploads are created, so
//     that no upload is in flight that the log cannot name by its exact
//     key;
//  2. Sync uploads their pieces: durable on the service, invisible (a
//     part let stream, StreamLogged, logs its record and begins its
//     upload while it is written, and Sync uploads the rest);
//  3. each write's marker names its files and, for those uploaded in
//     pieces, the upload id and the pieces' ETags (MarkUploads), synced
//     as before;
//  4. Publish puts the small parts and completes the uploads.
//
// A small part is durable only once it is put; until then the log holds
// the events it is built from (its write is in flight). Recovery
// (SettleUploads) therefore checks the files of every write the markers
// name: it completes the recorded upload of a missing file, and a write
// whose files the bucket still does not all hold (a crash among its puts)
// is taken back (its published files deleted) and forgotten, so that the
// writer does it again whole from the log and no row is published twice.
// Then it aborts every upload still in flight of a file the log names.

// Uploader is a store whose parts go up as uploads a crash can leave in
// flight (S3): a writer records them in its log, and recovery settles
// them (SettleUploads) instead of temp files.
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

// BegunMarker returns the logrec.TypeUploadBegun record of a write of
// recording rec naming those of its parts that go up in pieces (step 1
// above), or nil when none does.
func BegunMarker(up Uploader, rec hive.Recording, parts []Part) []byte {
	var files []string
	for _, p := range parts {
		if up.Multipart(p) {
			files = append(files, p.Rel())
		}
	}
	if len(files) == 0 {
		return nil
	}
	return logrec.AppendUploadBegun(nil, logrec.Marker{Recording: rec, Files: files})
}

// StreamLogged lets part p of recording rec upload its pieces while it
// is written, when st streams (Streamer): its upload begins only once
// logMarkers has made a logrec.TypeUploadBegun record naming it durable
// (step 1 above, taken before the part is finished).
func StreamLogged(st Store, p Part, rec hive.Recording, logMarkers func([][]byte) error) {
	sw, ok := st.(Streamer)
	if !ok {
		return
	}
	sw.Stream(p, func() error {
		return logMarkers([][]byte{logrec.AppendUploadBegun(nil, logrec.Marker{Recording: rec, Files: []string{p.Rel()}})})
	})
}

// MarkUploads adds to the marker records (type byte first) of a synced
// group the uploads in flight of the files they name (step 3 above);
// parts are the group's parts. Markers that name no such file are
// returned as they are.
func MarkUploads(up Uploader, parts []Part, markers [][]byte) ([][]byte, error) {
	ups := map[string]logrec.Upload{}
	for _, p := range parts {
		u, ok := up.PendingUpload(p)
		if !ok {
			continue
		}
		ups[p.Rel()] = u
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

// SettleUploads settles what a crashed writer left in object storage
// (see above); pub holds the writes its log's markers name, and what it
// says no longer holds is forgotten from it. A write whose small files
// the bucket does not all hold is taken back: its published files are
// deleted and its uploads aborted, and the writer does it again whole.
// The recorded uploads of the other writes are completed where their
// objects are missing (a write whose upload is gone is taken back in
// turn). Last, every upload still in flight of a file the log names,
// found by its exact key, is aborted.
//
// A recorded upload that cannot be completed because its name is taken
// (ErrExists) is handed to nameTaken with the file (relative to ROOT)
// and the error: the caller fails what the file belongs to, or returns an
// error, which SettleUploads returns as it is. Its other errors say what
// failed; logger (with the caller's attributes) gets one line per upload
// completed or aborted and per file taken back.
func SettleUploads(up Uploader, pub *logrec.Published, nameTaken func(rel string, err error) error, logger *slog.Logger) error {
	s := settlement{up: up, pub: pub, logger: logger,
		published: map[string]bool{}, recorded: map[string]bool{}, lost: map[string]bool{}}
	for _, wr := range pub.Writes() {
		for _, u := range wr.Uploads {
			s.recorded[u.File] = true
		}
	}
	for {
		if err := s.takeBack(); err != nil {
			return err
		}
		again := false
		for _, wr := range pub.Writes() {
			for _, u := range wr.Uploads {
				ok, err := s.exists(u.File)
				if err != nil {
					return err
				}
				if ok || s.lost[u.File] {
					continue
				}
				err = up.CompleteUpload(u)
				var code interface{ ErrorCode() string }
				switch {
				case err == nil:
					s.published[u.File] = true
					logger.Info("completed an upload the crashed recorder had made whole", "file", up.Path(u.File))
				case errors.Is(err, ErrExists):
					if err := nameTaken(u.File, fmt.Errorf("complete the upload of %s: %w", up.Path(u.File), err)); err != nil {
						return err
					}
				case errors.As(err, &code) && code.ErrorCode() == "NoSuchUpload":
					// Gone, and the object missing: its write is taken back.
					s.lost[u.File], again = true, true
				default:
					return err
				}
			}
		}
		if !again {
			break
		}
	}
	// Abort every upload still in flight of a file the log names.
	files := make([]string, 0, len(pub.Begun())+len(s.recorded))
	for f := range pub.Begun() {
		files = append(files, f)
	}
	for f := range s.recorded {
		if !pub.Begun()[f] {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		ups, err := up.Uploads(f)
		if err != nil {
			return err
		}
		for _, u := range ups {
			if err := up.AbortUpload(u); err != nil {
				return err
			}
			logger.Info("aborted an upload the crashed recorder left in flight", "file", up.Path(f), "upload", u.ID)
		}
	}
	return nil
}

// settlement is the state of one SettleUploads.
type settlement struct {
	up     Uploader
	pub    *logrec.Published
	logger *slog.Logger
	// published caches what the bucket holds; recorded are the files
	// with an upload in a marker, lost those of them whose upload is
	// gone.
	published, recorded, lost map[string]bool
}

// exists reports whether the bucket holds f, asking once.
func (s *settlement) exists(f string) (bool, error) {
	if ok, seen := s.published[f]; seen {
		return ok, nil
	}
	ok, err := s.up.Exists(f)
	if err != nil {
		return false, err
	}
	s.published[f] = ok
	return ok, nil
}

// takeBack takes back, until none is left, the writes with a missing
// file that no recorded upload will publish (a small file not put, or
// one whose upload is lost): their published files are deleted and the
// writes forgotten, so that replay does them again. A file such writes
// share (a batch's episodes file) takes back the others that name it.
func (s *settlement) takeBack() error {
	for again := true; again; {
		again = false
		for _, wr := range s.pub.Writes() {
			incomplete := false
			for _, f := range wr.Files {
				ok, err := s.exists(f)
				if err != nil {
					return err
				}
				if !ok && (!s.recorded[f] || s.lost[f]) {
					incomplete = true
				}
			}
			if !incomplete {
				continue
			}
			for _, f := range wr.Files {
				if !s.published[f] {
					continue
				}
				if err := s.up.Delete(f); err != nil {
					return fmt.Errorf("take back the half published write of %s: %w", wr.Recording, err)
				}
				s.published[f] = false
				s.logger.Info("took back a file of a write a crash left half published; the write is done again whole", "file", s.up.Path(f))
			}
			for _, f := range wr.Files {
				if s.recorded[f] {
					// Its upload is not completed: aborted below.
					s.lost[f] = true
				}
			}
			s.pub.Forget(wr)
			again = true
			break
		}
	}
	return nil
}
