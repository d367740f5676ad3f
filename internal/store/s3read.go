package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
)

// Root implements Reader: the URL the store was opened with.
func (s *S3) Root() string {
	if s.root != "" {
		return s.root
	}
	return s.loc.String()
}

// Path implements Reader: the object's s3:// URL.
func (s *S3) Path(rel string) string { return s.url(s.loc.Key(rel)) }

// List implements Reader: every key under the prefix, 1,000 a request,
// classified by hive.ListObjects. Keys under hidden top names (_rlrec)
// are listed by the service but skipped.
func (s *S3) List() (*hive.Listing, error) {
	prefix := ""
	if s.loc.Prefix != "" {
		prefix = s.loc.Prefix + "/"
	}
	var objs []hive.Object
	var token *string
	for {
		s.count(OpList, prefix)
		out, err := s.client.ListObjectsV2(s.ctx, &s3.ListObjectsV2Input{
			Bucket: aws.String(s.loc.Bucket), Prefix: aws.String(prefix), ContinuationToken: token,
		})
		if err != nil {
			return nil, fmt.Errorf("store: list %s: %w", s.Root(), err)
		}
		for _, o := range out.Contents {
			rel := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if !isHidden(rel) {
				objs = append(objs, hive.Object{Rel: rel, Size: aws.ToInt64(o.Size)})
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return hive.ListObjects(objs), nil
		}
		token = out.NextContinuationToken
	}
}

// ReadState implements Reader: one GetObject of prefix/_rlrec/name.
func (s *S3) ReadState(name string) ([]byte, error) {
	key := s.loc.Key(path.Join(hive.StateDir, name))
	s.count(OpGet, key)
	out, err := s.client.GetObject(s.ctx, &s3.GetObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)})
	if err != nil {
		if notExist(err) {
			return nil, fmt.Errorf("store: read %s: %w", s.url(key), fs.ErrNotExist)
		}
		return nil, fmt.Errorf("store: read %s: %w", s.url(key), err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", s.url(key), err)
	}
	return b, nil
}

// Open implements Reader: an Object reading by ranged GETs; a size < 0
// costs a HeadObject.
func (s *S3) Open(rel string, size int64) (Object, error) {
	key := s.loc.Key(rel)
	if size < 0 {
		s.count(OpHead, key)
		out, err := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)})
		if err != nil {
			if notExist(err) {
				return nil, fmt.Errorf("store: open %s: %w", s.url(key), fs.ErrNotExist)
			}
			return nil, fmt.Errorf("store: open %s: %w", s.url(key), err)
		}
		size = aws.ToInt64(out.ContentLength)
	}
	return &object{s: s, key: key, size: size}, nil
}

// Ranged reads. A Parquet reader reads a file in many small pieces (the
// footer's length, the footer, each column chunk's pages): each read
// below blockSize fetches the aligned blocks that hold it, and the last
// cacheBlocks blocks are kept, so a footer or a column chunk costs about
// one request, not one per page. Larger reads go to the service as they
// are.
const (
	blockSize   = 1 << 20
	cacheBlocks = 8
)

// object is an Object in a bucket.
type object struct {
	s    *S3
	key  string
	size int64

	mu     sync.Mutex
	blocks []block // most recently used last
}

type block struct {
	off int64
	b   []byte
}

func (o *object) Size() int64  { return o.size }
func (o *object) Close() error { return nil }

func (o *object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("store: read %s at %d: negative offset", o.s.url(o.key), off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= o.size {
		return 0, io.EOF
	}
	want := len(p)
	if rest := o.size - off; int64(want) > rest {
		p = p[:rest]
	}
	var n int
	var err error
	if len(p) >= blockSize {
		n, err = o.get(p, off)
	} else {
		n, err = o.cached(p, off)
	}
	if err == nil && n < want {
		err = io.EOF
	}
	return n, err
}

// cached serves p from cached blocks, fetching the missing ones.
func (o *object) cached(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		at := off + int64(n)
		b, err := o.block(at / blockSize * blockSize)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], b.b[at-b.off:])
	}
	return n, nil
}

// block returns the block at off (a multiple of blockSize).
func (o *object) block(off int64) (block, error) {
	o.mu.Lock()
	for i, b := range o.blocks {
		if b.off == off {
			o.blocks = append(append(o.blocks[:i:i], o.blocks[i+1:]...), b)
			o.mu.Unlock()
			return b, nil
		}
	}
	o.mu.Unlock()
	b := block{off: off, b: make([]byte, min(blockSize, o.size-off))}
	if _, err := o.get(b.b, off); err != nil {
		return block{}, err
	}
	o.mu.Lock()
	if len(o.blocks) == cacheBlocks {
		o.blocks = append(o.blocks[:0], o.blocks[1:]...)
	}
	o.blocks = append(o.blocks, b)
	o.mu.Unlock()
	return b, nil
}

// get reads p at off with one ranged GET (retried by the client).
func (o *object) get(p []byte, off int64) (int, error) {
	s := o.s
	s.count(OpGet, o.key)
	out, err := s.client.GetObject(s.ctx, &s3.GetObjectInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(o.key),
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)),
	})
	if err != nil {
		if notExist(err) {
			err = fs.ErrNotExist
		}
		return 0, fmt.Errorf("store: read %s bytes %d-%d: %w", s.url(o.key), off, off+int64(len(p))-1, err)
	}
	defer out.Body.Close()
	n, err := io.ReadFull(out.Body, p)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("the object is shorter than the %d bytes listed; list the ROOT again", o.size)
		}
		return n, fmt.Errorf("store: read %s at %d: %w", s.url(o.key), off, err)
	}
	return n, nil
}
