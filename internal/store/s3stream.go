package store

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Streaming: the pieces of a large part go up while it is written.
//
// A part uploaded only at Sync puts its whole upload after its encoding:
// a recording's last packed file (layout session) then waits for both in
// turn. A part a caller lets stream (Stream) instead begins its multipart
// upload once it holds StreamPieceSize*2 bytes, and from then on hands
// each StreamPieceSize of its bytes (whole 1 MiB blocks, never copied) to
// one goroutine of its own, which uploads them in order while the
// encoder writes on, and gives their memory back to the budget. Sync then
// uploads only the rest, and Publish completes the upload as for any
// multipart part. At most streamAhead pieces wait for that goroutine;
// past that, bytes stay in memory (or spill, which ends the streaming:
// the rest goes up from the spool file at Sync).
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
}

// streamPieces hands the part's whole pieces to its uploading goroutine,
// starting it when the part first holds two pieces.
func (p *s3Part) streamPieces() {
	piece := p.s.opts.StreamPieceSize
	if p.stream == nil && p.size-p.base < 2*piece {
		return
	}
	for p.size-p.base >= piece && (p.stream == nil || p.stream.n < maxPieces/2) {
		if p.stream == nil {
			p.startStream()
		}
		k := int(piece / chunkSize)
		job := pieceJob{num: p.stream.n + 1, blocks: p.mem[:k:k]}
		select {
		case p.stream.jobs <- job:
		default:
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
	st := &streamer{jobs: make(chan pieceJob, streamAhead), done: make(chan struct{})}
	p.stream = st
	p.upload = &Upload{Key: p.key}
	up := p.upload
	go func() {
		defer close(st.done)
		st.err = p.begin()
		if st.err == nil {
			st.err = p.s.createUpload(up)
		}
		for job := range st.jobs {
			if st.err == nil {
				var pc Piece
				pc, st.err = p.s.uploadPiece(up, job.num, job.blocks, job.blocks.size())
				up.Pieces = append(up.Pieces, pc)
			}
			p.s.memUsed.Add(-job.blocks.size())
			job.blocks.free()
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

// createUpload begins the multipart upload up of up.Key.
func (s *S3) createUpload(up *Upload) error {
	s.count(OpCreateUpload)
	out, err := s.client.CreateMultipartUpload(s.ctx, &s3.CreateMultipartUploadInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(up.Key),
	})
	if err != nil {
		return fmt.Errorf("store: begin the upload of %s: %w", s.url(up.Key), err)
	}
	up.ID = aws.ToString(out.UploadId)
	return nil
}

// uploadPiece uploads piece num of up: size bytes of body.
func (s *S3) uploadPiece(up *Upload, num int32, body io.ReaderAt, size int64) (Piece, error) {
	s.count(OpUploadPiece)
	out, err := s.client.UploadPart(s.ctx, &s3.UploadPartInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(up.Key), UploadId: aws.String(up.ID),
		PartNumber: aws.Int32(num), Body: io.NewSectionReader(body, 0, size), ContentLength: aws.Int64(size),
	}, s.bodyOpts...)
	if err != nil {
		return Piece{}, fmt.Errorf("store: upload piece %d of %s: %w", num, s.url(up.Key), err)
	}
	return Piece{Number: num, ETag: aws.ToString(out.ETag), Size: size}, nil
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
	up.Pieces = append(up.Pieces, make([]Piece, n)...)
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
