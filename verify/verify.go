package verify

import (
	"context"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
)

// options is Root's configuration (Option).
type options struct {
	progress    func(done, total int64)
	maxProblems int
	workers     int
	words       findings.Words
}

// Option configures Root. The project's public packages configure with
// functional options: docs/decisions/options.md.
type Option func(*options)

// WithProgress has Root call progress after each file with the bytes of
// the files checked so far and the total; calls are serialised.
func WithProgress(progress func(done, total int64)) Option {
	return func(o *options) { o.progress = progress }
}

// WithMaxProblemsPerFile bounds the problems listed for one file (default,
// and for n <= 0, 20); the rest are counted in one closing problem.
func WithMaxProblemsPerFile(n int) Option { return func(o *options) { o.maxProblems = n } }

// WithWorkers sets the number of files checked at once (default, and for
// n <= 0, GOMAXPROCS).
func WithWorkers(n int) Option { return func(o *options) { o.workers = n } }

// WithWords words the remedies fixes ask for (Problem.Remedy); by
// default, and with nil, findings.APIWords.
func WithWords(w findings.Words) Option { return func(o *options) { o.words = w } }

// verifier holds the state of one Root run.
type verifier struct {
	root string
	opts options
	fs   vfs.FS // nil for a bucket
	// rd lists the ROOT and opens its files.
	rd store.Reader

	mu       sync.Mutex
	problems []Problem
	// sums holds what the cross-file checks need of every listed file,
	// in listing order.
	sums []*fileSum
	rows int64
	done int64
}

// fileEntry is one part file of the listing.
type fileEntry struct {
	hive.File
	// path is the file's OS path, or its s3:// URL.
	path string
	// dirs are the partition directory names of the file's path, as they
	// are on disk: session_id=S, env_id=R and, in an episode partition,
	// episode_record_id=E.
	dirs []string
}

// recordingDirs is the text of the recording's two partition directories
// (session_id=S/env_id=R), the same in every table.
func (f *fileEntry) recordingDirs() string { return f.dirs[0] + "/" + f.dirs[1] }

// Root checks the ROOT root, a directory or an s3://bucket/prefix URL
// (see the package doc for the checks), and returns what it found. The
// error is for a ROOT that cannot be checked at all (missing, not a
// directory, a bucket that cannot be listed) or a cancelled ctx; problems
// in the ROOT are in the report. A bucket's ROOT keeps its log and lock
// on the recorder's disk, so they are not checked here; its part files
// are, through ranged GETs.
func Root(ctx context.Context, root string, opt ...Option) (*Report, error) {
	var opts options
	for _, o := range opt {
		o(&opts)
	}
	if store.IsURL(root) {
		rd, err := store.OpenReader(ctx, root)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotRoot, err)
		}
		return run(ctx, &verifier{root: root, opts: opts, rd: rd}, false)
	}
	return checkWith(ctx, vfs.OS(), root, opts)
}

// check is Root on the file system fsys.
func check(ctx context.Context, fsys vfs.FS, root string, opt ...Option) (*Report, error) {
	var opts options
	for _, o := range opt {
		o(&opts)
	}
	return checkWith(ctx, fsys, root, opts)
}

// checkWith is check with its options applied.
func checkWith(ctx context.Context, fsys vfs.FS, root string, opts options) (*Report, error) {
	v := &verifier{root: root, opts: opts, fs: fsys, rd: store.NewFS(fsys, root)}
	info, err := v.fs.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrNotRoot, root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%w: %s is not a directory", ErrNotRoot, root)
	}
	writing := v.checkLock()
	if !writing {
		v.checkLog()
	}
	return run(ctx, v, writing)
}

// run lists the ROOT through v.rd and checks every file.
func run(ctx context.Context, v *verifier, writing bool) (*Report, error) {
	opts, root := &v.opts, v.root
	if opts.maxProblems <= 0 {
		opts.maxProblems = 20
	}
	if opts.workers <= 0 {
		opts.workers = runtime.GOMAXPROCS(0)
	}
	l, err := v.rd.List()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotRoot, err)
	}
	v.strays(l.Strays, writing)
	v.claims(l)
	files := make([]fileEntry, len(l.Files))
	rep := &Report{Root: root, Files: len(files)}
	for i, f := range l.Files {
		files[i] = fileEntry{File: f, path: v.rd.Path(f.Rel), dirs: partitionDirs(f)}
		rep.Bytes += f.Size
	}
	v.sums = make([]*fileSum, len(files))
	if err := v.checkFiles(ctx, files, rep.Bytes); err != nil {
		return nil, err
	}
	v.crossCheck()
	rep.Rows = v.rows
	rep.Problems = v.problems
	for i := range rep.Problems {
		if p := &rep.Problems[i]; p.Remedy != 0 {
			// A fix that asks for a remedy is its text after the remedy's
			// words until here.
			p.Fix = v.opts.words.Say(findings.Action{Remedy: p.Remedy, Root: "ROOT"}) + p.Fix
		}
	}
	rep.sort()
	return rep, nil
}

// partitionDirs returns the partition directory names of a listed file:
// the path between the table directory and the file name.
func partitionDirs(f hive.File) []string {
	segs := strings.Split(f.Rel, "/")
	return segs[1 : len(segs)-1]
}

// strays reports what the listing found besides part files. Temp files
// are not reported while a recorder writes (writing), and entries at the
// top of ROOT that are not table directories are not rlrec's and are
// ignored.
func (v *verifier) strays(strays []hive.Stray, writing bool) {
	for _, s := range strays {
		switch {
		case errors.Is(s.Err, hive.ErrBadEscape):
			v.add(Problem{Check: CheckPartition, Path: s.Rel, Row: -1,
				Message: "the partition value does not decode: " + s.Err.Error(),
				Fix:     "rlrec never writes this name; move the directory out of ROOT"})
		case s.Err != nil:
			v.add(Problem{Check: CheckFile, Path: s.Rel, Row: -1, Message: s.Reason + ": " + s.Err.Error(),
				Fix: "check the permissions of the file or directory"})
		case s.Temp:
			if !writing {
				v.add(Problem{Check: CheckStray, Path: s.Rel, Row: -1,
					Message: "temp file left by a writer that stopped before committing it; it holds nothing committed",
					Remedy:  findings.Recover, Fix: " if the log holds records (see the log problem), then delete the temp file"})
			}
		case !strings.Contains(s.Rel, "/"):
			// Not under a table directory: no dataset scan reads it.
		default:
			v.add(Problem{Check: CheckStray, Path: s.Rel, Row: -1,
				Message: "unknown entry " + path.Base(s.Rel) + " under a table directory: " + s.Reason,
				Fix:     "rlrec did not write it and dataset scans may trip over it; move it out of ROOT"})
		}
	}
}

// checkFiles checks every file on opts.workers goroutines.
func (v *verifier) checkFiles(ctx context.Context, files []fileEntry, total int64) error {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(v.opts.workers, max(len(files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := v.checkFile(&files[i])
				v.mu.Lock()
				v.merge(i, c)
				v.done += files[i].Size
				if v.opts.progress != nil {
					v.opts.progress(v.done, total)
				}
				v.mu.Unlock()
			}
		}()
	}
	var err error
	for i := range files {
		if err = ctx.Err(); err != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return err
}

// add records a problem; safe for concurrent use.
func (v *verifier) add(p Problem) {
	v.mu.Lock()
	v.problems = append(v.problems, p)
	v.mu.Unlock()
}

// merge takes in what the check of file i found; v.mu is held.
func (v *verifier) merge(i int, c *fileCheck) {
	v.problems = append(v.problems, c.problems...)
	if c.more > 0 {
		v.problems = append(v.problems, Problem{Check: CheckFile, Path: c.f.Rel, Row: -1,
			Message: fmt.Sprintf("%d more problems in this file not listed", c.more),
			Fix:     "fix the problems above first; the rest often share their cause"})
	}
	v.rows += c.rows
	v.sums[i] = &c.sum
}

// rel returns p relative to ROOT with "/" separators.
func (v *verifier) rel(p string) string {
	r, err := filepath.Rel(v.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}

// claims reports, in a bucket's ROOT, each recording claimed with nothing
// published (store.UnpublishedClaims): a writer recording it now holds
// such a claim, and so does one that crashed before its first publish,
// whose lost log directory would leave the recording blocked for good.
func (v *verifier) claims(l *hive.Listing) {
	claims, err := store.UnpublishedClaims(v.rd, l)
	if err != nil {
		v.add(Problem{Check: CheckClaim, Path: hive.StateDir + "/" + hive.ClaimsDir, Row: -1, Message: "cannot read the recordings' claims: " + err.Error(),
			Fix: "check that the credentials may list and read the prefix's _rlrec/claims"})
		return
	}
	for _, c := range claims {
		v.add(Problem{Check: CheckClaim, Path: c.Rel, Row: -1,
			Message: fmt.Sprintf("recording session %q env %q is claimed by writer %s but has nothing published: a writer is recording it now, or one stopped before its first publish; if that writer's log directory is lost, nothing will ever write the recording and every later writer of it is refused", c.SessionID, c.EnvID, c.Writer),
			Remedy:  findings.Recover,
			Fix:     fmt.Sprintf(" with the writer's log directory if no writer is recording it; if that directory is lost, release the claim explicitly (the release-claim command, session %q, env %q)", c.SessionID, c.EnvID)})
	}
}
