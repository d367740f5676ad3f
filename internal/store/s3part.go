package store

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/vfs"
)

// s3Part is a Part of S3: its bytes are held in memory while the store's
// memory budget has room, else in a local spool file, and go from there
// to the service at Sync (the pieces of a large part) or Publish. It is
// not safe for concurrent use.
type s3Part struct {
	s        *S3
	rel, key string
	size     int64

	mem   chunks   // the bytes, while they are held in memory
	held  int64    // bytes of the memory budget mem holds
	spool string   // the spool file, once the bytes spilled to one
	f     vfs.File // the spool file while written; nil after Finish

	upload *logrec.Upload // the multipart upload of a large part, once created

	// Streaming (s3stream.go): begin is set when the part may upload
	// its pieces while written; stream is its uploading goroutine once
	// started; base counts the bytes handed to it, which mem and the
	// spool file no longer hold (they hold [base, size)).
	begin  func() error
	stream *streamer
	base   int64

	finished bool // Finish returned
	synced   bool // Sync went through
	done     bool // published or aborted
}

func (p *s3Part) Write(b []byte) (int, error) {
	if p.done || p.finished {
		return 0, ErrClosed
	}
	// A block at a time, so that a large write (a column chunk) fills
	// the budget before it spills, and a streaming part can hand over its
	// pieces and wait for memory in between.
	written := 0
	for p.spool == "" && len(b) > 0 {
		k := min(len(b), chunkSize)
		if !p.reserve(int64(k)) {
			if err := p.spill(); err != nil {
				return written, err
			}
			break
		}
		p.mem.write(b[:k])
		p.held += int64(k)
		p.size += int64(k)
		written += k
		b = b[k:]
		if p.stream != nil {
			p.streamPieces()
		}
	}
	if len(b) == 0 {
		return written, nil
	}
	n, err := p.f.Write(b)
	p.size += int64(n)
	if err != nil {
		return written + n, fmt.Errorf("store: write the spool file %s of %s: %w", p.spool, p.s.url(p.key), err)
	}
	return written + n, nil
}

// spill moves the bytes held in memory to a new spool file.
func (p *s3Part) spill() error {
	s := p.s
	name := filepath.Join(s.opts.SpoolDir, fmt.Sprintf(".rlrec-%s-%d.spool", s.id, s.seq.Add(1)))
	f, err := s.opts.FS.Create(name)
	if err != nil {
		return fmt.Errorf("store: create a spool file for %s: %w", p.Name(), err)
	}
	p.spool, p.f = name, f
	for _, c := range p.mem {
		if _, err := f.Write(c); err != nil {
			return fmt.Errorf("store: write the spool file %s of %s: %w", name, p.Name(), err)
		}
	}
	p.releaseMem()
	return nil
}

// releaseMem gives the memory the part holds back to the budget.
func (p *s3Part) releaseMem() {
	p.s.memUsed.Add(-p.held)
	p.mem.free()
	p.mem, p.held = nil, 0
}

// release drops the part's bytes: its memory and its spool file, once
// its uploading goroutine, if any, is done.
func (p *s3Part) release() error {
	p.stopStream()
	p.releaseMem()
	if p.f != nil {
		p.f.Close()
		p.f = nil
	}
	if p.spool != "" {
		if err := p.s.opts.FS.Remove(p.spool); err != nil {
			return fmt.Errorf("store: remove the spool file %s: %w", p.spool, err)
		}
	}
	return nil
}

// body returns the part's bytes not yet in a piece ([base, size), at
// offset 0) for reading, and what closes it.
func (p *s3Part) body() (io.ReaderAt, func(), error) {
	if p.spool == "" {
		return p.mem, func() {}, nil
	}
	f, err := p.s.opts.FS.Open(p.spool)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open the spool file %s of %s: %w", p.spool, p.Name(), err)
	}
	return f, func() { f.Close() }, nil
}

// Name is the object's URL.
func (p *s3Part) Name() string { return p.s.url(p.key) }
func (p *s3Part) Rel() string  { return p.rel }

// Finish closes the spool file, if the part has one.
func (p *s3Part) Finish() error {
	if p.done || p.finished {
		return ErrClosed
	}
	if p.f != nil {
		err := p.f.Close()
		p.f = nil
		if err != nil {
			p.done = true
			p.release()
			return fmt.Errorf("store: close the spool file %s of %s: %w", p.spool, p.Name(), err)
		}
	}
	if n := p.pieces(); n > maxPieces {
		p.done = true
		p.release()
		return fmt.Errorf("store: %s: %d bytes would take %d pieces of %d bytes, more than S3's %d: raise the part size", p.Name(), p.size, n, p.s.opts.PartSize, maxPieces)
	}
	p.finished = true
	return nil
}

// Abort discards the part: its bytes, and its multipart upload if one
// was begun. A no-op once published or aborted.
func (p *s3Part) Abort() error {
	if p.done {
		return nil
	}
	p.done = true
	var errs []error
	p.stopStream()
	if p.upload != nil && p.upload.ID != "" {
		if err := p.s.AbortUpload(*p.upload); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.release(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// multipart reports whether the part is uploaded in pieces: it is larger
// than PartSize, or it streams them.
func (p *s3Part) multipart() bool { return p.size > p.s.opts.PartSize || p.stream != nil }

// pieces is the number of requests its bytes take: its streamed pieces
// and those of the rest, or 1.
func (p *s3Part) pieces() int64 {
	var n int64
	if p.stream != nil {
		n = int64(p.stream.n)
	}
	return n + max(1, (p.size-p.base+p.s.opts.PartSize-1)/p.s.opts.PartSize)
}

// uploadPieces uploads the pieces of a large part: those streamed while
// it was written are waited for, then the multipart upload is begun if
// it was not, and the rest is uploaded (uploadRest). A small part needs
// nothing.
func (p *s3Part) uploadPieces() error {
	if err := p.stopStream(); err != nil {
		return err
	}
	if p.upload == nil {
		if !p.multipart() {
			return nil
		}
		up := &logrec.Upload{File: p.rel}
		if err := p.s.createUpload(up); err != nil {
			return err
		}
		p.upload = up
	}
	return p.uploadRest()
}

// publish makes the part visible, never replacing an object.
func (p *s3Part) publish() error {
	p.synced, p.done = false, true
	defer p.release()
	if p.upload != nil {
		return p.s.CompleteUpload(*p.upload)
	}
	s := p.s
	f, done, err := p.body()
	if err != nil {
		return err
	}
	defer done()
	s.count(OpPut, p.key)
	_, err = s.client.PutObject(s.ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(p.key), IfNoneMatch: aws.String("*"),
		Body: io.NewSectionReader(f, 0, p.size), ContentLength: aws.Int64(p.size),
	}, s.bodyOpts...)
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("store: put %s: %w", p.Name(), err)
	}
	// Taken: by another writer, or by this put itself when an earlier
	// attempt went through and its reply was lost.
	h := md5.New()
	if _, rerr := io.Copy(h, io.NewSectionReader(f, 0, p.size)); rerr == nil && s.hasETag(p.key, hex.EncodeToString(h.Sum(nil))) {
		return nil
	}
	return &NameTakenError{URL: p.Name(), Err: err}
}

// hasETag reports whether the object key exists with the ETag etag (its
// MD5 for a single put, as S3 and versitygw compute it).
func (s *S3) hasETag(key, etag string) bool {
	s.count(OpHead, key)
	out, err := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)})
	return err == nil && strings.Trim(aws.ToString(out.ETag), `"`) == etag
}

// PendingUpload returns the multipart upload of a part that Sync
// uploaded in pieces, for the caller to record before it publishes the
// part (the log's record of it: logrec.Upload, the one type of an upload
// in flight, its File relative to ROOT); false for a part published by
// one put (or of another store).
func (s *S3) PendingUpload(part Part) (logrec.Upload, bool) {
	p, ok := part.(*s3Part)
	if !ok || p.s != s || p.upload == nil || !p.synced {
		return logrec.Upload{}, false
	}
	return *p.upload, true
}

// CompleteUpload completes u with If-None-Match: *: the object appears
// whole, or the name is taken (*NameTakenError) and u is aborted, so that
// no incomplete upload is left. u.File is the object's path relative to
// ROOT, as the log recorded it.
func (s *S3) CompleteUpload(u logrec.Upload) error {
	key := s.loc.Key(u.File)
	parts := make([]types.CompletedPart, len(u.Pieces))
	for i, pc := range u.Pieces {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(pc.Number), ETag: aws.String(pc.ETag)}
	}
	s.count(OpComplete, key)
	_, err := s.client.CompleteMultipartUpload(s.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(key), UploadId: aws.String(u.ID),
		IfNoneMatch: aws.String("*"), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	if err == nil {
		return nil
	}
	taken := isStatus(err, http.StatusPreconditionFailed)
	if taken || isStatus(err, http.StatusNotFound) {
		// A lost reply: the retry finds the object done (412) or the
		// upload gone (404, NoSuchUpload), and the object is ours.
		if s.hasETag(key, multipartETag(u)) {
			return nil
		}
	}
	if !taken {
		return fmt.Errorf("store: complete the upload of %s: %w", s.url(key), err)
	}
	if aerr := s.AbortUpload(u); aerr != nil {
		s.opts.Logger.Warn("could not abort the upload of a name taken", "object", s.url(key), "upload", u.ID, "err", aerr)
	}
	return &NameTakenError{URL: s.url(key), Err: err}
}

// multipartETag is the ETag S3 gives the object u completes: the MD5 of
// its pieces' MD5s, a dash and their count.
func multipartETag(u logrec.Upload) string {
	var sums []byte
	for _, pc := range u.Pieces {
		b, err := hex.DecodeString(strings.Trim(pc.ETag, `"`))
		if err != nil || len(b) != md5.Size {
			return ""
		}
		sums = append(sums, b...)
	}
	sum := md5.Sum(sums)
	return fmt.Sprintf("%s-%d", hex.EncodeToString(sum[:]), len(u.Pieces))
}

// AbortUpload aborts u (u.File relative to ROOT); an upload already gone
// is not an error.
func (s *S3) AbortUpload(u logrec.Upload) error {
	key := s.loc.Key(u.File)
	s.count(OpAbort, key)
	_, err := s.client.AbortMultipartUpload(s.ctx, &s3.AbortMultipartUploadInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(key), UploadId: aws.String(u.ID),
	})
	var nsu *types.NoSuchUpload
	if err != nil && !errors.As(err, &nsu) && !isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("store: abort the upload %s of %s: %w", u.ID, s.url(key), err)
	}
	return nil
}

// Uploads lists the multipart uploads in flight of the object rel
// (relative to ROOT), by its exact key: some services (MinIO) list
// uploads only so. The pieces are not listed.
func (s *S3) Uploads(rel string) ([]logrec.Upload, error) {
	key := s.loc.Key(rel)
	var ups []logrec.Upload
	var keyMarker, idMarker *string
	for {
		s.count(OpListUploads, key)
		out, err := s.client.ListMultipartUploads(s.ctx, &s3.ListMultipartUploadsInput{
			Bucket: aws.String(s.loc.Bucket), Prefix: aws.String(key),
			KeyMarker: keyMarker, UploadIdMarker: idMarker,
		})
		if err != nil {
			return nil, fmt.Errorf("store: list the uploads of %s: %w", s.url(key), err)
		}
		for _, u := range out.Uploads {
			if aws.ToString(u.Key) == key {
				ups = append(ups, logrec.Upload{File: rel, ID: aws.ToString(u.UploadId)})
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			return ups, nil
		}
		keyMarker, idMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}
