package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// Object is an open part file: random access to its bytes, and its size.
// Its ReadAt is safe for concurrent use.
type Object interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Reader reads a ROOT, on disk or in a bucket: every reader (datasets,
// the checker, inspect) lists, opens and reads state through one, so no
// reader builds a path under ROOT or knows which backend holds it.
type Reader interface {
	// Root is the ROOT as given: a directory or an s3:// URL.
	Root() string
	// List lists the part files of every table (hive.List on disk,
	// hive.ListObjects of the keys in a bucket).
	List() (*hive.Listing, error)
	// Open opens the part file rel (relative to ROOT, "/" separators);
	// size is its size when the caller knows it from List (-1: ask,
	// which costs a request in a bucket).
	Open(rel string, size int64) (Object, error)
	// ReadState reads the file name under the recorder's state
	// (hive.StateDir); an error wrapping fs.ErrNotExist when it is
	// missing.
	ReadState(name string) ([]byte, error)
	// Path is how rel is named in messages and to other tools: a file
	// path, or an s3:// URL.
	Path(rel string) string
}

var (
	_ Reader = (*FS)(nil)
	_ Reader = (*S3)(nil)
)

// ReadLayout returns the steps layout of a ROOT from its layout file; an
// error wrapping fs.ErrNotExist when the ROOT has none (nothing recorded
// yet, or written before schema version 2), hive.ErrSchemaVersion or
// hive.ErrBadLayout when it names what this rlrec cannot read.
func ReadLayout(r Reader) (hive.Layout, error) {
	b, err := r.ReadState(hive.LayoutName)
	if err != nil {
		return "", err
	}
	l, err := hive.ParseLayoutFile(b)
	if err != nil {
		return "", fmt.Errorf("store: %s: %w", r.Path(path.Join(hive.StateDir, hive.LayoutName)), err)
	}
	return l, nil
}

// OpenReader returns the reader of root: a directory, or s3://bucket/prefix
// through the standard AWS configuration chain (LoadS3). A directory must
// exist; a bucket prefix is not checked (an empty one lists as empty).
func OpenReader(ctx context.Context, root string) (Reader, error) {
	if IsURL(root) {
		s, err := LoadS3(ctx, root, S3Options{})
		if err != nil {
			return nil, err
		}
		s.root = root
		return s, nil
	}
	info, err := vfs.Default.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("store: open %s: not a directory", root)
	}
	return NewFS(vfs.Default, root), nil
}

// OpenPath opens one part file by its path or s3:// URL, as a Reader's
// Path names it. The S3 client of each bucket is made once per process
// (and configuration environment) and shared.
func OpenPath(ctx context.Context, name string) (Object, error) {
	if !IsURL(name) {
		return openFile(vfs.Default, name, -1)
	}
	loc, err := ParseURL(name)
	if err != nil {
		return nil, err
	}
	s, err := bucketReader(ctx, loc.Bucket)
	if err != nil {
		return nil, err
	}
	return s.Open(loc.Prefix, -1)
}

// bucketReaders holds the store of each bucket's top, by bucket and the
// environment the AWS configuration chain reads (configEnv): a process
// that changes its endpoint or credentials gets a new client.
var bucketReaders sync.Map

// configEnv are the environment variables that change which service and
// credentials LoadS3 finds.
var configEnv = []string{
	"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
	"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
}

func bucketReader(ctx context.Context, bucket string) (*S3, error) {
	key := bucket
	for _, k := range configEnv {
		key += "\x00" + os.Getenv(k)
	}
	if s, ok := bucketReaders.Load(key); ok {
		return s.(*S3), nil
	}
	s, err := LoadS3(context.WithoutCancel(ctx), URLScheme+bucket, S3Options{})
	if err != nil {
		return nil, err
	}
	got, _ := bucketReaders.LoadOrStore(key, s)
	return got.(*S3), nil
}

// Root implements Reader.
func (s *FS) Root() string { return s.root }

// List implements Reader (hive.List).
func (s *FS) List() (*hive.Listing, error) { return hive.List(s.fsys, s.root) }

// Path implements Reader: the file's path.
func (s *FS) Path(rel string) string { return filepath.Join(s.root, filepath.FromSlash(rel)) }

// Open implements Reader.
func (s *FS) Open(rel string, size int64) (Object, error) {
	return openFile(s.fsys, s.Path(rel), size)
}

// ReadState implements Reader.
func (s *FS) ReadState(name string) ([]byte, error) {
	p := filepath.Join(s.root, hive.StateDir, name)
	f, err := s.fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("store: read %s: %w", p, err)
	}
	return b, nil
}

// file is an Object of a file system.
type file struct {
	vfs.File
	size int64
}

func (f file) Size() int64 { return f.size }

func openFile(fsys vfs.FS, name string, size int64) (Object, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if size < 0 {
		info, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		size = info.Size()
	}
	return file{File: f, size: size}, nil
}

// notExist reports whether err says a key or bucket is missing.
func notExist(err error) bool {
	var code interface{ ErrorCode() string }
	if errors.As(err, &code) {
		switch code.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket":
			return true
		}
	}
	return isStatus(err, 404)
}

// isHidden reports whether a key below ROOT lies under a hidden top
// name (the recorder's _rlrec state): listings skip them.
func isHidden(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return hive.Hidden(top)
}
