package store

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
)

// Root is what a recorder writes a ROOT through: its part files (Store),
// the reads a writer makes of it (Reader: a recording's published files,
// the layout file), and the few questions and writes more a writer asks
// of the ROOT. FS and S3 implement it; the recorder is given one
// (recorder.WithStore) or makes the FS of its directory.
type Root interface {
	Store
	Reader
	// Parts lists the published part files directly in the partition
	// directory dir (relative to ROOT, "/" separators), with their sizes:
	// none when it is missing.
	Parts(dir string) ([]hive.Object, error)
	// HasPart reports whether the directory dir (relative to ROOT) or a
	// directory up to depth levels below it holds a published part file.
	HasPart(dir string, depth int) (bool, error)
	// CreateState writes the file name of the ROOT's state (under
	// hive.StateDir) whole, never replacing one: an error wrapping
	// ErrExists when it exists with other bytes. Writing the same bytes
	// again is not an error (a retry whose first reply was lost, or a
	// second writer that agrees).
	CreateState(name string, b []byte) error
}

var (
	_ Root = (*FS)(nil)
	_ Root = (*S3)(nil)
)

// OpenRoot returns the Root a recorder writes root through: the FS of the
// directory root on fsys, or the S3 store of an s3://bucket/prefix URL
// (LoadS3 with opts). The S3 store spools to SpoolDir when it is set.
func OpenRoot(ctx context.Context, fsys vfs.FS, root string, opts S3Options) (Root, error) {
	if !IsURL(root) {
		return NewFS(fsys, root), nil
	}
	s, err := LoadS3(ctx, root, opts)
	if err != nil {
		return nil, err
	}
	s.root = root
	return s, nil
}

// Parts implements Root.
func (s *FS) Parts(dir string) ([]hive.Object, error) {
	d := filepath.Join(s.root, filepath.FromSlash(dir))
	entries, err := s.fsys.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: list %s: %w", d, err)
	}
	var out []hive.Object
	for _, e := range entries {
		if _, temp, ok := hive.ParsePartName(e.Name()); !ok || temp || e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, fmt.Errorf("store: list %s: %w", d, err)
		}
		out = append(out, hive.Object{Rel: path.Join(dir, e.Name()), Size: info.Size()})
	}
	return out, nil
}

// HasPart implements Root: one directory listing per level.
func (s *FS) HasPart(dir string, depth int) (bool, error) {
	return hasPart(s.fsys, filepath.Join(s.root, filepath.FromSlash(dir)), depth)
}

func hasPart(fsys vfs.FS, dir string, depth int) (bool, error) {
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: list %s: %w", dir, err)
	}
	for _, e := range entries {
		if _, temp, ok := hive.ParsePartName(e.Name()); ok && !temp && !e.IsDir() {
			return true, nil
		}
	}
	if depth == 0 {
		return false, nil
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if ok, err := hasPart(fsys, filepath.Join(dir, e.Name()), depth-1); ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// CreateState implements Root: written as .NAME.tmp, synced, renamed
// with vfs.WriteFile, the directory synced. The caller holds the ROOT's
// lock, so no other writer races the check for an existing file.
func (s *FS) CreateState(name string, b []byte) error {
	dir := filepath.Join(s.root, hive.StateDir)
	final := filepath.Join(dir, name)
	if old, err := s.ReadState(name); err == nil {
		if string(old) == string(b) {
			return nil
		}
		return fmt.Errorf("store: write %s: %w", final, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := s.fsys.MkdirAll(dir); err != nil {
		return fmt.Errorf("store: create directory %s: %w", dir, err)
	}
	if err := vfs.WriteFile(s.fsys, filepath.Join(dir, "."+name+".tmp"), final, b); err != nil {
		return err
	}
	if err := s.fsys.SyncDir(dir); err != nil {
		return fmt.Errorf("store: sync %s: %w", dir, err)
	}
	return nil
}

// Parts implements Root: a listing of the partition's keys, one request
// per 1,000.
func (s *S3) Parts(dir string) ([]hive.Object, error) {
	prefix := s.loc.Key(dir) + "/"
	var out []hive.Object
	err := s.list(prefix, "/", 0, func(key string, size int64) bool {
		if _, temp, ok := hive.ParsePartName(path.Base(key)); ok && !temp {
			out = append(out, hive.Object{Rel: path.Join(dir, path.Base(key)), Size: size})
		}
		return true
	})
	return out, err
}

// HasPart implements Root: a listing of the keys under dir, stopped at
// the first part file at most depth levels below it (one request when
// the directory holds any).
func (s *S3) HasPart(dir string, depth int) (bool, error) {
	prefix := s.loc.Key(dir) + "/"
	found := false
	err := s.list(prefix, "", 0, func(key string, _ int64) bool {
		rest := strings.TrimPrefix(key, prefix)
		if _, temp, ok := hive.ParsePartName(path.Base(rest)); ok && !temp && strings.Count(rest, "/") <= depth {
			found = true
			return false
		}
		return true
	})
	return found, err
}

// list calls f with every key (and its size) under prefix, split at
// delimiter when it is not empty, max keys a request (0: the service's
// 1,000), until f returns false.
func (s *S3) list(prefix, delimiter string, max int32, f func(key string, size int64) bool) error {
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.loc.Bucket), Prefix: aws.String(prefix)}
	if delimiter != "" {
		in.Delimiter = aws.String(delimiter)
	}
	if max > 0 {
		in.MaxKeys = aws.Int32(max)
	}
	for {
		s.count(OpList, prefix)
		out, err := s.client.ListObjectsV2(s.ctx, in)
		if err != nil {
			return fmt.Errorf("store: list %s: %w", s.url(prefix), err)
		}
		for _, o := range out.Contents {
			if !f(aws.ToString(o.Key), aws.ToInt64(o.Size)) {
				return nil
			}
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return nil
		}
		in.ContinuationToken = out.NextContinuationToken
	}
}

// CreateState implements Root: one PutObject with If-None-Match: *. A
// 412 is no error when the object holds the same bytes (its ETag is
// their MD5): a retry whose first reply was lost, or another writer of
// the prefix that wrote the same state.
func (s *S3) CreateState(name string, b []byte) error {
	key := s.loc.Key(path.Join(hive.StateDir, name))
	s.count(OpPut, key)
	_, err := s.client.PutObject(s.ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.loc.Bucket), Key: aws.String(key), IfNoneMatch: aws.String("*"),
		Body: strings.NewReader(string(b)), ContentLength: aws.Int64(int64(len(b))),
	})
	if err == nil {
		return nil
	}
	if !isStatus(err, http.StatusPreconditionFailed) {
		return fmt.Errorf("store: put %s: %w", s.url(key), err)
	}
	sum := md5.Sum(b)
	if s.hasETag(key, hex.EncodeToString(sum[:])) {
		return nil
	}
	return &NameTakenError{URL: s.url(key), Err: err}
}

// Multipart reports whether Sync uploads the finished part p in pieces
// (it is larger than PartSize): a multipart upload then stays in flight,
// invisible, until Publish completes it, and a crash leaves it there.
func (s *S3) Multipart(p Part) bool {
	sp, ok := p.(*s3Part)
	return ok && sp.s == s && sp.multipart()
}

// Exists reports whether the object rel (relative to ROOT) is
// published: one HeadObject.
func (s *S3) Exists(rel string) (bool, error) {
	key := s.loc.Key(rel)
	s.count(OpHead, key)
	_, err := s.client.HeadObject(s.ctx, &s3.HeadObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)})
	switch {
	case err == nil:
		return true, nil
	case notExist(err):
		return false, nil
	}
	return false, fmt.Errorf("store: look up %s: %w", s.url(key), err)
}

// Delete removes the object rel (relative to ROOT); a missing one is no
// error. Recovery alone calls it, to take back the files of a write a
// crash left half published before the write is done again whole: a
// store never replaces an object, and publishes nothing by copy.
func (s *S3) Delete(rel string) error {
	key := s.loc.Key(rel)
	s.count(OpDelete, key)
	_, err := s.client.DeleteObject(s.ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.loc.Bucket), Key: aws.String(key)})
	if err != nil && !notExist(err) {
		return fmt.Errorf("store: delete %s: %w", s.url(key), err)
	}
	return nil
}

// RemoveStaleSpool removes the spool files in SpoolDir that another store
// made: what a process that was killed while it held parts left. Only
// for a spool directory that no other live store uses (the recorder's
// log directory, under its lock).
func (s *S3) RemoveStaleSpool() error {
	entries, err := s.opts.FS.ReadDir(s.opts.SpoolDir)
	if err != nil {
		return fmt.Errorf("store: list the spool directory %s: %w", s.opts.SpoolDir, err)
	}
	mine := ".rlrec-" + s.id + "-"
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, ".rlrec-") || !strings.HasSuffix(name, ".spool") || strings.HasPrefix(name, mine) {
			continue
		}
		if err := s.opts.FS.Remove(filepath.Join(s.opts.SpoolDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("store: remove the stale spool file %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
