package store

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/rlrec/rlrec/internal/hive"
)

// Request counts. An S3 store counts every operation it sends, by kind
// (Op), once however often the SDK retried it, and every HTTP attempt,
// retries included. It counts them three ways: in all (Requests), for the
// recording each one touches (RequestsOf), and as its own (OwnRequests)
// when it touches no single recording. A request is a recording's when
// its key, or the prefix it lists, lies under one of the recording's
// partitions (TABLE/session_id=S/env_id=R/..., episode partitions and
// part files included) or is its claim (_rlrec/claims/session_id=S/
// env_id=R), as hive.RecordingDirOf finds it; the layout file, listings
// of ROOT or of a whole table, and reads of the state are the store's
// own. So for every kind, the counts of the recordings and the store's
// own add up to Requests.
//
// An operation is attributed where it is counted (count, with its key);
// its HTTP attempts by the key or prefix of its input, which a
// middleware of the client reads once per operation and hands to the
// HTTP client in the request's context. Counting an operation costs a
// lock and a map lookup (about 130 ns, BenchmarkCount) and allocates
// nothing but the first time a recording is seen; the context value
// costs one small allocation per operation of a recording, beside the
// SDK's own. The store keeps one entry (about 200 bytes) per recording
// it has sent a request for, for as long as it lives: a process that
// records a million recordings through one store holds about 200 MB of
// them.

// Op is a kind of request the store sends, counted by Requests. The
// numbers index Requests.Ops and are not persisted; the names (String)
// are: they are the keys of the JSON a sessions file keeps under
// rlrec.store_requests (Requests.MarshalJSON).
type Op int

// The requests the store sends.
const (
	OpPut Op = iota
	OpCreateUpload
	OpUploadPiece
	OpComplete
	OpAbort
	OpList
	OpListUploads
	OpHead
	OpGet
	OpDelete
	numOps
)

// opNames are the ops' names in metrics and in sessions files'
// rlrec.store_requests. Part of the file format: do not change them.
var opNames = [numOps]string{"put", "create_upload", "upload_part", "complete_upload", "abort_upload", "list", "list_uploads", "head", "get", "delete"}

// String is the op's name in metrics: put, upload_part, ...
func (o Op) String() string {
	if o < 0 || o >= numOps {
		return fmt.Sprintf("op(%d)", int(o))
	}
	return opNames[o]
}

// Requests counts what a store sent.
type Requests struct {
	// Ops counts operations by kind, each once however often it was
	// retried.
	Ops [numOps]int64
	// Attempts counts HTTP requests, retries included.
	Attempts int64
}

// Total is the number of operations of every kind.
func (r Requests) Total() int64 {
	var n int64
	for _, v := range r.Ops {
		n += v
	}
	return n
}

// ByOp returns the count of every op by its name (Op.String), those of
// ops not sent included: the label values of a metric by op.
func (r Requests) ByOp() map[string]int64 {
	m := make(map[string]int64, len(r.Ops))
	for op, n := range r.Ops {
		m[Op(op).String()] = n
	}
	return m
}

// Add returns the sum of r and o.
func (r Requests) Add(o Requests) Requests {
	for i := range r.Ops {
		r.Ops[i] += o.Ops[i]
	}
	r.Attempts += o.Attempts
	return r
}

// Sub returns r less o: what was sent between two counts.
func (r Requests) Sub(o Requests) Requests {
	for i := range r.Ops {
		r.Ops[i] -= o.Ops[i]
	}
	r.Attempts -= o.Attempts
	return r
}

// JSON keys of Requests besides the ops' names. Part of the file format
// (rlrec.store_requests): do not change them.
const (
	jsonTotal    = "total"
	jsonAttempts = "attempts"
)

// MarshalJSON writes r as one object: the count of each op sent, by its
// name (Op.String; the ops not sent are left out), then "total" (Total)
// and "attempts" (Attempts), in that order:
//
//	{"put":4,"list":3,"total":7,"attempts":7}
func (r Requests) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, n := range r.Ops {
		if n == 0 {
			continue
		}
		b = strconv.AppendQuote(b, opNames[i])
		b = append(b, ':')
		b = strconv.AppendInt(b, n, 10)
		b = append(b, ',')
	}
	b = fmt.Appendf(b, "%q:%d,%q:%d}", jsonTotal, r.Total(), jsonAttempts, r.Attempts)
	return b, nil
}

// UnmarshalJSON reads what MarshalJSON writes. An op name this version
// does not know (one a later version sends) is skipped, and "total" is
// not read but computed (Total); a value that is not a whole number of
// at least 0 is an error.
func (r *Requests) UnmarshalJSON(b []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("store: request counts %s: %w", b, err)
	}
	var out Requests
	for k, v := range m {
		if v < 0 {
			return fmt.Errorf("store: request counts %s: %q is negative", b, k)
		}
		if k == jsonAttempts {
			out.Attempts = v
			continue
		}
		for i, name := range opNames {
			if name == k {
				out.Ops[i] = v
			}
		}
	}
	*r = out
	return nil
}

// counts are the requests sent, as they are counted.
type counts struct {
	ops      [numOps]atomic.Int64
	attempts atomic.Int64
}

func (c *counts) load() Requests {
	var r Requests
	for i := range c.ops {
		r.Ops[i] = c.ops[i].Load()
	}
	r.Attempts = c.attempts.Load()
	return r
}

// Requests returns the counts of every request so far.
func (s *S3) Requests() Requests { return s.all.load() }

// OwnRequests returns the counts of the requests that touched no single
// recording (see the package doc's "Request counts").
func (s *S3) OwnRequests() Requests { return s.mine.load() }

// RequestsOf returns the counts of the requests rec's partitions and
// claim have had so far: zero for a recording this store sent nothing
// for. Safe for concurrent use with every request.
func (s *S3) RequestsOf(rec hive.Recording) Requests {
	s.recMu.Lock()
	c := s.recs[hive.RecordingDir(rec)]
	s.recMu.Unlock()
	if c == nil {
		return Requests{}
	}
	return c.load()
}

// RecordingRequests returns the requests st has sent for rec so far
// (RequestsOf) when st is a store in object storage (S3, or a type that
// embeds it), and nil for a ROOT on disk, which sends none.
func RecordingRequests(st Root, rec hive.Recording) *Requests {
	s, ok := st.(interface{ RequestsOf(hive.Recording) Requests })
	if !ok {
		return nil
	}
	r := s.RequestsOf(rec)
	return &r
}

// count counts an operation of kind o on key (an object's key, or the
// prefix a listing lists).
func (s *S3) count(o Op, key string) {
	s.all.ops[o].Add(1)
	s.countsOf(key).ops[o].Add(1)
}

// countsOf returns the counts of the recording key belongs to, or the
// store's own.
func (s *S3) countsOf(key string) *counts {
	rel, ok := s.loc.rel(key)
	if !ok {
		return &s.mine
	}
	dir, ok := hive.RecordingDirOf(rel)
	if !ok {
		return &s.mine
	}
	s.recMu.Lock()
	c := s.recs[dir]
	if c == nil {
		c = &counts{}
		s.recs[strings.Clone(dir)] = c
	}
	s.recMu.Unlock()
	return c
}

// rel returns the path relative to ROOT of a key under the prefix (a
// listing prefix with its trailing "/" included), and whether it is
// under it.
func (l Location) rel(key string) (string, bool) {
	if l.Prefix == "" {
		return key, true
	}
	if len(key) <= len(l.Prefix) || key[len(l.Prefix)] != '/' || key[:len(l.Prefix)] != l.Prefix {
		return "", false
	}
	return key[len(l.Prefix)+1:], true
}

// countsKey is the context key under which the attribution middleware
// hands an operation's counts to the HTTP client.
type countsKey struct{}

// attribute is the client middleware that finds, once per operation,
// the counts its HTTP attempts go to (from the key or prefix of its
// input) and puts them in the context the attempts are sent with.
func (s *S3) attribute(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("rlrecRequestCounts",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if key, ok := inputKey(in.Parameters); ok {
				if c := s.countsOf(key); c != &s.mine {
					ctx = context.WithValue(ctx, countsKey{}, c)
				}
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// inputKey returns the object key, or the listing prefix, of an
// operation's input.
func inputKey(in any) (string, bool) {
	switch v := in.(type) {
	case *s3.PutObjectInput:
		return aws.ToString(v.Key), true
	case *s3.GetObjectInput:
		return aws.ToString(v.Key), true
	case *s3.HeadObjectInput:
		return aws.ToString(v.Key), true
	case *s3.DeleteObjectInput:
		return aws.ToString(v.Key), true
	case *s3.CreateMultipartUploadInput:
		return aws.ToString(v.Key), true
	case *s3.UploadPartInput:
		return aws.ToString(v.Key), true
	case *s3.CompleteMultipartUploadInput:
		return aws.ToString(v.Key), true
	case *s3.AbortMultipartUploadInput:
		return aws.ToString(v.Key), true
	case *s3.ListObjectsV2Input:
		return aws.ToString(v.Prefix), true
	case *s3.ListMultipartUploadsInput:
		return aws.ToString(v.Prefix), true
	}
	return "", false
}

// countingClient counts every HTTP request it sends, retries included:
// in all, and in the counts the request's context carries (attribute),
// or the store's own.
type countingClient struct {
	next aws.HTTPClient
	s    *S3
}

func (c countingClient) Do(r *http.Request) (*http.Response, error) {
	c.s.all.attempts.Add(1)
	if rc, ok := r.Context().Value(countsKey{}).(*counts); ok {
		rc.attempts.Add(1)
	} else {
		c.s.mine.attempts.Add(1)
	}
	return c.next.Do(r)
}
