package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"

	"github.com/rlrec/rlrec/internal/hive"
)

// URLScheme is the scheme of a ROOT in object storage: s3://bucket/prefix.
const URLScheme = "s3://"

// Location is a bucket and a key prefix: the ROOT s3://Bucket/Prefix.
type Location struct {
	Bucket string
	// Prefix has no leading or trailing "/"; empty for the bucket's top.
	Prefix string
}

// IsURL reports whether root names object storage (s3://...) rather than
// a directory.
func IsURL(root string) bool { return strings.HasPrefix(root, URLScheme) }

// ParseURL parses s3://bucket[/prefix]. Slashes after the prefix are
// dropped; empty segments, "." and ".." inside it are refused, since a
// reader listing the bucket would see other keys than the writer wrote.
func ParseURL(root string) (Location, error) {
	rest, ok := strings.CutPrefix(root, URLScheme)
	if !ok {
		return Location{}, fmt.Errorf("%w %q: want %sbucket/prefix", ErrBadURL, root, URLScheme)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("%w %q: no bucket", ErrBadURL, root)
	}
	prefix = strings.TrimRight(prefix, "/")
	if prefix != "" {
		for _, seg := range strings.Split(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				return Location{}, fmt.Errorf("%w %q: the prefix has an empty, \".\" or \"..\" segment", ErrBadURL, root)
			}
		}
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// String is the location's URL.
func (l Location) String() string {
	if l.Prefix == "" {
		return URLScheme + l.Bucket
	}
	return URLScheme + l.Bucket + "/" + l.Prefix
}

// Key returns the object key of rel, a path relative to ROOT with "/"
// separators.
func (l Location) Key(rel string) string {
	if l.Prefix == "" {
		return rel
	}
	return l.Prefix + "/" + rel
}

// Retry policy of every request (see S3Options).
const (
	defaultMaxAttempts = 10
	defaultMaxBackoff  = 5 * time.Second
	// attemptTimeout bounds one HTTP attempt, body included: a server
	// that stops answering is retried, not waited for forever.
	attemptTimeout = 5 * time.Minute
)

// LoadS3 opens the store of root (s3://bucket/prefix) with the standard
// AWS configuration chain: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION, AWS_PROFILE and the shared config and
// credentials files, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_S3. An endpoint
// set so (MinIO, versitygw, Ceph, R2, ...) is addressed path-style
// (http://host/bucket/key), which every S3-compatible server accepts;
// AWS itself, without an endpoint, virtual-hosted. Without a region,
// us-east-1.
func LoadS3(ctx context.Context, root string, opts S3Options) (*S3, error) {
	loc, err := ParseURL(root)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: load the AWS configuration for %s: %w", root, err)
	}
	return NewS3(ctx, cfg, loc, opts)
}

// newClient makes the S3 client of store s: the store's retry policy,
// every operation's HTTP attempts counted in s (see requests.go).
func newClient(cfg aws.Config, opts S3Options, s *S3) *s3.Client {
	var hc aws.HTTPClient = awshttp.NewBuildableClient().WithTimeout(attemptTimeout)
	if cfg.HTTPClient != nil {
		hc = cfg.HTTPClient
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.HTTPClient = countingClient{next: hc, s: s}
		o.APIOptions = append(o.APIOptions, s.attribute)
		// Library code writes nothing to stderr: errors are returned.
		o.Logger = logging.Nop{}
		o.Retryer = newRetryer(opts)
		if o.BaseEndpoint != nil && !opts.VirtualHosted {
			o.UsePathStyle = true
		}
	})
}

// newRetryer retries with exponential backoff and jitter, up to
// MaxAttempts, on what the SDK retries by default (500, 502, 503, 504,
// throttling, connection errors) and on every other 5xx but 501, on 429,
// and on 409 (a conditional write racing another: S3 asks for a retry).
// No client-side retry quota: an outage of the server is waited out for
// as long as the attempts last, however many requests are in flight.
func newRetryer(opts S3Options) aws.Retryer {
	return retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts = opts.MaxAttempts
		o.MaxBackoff = opts.MaxBackoff
		o.RateLimiter = ratelimit.None
		o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
			var st interface{ HTTPStatusCode() int }
			if !errors.As(err, &st) {
				return aws.UnknownTernary
			}
			switch c := st.HTTPStatusCode(); {
			case c == http.StatusConflict, c == http.StatusTooManyRequests:
				return aws.TrueTernary
			case c >= 500 && c != http.StatusNotImplemented:
				return aws.TrueTernary
			}
			return aws.UnknownTernary
		}))
	})
}

// payloadOptions returns the options of the requests that carry a
// part's bytes (PutObject, UploadPart) to endpoint (nil: AWS itself).
// Over TLS and on loopback the body is sent as UNSIGNED-PAYLOAD: the
// signature covers the request's headers, not a SHA-256 of every byte
// computed by the client and again by the service, which made a 57 MB
// put 1.5x slower on loopback. What the body hash guards against is a
// change in transit: TLS guards against that already, and loopback has
// no transit. Over plain HTTP to another host the body stays signed.
func payloadOptions(endpoint *string) []func(*s3.Options) {
	if endpoint != nil && !unsignedPayloadSafe(*endpoint) {
		return nil
	}
	return []func(*s3.Options){s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)}
}

// unsignedPayloadSafe reports whether endpoint is reached over TLS or on
// this machine (a loopback address or localhost).
func unsignedPayloadSafe(endpoint string) bool {
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// DefaultStateDir returns the local directory that holds the recorder's
// state (log, lock, spool files) of a ROOT in object storage when no
// --log-dir is given: UserCacheDir/rlrec/roots/root=ENCODED, ENCODED the
// URL (bucket and prefix, normalized) percent-encoded as a partition
// value is (hive.EncodeValue: one safe directory name, cut and hashed
// when long). Each ROOT URL gets its own; two machines recording into one
// prefix each have their own.
func DefaultStateDir(root string) (string, error) {
	loc, err := ParseURL(root)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("store: no cache directory for the state of %s (%w); give a log directory", root, err)
	}
	return filepath.Join(cache, "rlrec", "roots", hive.Segment("root", loc.String())), nil
}
