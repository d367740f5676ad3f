package recorder

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// Group commit. The writers finish their Parquet files without syncing
// them and hand them to one committer goroutine, which publishes a whole
// group in this order:
//
//  1. sync the file system holding ROOT (syncfs(2)): every file of the
//     group is durable under its temp name (store.Store.Sync);
//  2. append the group's markers to the log, each naming its write and its
//     files, and wait until they are durable: the log then also holds,
//     durably, every event the files were built from (it is sequential);
//  3. rename every file to its final name, refusing to replace one, and
//     sync the file system again (store.Store.Publish);
//  4. release the log positions the writes held, so the log is reclaimed
//     only after the files are published.
//
// So a file is published only once its marker is durable: after a crash,
// recovery finds every published file named by a marker (and a marked
// file still under its temp name, it publishes: step 1 made it durable);
// a temp file no marker names is removed, and its write is redone from
// the log under a name no published file has. Nothing published is ever
// rewritten, and the files never hold an event the log lost. Two
// file-system syncs and one log sync per group, where a sync of each file
// and of each directory took about 6 fsyncs per episode (BENCHMARKS.md,
// "Figures behind design choices").
//
// During recovery there is no log to append to: the markers of its one
// group go to a journal file under _rlrec (internal/recovery.WriteJournal),
// made durable before the renames and removed once the log is emptied.
//
// The committer gathers what is handed to it for up to commitWindow after
// the first write of a group, or until commitMaxParts files, or until
// writer.wait asks for everything so far. A write handed over while a group
// is being committed waits for the next one, so under load groups grow by
// themselves.
//
// The window was chosen on BenchmarkThroughput/cartpole (BENCHMARKS.md,
// "Figures behind design choices"): any window up to 20 ms does as well
// as the others within the spread between runs, and 5 ms adds the least
// to the time an episode takes to be durable.
//
// During recovery the committer holds every write until writer.wait, so
// recovery commits its files as one group: its file-system operations then
// do not depend on timing, and a crash during recovery redoes it all.
const (
	commitWindow   = 5 * time.Millisecond
	commitMaxParts = 256
)

// commitItem is one write handed to the committer: its finished files, the
// markers to log before they are published, and their entries in
// writer.live; or, with flushed set, a request to commit what is held and
// close flushed.
type commitItem struct {
	parts   []store.Part
	markers [][]byte
	live    []any
	// rec is the recording the write belongs to (failure.go).
	rec hive.Recording
	// done, when set, runs under writer.mu once the write is durable.
	done func()
	// hold keeps the write until a flush (recovery).
	hold    bool
	flushed chan struct{}
}

// commitEnv is everything the committer uses beyond the writes handed
// to it, given once when it is made (pebble's commitEnv is the model): it
// touches no other state of the writer.
type commitEnv struct {
	st         store.Root
	layoutFile *store.LayoutFile
	// logMarkers makes markers durable before the files they name are
	// published: in the log, or in recovery's journal (phase.go).
	logMarkers func(markers [][]byte) error
	// failed is the recorder's failure (nil: none); fail sets it.
	failed func() error
	fail   func(error)
	// failRec fails one recording (failure.go); recFailed reports
	// whether one failed, anyFailed whether any did.
	failRec   func(hive.Recording, error)
	recFailed func(hive.Recording) bool
	anyFailed func() bool
	// published releases the writes of a group once they are durable:
	// their log positions, and their done functions.
	published func(group []commitItem)
}

// committer is the group commit: one goroutine that owns the writes
// handed to it until they are published or dropped.
type committer struct {
	env      commitEnv
	in       chan commitItem
	exited   chan struct{}
	stopOnce sync.Once
}

// newCommitter starts a committer.
func newCommitter(env commitEnv) *committer {
	c := &committer{env: env, in: make(chan commitItem, commitMaxParts), exited: make(chan struct{})}
	go c.loop()
	return c
}

// commit hands a finished write to the committer. It is called from pool
// jobs, so writer.wait (pool, then committer) sees every write.
func (c *committer) commit(it commitItem) { c.in <- it }

// flush returns once everything handed to the committer before it is
// committed (or failed).
func (c *committer) flush() {
	done := make(chan struct{})
	c.in <- commitItem{flushed: done}
	<-done
}

// stop commits what is held and ends the committer; the pool must be
// stopped first. Neither flush nor commit may be called after it.
func (c *committer) stop() {
	c.stopOnce.Do(func() {
		close(c.in)
		<-c.exited
	})
}

// loop is the committer goroutine.
func (c *committer) loop() {
	defer close(c.exited)
	var (
		group []commitItem
		parts []store.Part
		hold  bool
		n     int // files in group
	)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	commit := func() {
		timer.Stop()
		if len(group) > 0 {
			parts = parts[:0]
			for _, it := range group {
				parts = append(parts, it.parts...)
			}
			c.commitGroup(group, parts)
			clear(group)
			clear(parts)
		}
		group, hold, n = group[:0], false, 0
	}
	for {
		var it commitItem
		ok := true
		if len(group) > 0 && !hold {
			select {
			case it, ok = <-c.in:
			case <-timer.C:
				commit()
				continue
			}
		} else {
			it, ok = <-c.in
		}
		if !ok {
			commit()
			return
		}
		if it.flushed != nil {
			commit()
			close(it.flushed)
			continue
		}
		if len(group) == 0 && !it.hold {
			timer.Reset(commitWindow)
		}
		group = append(group, it)
		n += len(it.parts)
		hold = hold || it.hold
		if !hold && n >= commitMaxParts {
			commit()
		}
	}
}

// commitGroup publishes a group's files as the package doc says, then
// releases its log positions. A file that fails fails its recording
// (failure.go): that write is dropped from the group (its files aborted
// before its markers are logged, or left under their temp names after,
// for recovery to publish) and stays in flight, so its data stays in the
// log; the rest of the group goes on. Any other failure fails the
// recorder: the group's temp files are removed (or, past step 2, left for
// recovery to publish) and its data stays in the log for the next Open.
func (c *committer) commitGroup(group []commitItem, parts []store.Part) {
	env := &c.env
	if err := env.failed(); err != nil {
		// An earlier write failed: commit nothing more (its episode or
		// session write may depend on what failed).
		store.AbortAll(parts)
		return
	}
	// A write of a recording that failed since it was handed over.
	if env.anyFailed() {
		group = c.dropFailed(group, nil)
		parts = groupParts(group, parts[:0])
	}
	if err := env.layoutFile.Ensure(); err != nil {
		store.AbortAll(parts)
		env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
		return
	}
	up, isUploader := env.st.(store.Uploader)
	if isUploader {
		// Object storage: the uploads about to begin, in the log first
		// (internal/recovery, uploads.go), then each write's marker with its
		// uploads (recovery.MarkUploads below).
		var begun [][]byte
		for _, it := range group {
			if rec := recovery.BegunMarker(up, it.rec, it.parts); rec != nil {
				begun = append(begun, rec)
			}
		}
		if err := env.logMarkers(begun); err != nil {
			store.AbortAll(parts)
			env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
			return
		}
	}
	if err := env.st.Sync(parts); err != nil {
		var ge *store.GroupError
		if !errors.As(err, &ge) {
			env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
			return
		}
		c.chargeParts(group, ge)
		group = c.dropFailed(group, nil)
		parts = groupParts(group, parts[:0])
	}
	var markers [][]byte
	for _, it := range group {
		markers = append(markers, it.markers...)
	}
	if isUploader {
		var err error
		if markers, err = recovery.MarkUploads(up, parts, markers); err != nil {
			store.AbortAll(parts)
			env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
			return
		}
	}
	if err := env.logMarkers(markers); err != nil {
		store.AbortAll(parts)
		env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
		return
	}
	if err := env.st.Publish(parts); err != nil {
		var ge *store.GroupError
		if !errors.As(err, &ge) {
			env.fail(fmt.Errorf("commit %d files of %d writes: %w", len(parts), len(group), err))
			return
		}
		// Its markers are durable: the parts not renamed stay under their
		// temp names for recovery to publish, and the write stays in
		// flight so that the log keeps its records and markers.
		c.chargeParts(group, ge)
		group = c.dropFailed(group, ge)
	}
	env.published(group)
}

// chargeParts fails the recording of each write with a part ge names.
func (c *committer) chargeParts(group []commitItem, ge *store.GroupError) {
	owner := make(map[store.Part]int)
	for i, it := range group {
		for _, p := range it.parts {
			owner[p] = i
		}
	}
	for _, pe := range ge.Parts {
		i, ok := owner[pe.Part]
		if !ok {
			continue
		}
		err := pe.Err
		if ge.Sync != nil {
			err = fmt.Errorf("%w (after: %v)", pe.Err, ge.Sync)
		}
		c.env.failRec(group[i].rec, &partFailure{path: pe.Path, err: err})
	}
}

// partFailure is a part's failure with the path it names.
type partFailure struct {
	path string
	err  error
}

func (e *partFailure) Error() string { return e.err.Error() }
func (e *partFailure) Unwrap() error { return e.err }

// dropFailed returns the writes of group whose recordings have not
// failed; the others' parts are aborted (but those ge names, which a
// failed publish left as they are).
func (c *committer) dropFailed(group []commitItem, ge *store.GroupError) []commitItem {
	keep := group[:0]
	for _, it := range group {
		if !c.env.recFailed(it.rec) {
			keep = append(keep, it)
			continue
		}
		if ge == nil {
			store.AbortAll(it.parts)
		}
	}
	clear(group[len(keep):])
	return keep
}

// groupParts collects the parts of a group's writes into parts.
func groupParts(group []commitItem, parts []store.Part) []store.Part {
	for _, it := range group {
		parts = append(parts, it.parts...)
	}
	return parts
}
