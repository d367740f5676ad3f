package store

import (
	"fmt"
	"io"

	"github.com/rlrec/rlrec/internal/hive"
)

// Store holds the part files of one ROOT. Implementations are safe for
// concurrent use; only one Part may be written per partition at a time
// (the caller serialises the writers of one partition).
type Store interface {
	// Next returns the number the next part of p gets: one more than the
	// highest part or temp file of p, or 0.
	Next(p hive.Partition) (int, error)
	// Create starts part n of p (n < 0: Next) under its temp name. It
	// fails with ErrExists when part n is published (FS; S3 finds it when
	// the part is published).
	Create(p hive.Partition, n int) (Part, error)
	// CreateNew makes the partition p, which must be new, and starts its
	// part 0: the cheap path for a partition per episode. It fails with
	// an error wrapping ErrPartitionExists when p exists; the caller then
	// numbers the part with Next and calls Create.
	CreateNew(p hive.Partition) (Part, error)
	// Sync makes a group of finished parts durable under their temp
	// names (see the package doc for a *GroupError).
	Sync(parts []Part) error
	// Publish gives the parts of a synced group their final names,
	// durably, never replacing a published file.
	Publish(parts []Part) error
	// PublishTemp publishes part n of the partition directory dir
	// (relative to ROOT, "/" separators, as hive.List reports it): a part
	// a writer that crashed had synced but not yet published.
	PublishTemp(dir string, n int) error
	// RemoveTemp removes the temp file rel (relative to ROOT) a writer
	// that crashed left.
	RemoveTemp(rel string) error
	// SyncAll makes every change so far durable (after PublishTemp and
	// RemoveTemp).
	SyncAll() error
}

// Part is one part file being written: the bytes written to it go to its
// temp name until its group is published.
type Part interface {
	io.Writer
	// Name is the path of its temp file, for messages.
	Name() string
	// Rel is its final path relative to ROOT, "/" separators.
	Rel() string
	// Finish ends the part's bytes: it is complete, not yet durable.
	Finish() error
	// Abort discards it: nothing of it remains. A no-op once published.
	Abort() error
}

// AbortAll aborts every part of a group that will not be committed;
// what an abort fails to remove is settled by the next recovery.
func AbortAll(parts []Part) {
	for _, p := range parts {
		p.Abort()
	}
}

// PartError is the failure of one part of a group.
type PartError struct {
	Part Part
	// Path is the file or directory that failed.
	Path string
	Err  error
}

func (e *PartError) Error() string { return e.Err.Error() }
func (e *PartError) Unwrap() error { return e.Err }

// GroupError is returned by Sync and Publish when some parts of a group
// failed and the others went through.
type GroupError struct {
	Parts []*PartError
	// Sync is the file-system sync's error that made the parts be synced
	// one by one, if it failed.
	Sync error
}

func (e *GroupError) Error() string {
	if len(e.Parts) == 1 {
		return e.Parts[0].Error()
	}
	return fmt.Sprintf("%d files failed, the first: %v", len(e.Parts), e.Parts[0].Err)
}

func (e *GroupError) Unwrap() []error {
	out := make([]error, len(e.Parts))
	for i, p := range e.Parts {
		out[i] = p
	}
	return out
}
