package store

import "errors"

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
