package store

import (
	"errors"
	"fmt"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrExists is returned when a part would take the name of a
	// published file: creation and publishing refuse to replace one.
	ErrExists = errors.New("store: a published file has that name")
	// ErrPartitionExists is returned by CreateNew for a partition that
	// exists already.
	ErrPartitionExists = errors.New("store: the partition exists")
	// ErrClosed is returned by a Part written after Finish or Abort.
	ErrClosed = errors.New("store: part already finished or aborted")
	// errNotFinished is returned by Sync or Publish for a part that is
	// not finished, or already published or aborted.
	errNotFinished = errors.New("store: part not finished, or already published or aborted")
	// errForeign is returned for a Part another Store made.
	errForeign = errors.New("store: part of another store")
)

// Sentinel errors of a recorder's state files (OpenLayout).
var (
	// ErrLayout is returned by OpenLayout for a ROOT of another schema
	// version or steps layout.
	ErrLayout = errors.New("store: ROOT of another schema version or layout")
)

// More sentinel errors of the S3 store.
var (
	// ErrBadURL is returned for a ROOT URL that is not s3://bucket/prefix.
	ErrBadURL = errors.New("store: bad object storage URL")
	// ErrNoTempNames is returned by the S3 store's PublishTemp and
	// RemoveTemp: an object store has no temp names.
	ErrNoTempNames = errors.New("store: object storage has no temp files")
)

// NameTakenError is returned when a part is published under a name an
// object already has (HTTP 412 to If-None-Match: *): another writer
// published it first. Nothing was replaced; the part is not published.
// It matches ErrExists.
type NameTakenError struct {
	// URL is the object's s3:// URL.
	URL string
	// Err is the service's reply.
	Err error
}

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("store: %s: another writer published this name first; nothing was replaced, and this part is not published (%v)", e.URL, e.Err)
}

// Unwrap returns ErrExists and the service's reply.
func (e *NameTakenError) Unwrap() []error { return []error{ErrExists, e.Err} }
