package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// S3Options configures an S3 store. The zero value is the default.
type S3Options struct {
	// PartSize is the size of each piece of a multipart upload, and the
	// size up to which a part is published by one PutObject. At least
	// MinPartSize (S3's least size of a piece but the last); 0 means
	// DefaultPartSize.
	PartSize int64
	// StreamPieceSize is the size of the pieces a part a caller lets
	// stream (Stream) uploads while it is written, once it has outgrown
	// the memory budget (s3stream.go); rounded up to whole MiB, at least
	// MinPartSize. 0 means DefaultStreamPieceSize; < 0, no part streams.
	StreamPieceSize int64
	// Concurrency bounds the requests one Sync or Publish has in flight;
	// 0 means 8.
	Concurrency int
	// MaxAttempts bounds the attempts of one request (the first one
	// included); 0 means 10. MaxBackoff caps the wait between two;
	// 0 means 5 s. The defaults wait out about half a minute of outage.
	MaxAttempts int
	MaxBackoff  time.Duration
	// VirtualHosted addresses a configured endpoint as bucket.host rather
	// than host/bucket.
	VirtualHosted bool
	// MemoryBytes bounds the bytes of unpublished parts the store holds in
	// memory; a part that does not fit goes to a spool file in SpoolDir.
	// 0 means DefaultMemoryBytes; < 0, none (every part is spooled).
	MemoryBytes int64
	// SpoolDir is the local directory a part's bytes are written to until
	// it is uploaded when they do not fit in memory; "" means
	// os.TempDir(). The files are not synced: they are a buffer, not a
	// copy (see the package doc).
	SpoolDir string
	// FS is the file system of SpoolDir; nil means vfs.Default.
	FS vfs.FS
	// Logger receives what the store settles on its own (an upload it
	// aborts after a failure); nil discards it.
	Logger *slog.Logger
}

// Sizes of multipart pieces. Part of S3's protocol.
const (
	// MinPartSize is the least size S3 accepts for a piece of a multipart
	// upload but its last.
	MinPartSize = 5 << 20
	// DefaultPartSize is S3Options.PartSize's default: a part up to 64 MiB
	// (every episode of a control task, most packed session parts) costs
	// one request. A multipart upload costs two more requests and, on
	// servers that keep objects as files (versitygw), a copy of the
	// pieces when it completes: 40 MiB parts went up at 0.65x the
	// MB/s of one put in 16 MiB pieces (BenchmarkS3Publish).
	DefaultPartSize = 64 << 20
	// DefaultStreamPieceSize is S3Options.StreamPieceSize's default: the
	// memory a streaming part holds is about streamAhead+1 of them.
	DefaultStreamPieceSize = 8 << 20
	// DefaultMemoryBytes is S3Options.MemoryBytes's default.
	DefaultMemoryBytes = 64 << 20
	// maxPieces is S3's limit of pieces in one upload.
	maxPieces = 10000
)

func (o *S3Options) fill() error {
	if o.PartSize == 0 {
		o.PartSize = DefaultPartSize
	}
	if o.PartSize < MinPartSize {
		return fmt.Errorf("store: a part size of %d bytes is below S3's least piece, %d", o.PartSize, MinPartSize)
	}
	switch {
	case o.StreamPieceSize == 0:
		o.StreamPieceSize = DefaultStreamPieceSize
	case o.StreamPieceSize > 0:
		o.StreamPieceSize = (max(o.StreamPieceSize, MinPartSize) + chunkSize - 1) / chunkSize * chunkSize
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = defaultMaxAttempts
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = defaultMaxBackoff
	}
	switch {
	case o.MemoryBytes == 0:
		o.MemoryBytes = DefaultMemoryBytes
	case o.MemoryBytes < 0:
		o.MemoryBytes = 0
	}
	if o.SpoolDir == "" {
		o.SpoolDir = os.TempDir()
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// S3 is the Store of a ROOT under a bucket prefix of an S3-compatible
// service (see the package doc). It is safe for concurrent use.
type S3 struct {
	client *s3.Client
	// bodyOpts are the options of the requests that carry a part's bytes
	// (payloadOptions).
	bodyOpts []func(*s3.Options)
	loc      Location
	opts     S3Options
	ctx      context.Context
	id       string // names this store's spool files
	root     string // as OpenReader was given it, for Root

	seq     atomic.Int64
	memUsed atomic.Int64 // bytes of parts held in memory
	// all counts every request; mine those of no single recording, recs
	// those of each recording, by its hive directory (see requests.go).
	all, mine counts
	recMu     sync.Mutex
	recs      map[string]*counts

	mu   sync.Mutex
	made map[string]bool // partitions this store started a part in
}

var _ Store = (*S3)(nil)

// NewS3 returns the store of loc on the service cfg configures (see
// LoadS3 for the addressing). Every request runs under ctx.
func NewS3(ctx context.Context, cfg aws.Config, loc Location, opts S3Options) (*S3, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	var id [6]byte
	rand.Read(id[:])
	s := &S3{loc: loc, opts: opts, ctx: ctx, id: hex.EncodeToString(id[:]), made: map[string]bool{}, recs: map[string]*counts{}}
	s.client = newClient(cfg, opts, s)
	s.bodyOpts = payloadOptions(cfg.BaseEndpoint)
	return s, nil
}

// Location returns the bucket and prefix of the store.
func (s *S3) Location() Location { return s.loc }

// url names a key for messages.
func (s *S3) url(key string) string { return URLScheme + s.loc.Bucket + "/" + key }

// Next implements Store: one listing of the partition's keys (a request
// per 1,000 keys). Only published parts count: an object store has no
// temp names, and the uploads a crashed writer left in flight are
// settled (completed or aborted, by exact key) before anything new is
// written.
func (s *S3) Next(p hive.Partition) (int, error) {
	prefix := s.loc.Key(p.Rel()) + "/"
	next := 0
	var token *string
	for {
		s.count(OpList, prefix)
		out, err := s.client.ListObjectsV2(s.ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(s.loc.Bucket), Prefix: aws.String(prefix),
			Delimiter: aws.String("/"), ContinuationToken: token,
		})
		if err != nil {
			return 0, fmt.Errorf("store: list %s: %w", s.url(prefix), err)
		}
		for _, o := range out.Contents {
			if n, temp, ok := hive.ParsePartName(path.Base(aws.ToString(o.Key))); ok && !temp && n >= next {
				next = n + 1
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return next, nil
		}
		token = out.NextContinuationToken
	}
}

// Create implements Store with no request: n < 0 lists the partition
// (Next). A part n that is published already is found when the part is
// published (ErrExists, from the service's If-None-Match check), not
// here, which would cost a request per part.
func (s *S3) Create(p hive.Partition, n int) (Part, error) {
	if n < 0 {
		var err error
		if n, err = s.Next(p); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.made[p.Rel()] = true
	s.mu.Unlock()
	return s.open(p, n)
}

// CreateNew implements Store with no request: part 0 of a partition
// this store has not written to. A partition another process wrote (a
// collision of recordings) is found when the part is published
// (ErrExists): an error of that recording, never an overwrite.
func (s *S3) CreateNew(p hive.Partition) (Part, error) {
	rel := p.Rel()
	s.mu.Lock()
	made := s.made[rel]
	s.made[rel] = true
	s.mu.Unlock()
	if made {
		return nil, fmt.Errorf("store: create %s: %w", s.url(s.loc.Key(rel)), ErrPartitionExists)
	}
	return s.open(p, 0)
}

// open starts part n of p, in memory.
func (s *S3) open(p hive.Partition, n int) (Part, error) {
	rel := p.File(n)
	return &s3Part{s: s, rel: rel, key: s.loc.Key(rel)}, nil
}

// reserve takes n bytes of the memory budget, if it has room.
func (s *S3) reserve(n int64) bool {
	for {
		used := s.memUsed.Load()
		if used+n > s.opts.MemoryBytes {
			return false
		}
		if s.memUsed.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// own returns the parts as this store's.
func (s *S3) own(parts []Part) ([]*s3Part, error) {
	out := make([]*s3Part, len(parts))
	for i, p := range parts {
		sp, ok := p.(*s3Part)
		if !ok || sp.s != s {
			return nil, fmt.Errorf("store: %s: %w", p.Name(), errForeign)
		}
		out[i] = sp
	}
	return out, nil
}

// Sync implements Store: the pieces of every part larger than PartSize
// are uploaded (a multipart upload, not visible until completed); a part
// of PartSize or less stays in its spool file until Publish puts it
// whole. A part whose upload fails is aborted and named in a
// *GroupError; the others are synced all the same.
func (s *S3) Sync(parts []Part) error {
	sps, err := s.own(parts)
	if err != nil {
		return err
	}
	for _, p := range sps {
		if p.done || !p.finished {
			for _, q := range sps {
				q.Abort()
			}
			return fmt.Errorf("store: commit %s: %w", p.Name(), errNotFinished)
		}
	}
	var ge *GroupError
	var mu sync.Mutex
	s.each(sps, func(p *s3Part) {
		if err := p.uploadPieces(); err != nil {
			p.Abort()
			mu.Lock()
			if ge == nil {
				ge = &GroupError{}
			}
			ge.Parts = append(ge.Parts, &PartError{Part: p, Path: s.url(p.key), Err: err})
			mu.Unlock()
			return
		}
		p.synced = true
	})
	if ge != nil {
		return ge
	}
	return nil
}

// Publish implements Store: each part becomes visible whole, by
// PutObject or CompleteMultipartUpload with If-None-Match: *, so a
// published object is never replaced: a name taken is a *NameTakenError
// (ErrExists) of that part. The parts of a group go up concurrently; the
// failed ones are named in a *GroupError and the others are published
// all the same.
func (s *S3) Publish(parts []Part) error {
	sps, err := s.own(parts)
	if err != nil {
		return err
	}
	for _, p := range sps {
		if !p.synced || p.done {
			return fmt.Errorf("store: publish %s: %w", p.Name(), errNotFinished)
		}
	}
	var ge *GroupError
	var mu sync.Mutex
	s.each(sps, func(p *s3Part) {
		if err := p.publish(); err != nil {
			mu.Lock()
			if ge == nil {
				ge = &GroupError{}
			}
			ge.Parts = append(ge.Parts, &PartError{Part: p, Path: s.url(p.key), Err: err})
			mu.Unlock()
		}
	})
	if ge != nil {
		return ge
	}
	return nil
}

// each runs f on every part, Concurrency at a time.
func (s *S3) each(parts []*s3Part, f func(*s3Part)) {
	if len(parts) == 1 {
		f(parts[0])
		return
	}
	sem := make(chan struct{}, s.opts.Concurrency)
	var wg sync.WaitGroup
	for _, p := range parts {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			f(p)
		}()
	}
	wg.Wait()
}

// PublishTemp implements Store: an object store has no temp names, so
// there is nothing to publish (a crashed writer's uploads are completed
// with CompleteUpload).
func (s *S3) PublishTemp(dir string, n int) error {
	return fmt.Errorf("store: publish %s: %w", s.url(s.loc.Key(path.Join(dir, hive.TempName(n)))), ErrNoTempNames)
}

// RemoveTemp implements Store: see PublishTemp (uploads are aborted with
// AbortUpload).
func (s *S3) RemoveTemp(rel string) error {
	return fmt.Errorf("store: remove %s: %w", s.url(s.loc.Key(rel)), ErrNoTempNames)
}

// SyncAll implements Store: every request that returned is durable.
func (s *S3) SyncAll() error { return nil }

// isStatus reports whether err is an HTTP response of status code.
func isStatus(err error, code int) bool {
	var st interface{ HTTPStatusCode() int }
	return errors.As(err, &st) && st.HTTPStatusCode() == code
}
