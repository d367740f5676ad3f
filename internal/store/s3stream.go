package store

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/logrec"
)

// Streaming: the pieces of a large part go up while it is written.
//
// A part's bytes are held in memory while the store's budget has room,
// and go up in one request (or in pieces, above PartSize) once it is
// finished. A part a caller lets stream (Stream) that would spill to the
// spool file because the budget is full, and holds a StreamPieceSize
// piece, instead begins its multipart upload then and hands each whole
// piece (its 1 MiB blocks, never copied) to a goroutine of its own, which
// uploads them in order and gives their memory back; the encoder's write
// waits for that memory rather than writing the spool file, so a large
// part costs its pieces in memory and no local disk, and its upload runs
// while it is encoded. That wait is backpressure on the encoder: while
// the service is down it lasts as long as a piece's retries (about half a
// minute by default), then the piece fails and the part with it. Sync uploads the rest, and Publish completes the
// upload as for any multipart part. A part that fits is not streamed:
// multipart costs two more requests, and on a server that keeps objects
// as files (versitygw) a copy of the pieces when it completes, which made
// a 57 MB packed file that streamed its 8 MiB pieces slower than one put
// after it was finished (BENCHMARKS.md). A part with no piece in flight
// that finds the budget full (held by other parts) spills as before,
// which ends its streaming: its rest goes up from the spool file at Sync.
//
// The upload is created only after begin, the caller's function, returns:
// the recorder logs a logrec.TypeUploadBegun record naming the part and
// syncs it there, so that no upload is in flight that its log cannot
// name by exact key (settle.go's step 1, taken early). A failure of begin
// or of a piece fails the part at Sync, which aborts its upload.

// streamAhead bounds the pieces handed to a part's uploading goroutine
// and not yet uploaded.
const streamAhead = 2

// Streamer is a store whose large parts can go up while they are
// written (S3).
type Streamer interface {
	// Stream lets part p, created by this store and not yet written,
	// upload its pieces while it is written; begin is called once,
	// before its upload is created.
	Stream(p Part, begin func() error)
}

var _ Streamer = (*S3)(nil)

// Stream implements Streamer. Parts of another store are left as they
// are.
func (s *S3) Stream(p Part, begin func() error) {
	if sp, ok := p.(*s3Part); ok && sp.s == s && sp.size == 0 && s.opts.StreamPieceSize > 0 {
		sp.begin = begin
	}
}

// pieceJob is one piece handed to a part's uploading goroutine.
type pieceJob struct {
	num    int32
	blocks chunks
}

// streamer is the uploading goroutine of a streamed part.
type streamer struct {
	jobs chan pieceJob
	done chan struct{}
	err  error // the first failure; read after done
	n    int32 // pieces handed over
	// pending counts the pieces handed over and not yet given back;
	// freed gets a token as each is.
	pending atomic.Int32
	freed   chan struct{}
}

// reserve takes n bytes of the store's memory budget for the part. When
// the budget is full, a part let stream that holds a piece starts
// streaming, and a streaming one hands its whole pieces over and waits
// for those in flight to give memory back; false when there is none to
// wait for (the part then spills).
func (p *s3Part) reserve(n int64) bool {
	for !p.s.reserve(n) {
		if p.begin == nil {
			return false
		}
		if p.stream == nil && p.size-p.base >= p.s.opts.StreamPieceSize {
			p.startStream()
		}
		if p.stream == nil {
			return false
		}
		p.streamPieces()
		if p.stream.pending.Load() == 0 {
			return false
		}
		select {
		case <-p.stream.freed:
		case <-p.stream.done:
			return false
		}
	}
	return true
}

// streamPieces hands the part's whole pieces to its uploading goroutine,
// at most streamAhead waiting.
func (p *s3Part) streamPieces() {
	piece := p.s.opts.StreamPieceSize
	for p.size-p.base >= piece && p.stream.n < maxPieces/2 {
		k := int(piece / chunkSize)
		job := pieceJob{num: p.stream.n + 1, blocks: p.mem[:k:k]}
		p.stream.pending.Add(1)
		select {
		case p.stream.jobs <- job:
		default:
			p.stream.pending.Add(-1)
			return // streamAhead pieces wait: these bytes go later
		}
		p.stream.n++
		p.mem = p.mem[k:]
		p.base += piece
		p.held -= piece // the goroutine gives it back once uploaded
	}
}

// startStream starts the part's uploading goroutine.
func (p *s3Part) startStream() {
	st := &streamer{jobs: make(chan pieceJob, streamAhead), done: make(chan struct{}), freed: make(chan struct{}, streamAhead)}
	p.stream = st
	p.upload = &logrec.Upload{File: p.rel}
	up := p.upload
	go func() {
		defer close(st.done)
		st.err = p.begin()
		if st.err == nil {
			st.err = p.s.createUpload(up)
		}
		for job := range st.jobs {
			if st.err == nil {
				var pc logrec.Piece
				pc, st.err = p.s.uploadPiece(up, job.num, job.blocks, job.blocks.size())
				up.Pieces = append(up.Pieces, pc)
			}
			p.s.memUsed.Add(-job.blocks.size())
			job.blocks.free()
			st.pending.Add(-1)
			select {
			case st.freed <- struct{}{}:
			default:
			}
		}
		if st.err != nil {
			st.err = fmt.Errorf("store: upload %s while it was written: %w", p.Name(), st.err)
		}
	}()
}

// stopStream ends the part's streaming: it waits for the pieces handed
// over and returns the first failure.
func (p *s3Part) stopStream() error {
	st := p.stream
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
	default:
		close(st.jobs)
		<-st.done
	}
	return st.err
}

// createUpload begins the multipart upload up of up.File.
func (s *S3) createUpload(up *logrec.Upload) error {
	key := s.loc.Key(up.File)
	s.count(OpCreateUpload, key)
	out, err := s.client.CreateMultipartUpload(s.ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(key),
	})
	if err != nil {
		return fmt.Errorf("store: begin the upload of %s: %w", s.url(key), err)
	}
	up.ID = aws.ToString(out.UploadId)
	return nil
}

// uploadPiece uploads piece num of up: size bytes of body.
func (s *S3) uploadPiece(up *logrec.Upload, num int32, body io.ReaderAt, size int64) (logrec.Piece, error) {
	key := s.loc.Key(up.File)
	s.count(OpUploadPiece, key)
	out, err := s.client.UploadPart(s.ctx, &s3.UploadPartInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(key), UploadId: aws.String(up.ID),
		PartNumber: aws.Int32(num), Body: io.NewSectionReader(body, 0, size), ContentLength: aws.Int64(size),
	}, s.bodyOpts...)
	if err != nil {
		return logrec.Piece{}, fmt.Errorf("store: upload piece %d of %s: %w", num, s.url(key), err)
	}
	return logrec.Piece{Number: num, ETag: aws.ToString(out.ETag), Size: size}, nil
}

// uploadRest uploads the part's bytes not yet in a piece ([base, size),
// held in memory or in the spool file) as the next pieces of its upload,
// PartSize each, Concurrency at a time.
func (p *s3Part) uploadRest() error {
	s, up := p.s, p.upload
	rest := p.size - p.base
	if rest == 0 {
		return nil
	}
	f, done, err := p.body()
	if err != nil {
		return err
	}
	defer done()
	n := int((rest + s.opts.PartSize - 1) / s.opts.PartSize)
	first := len(up.Pieces)
	up.Pieces = append(up.Pieces, make([]logrec.Piece, n)...)
	errs := make([]error, n)
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for i := range n {
		off := int64(i) * s.opts.PartSize
		size := min(s.opts.PartSize, rest-off)
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			up.Pieces[first+i], errs[i] = s.uploadPiece(up, int32(first+i+1), io.NewSectionReader(f, off, size), size)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
