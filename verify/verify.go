package verify

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/rlrec/rlrec/internal/vfs"
)

// Options configure Root. The zero value gives the defaults.
type Options struct {
	// Progress, when not nil, is called after each file with the bytes of
	// the files checked so far and the total; calls are serialised.
	Progress func(done, total int64)
	// MaxProblemsPerFile bounds the problems listed for one file (default
	// 20); the rest are counted in one closing problem.
	MaxProblemsPerFile int
	// Workers is the number of files checked at once (default
	// GOMAXPROCS).
	Workers int
}

// verifier holds the state of one Root run.
type verifier struct {
	root string
	opts Options
	fs   vfs.FS

	mu       sync.Mutex
	problems []Problem
	temps    []string
	steps    map[[2]string][]*stepsSum
	episodes map[[2]string][]*episodeSum
	sessions map[string][]*sessionSum
	rows     int64
	done     int64
	// partFilesSeen counts the part files of each table partition
	// (table NUL session NUL episode record).
	partFilesSeen map[string]int
}

// Root checks the ROOT directory root (see the package doc for the
// checks) and returns what it found. The error is for a ROOT that cannot
// be checked at all (missing, not a directory) or a cancelled ctx;
// problems in the ROOT are in the report.
func Root(ctx context.Context, root string, opts Options) (*Report, error) {
	return check(ctx, vfs.OS(), root, opts)
}

// check is Root on the file system fsys.
func check(ctx context.Context, fsys vfs.FS, root string, opts Options) (*Report, error) {
	if opts.MaxProblemsPerFile <= 0 {
		opts.MaxProblemsPerFile = 20
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	v := &verifier{root: root, opts: opts, fs: fsys,
		steps: map[[2]string][]*stepsSum{}, episodes: map[[2]string][]*episodeSum{}, sessions: map[string][]*sessionSum{}, partFilesSeen: map[string]int{}}
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
	files, err := v.walk()
	if err != nil {
		return nil, err
	}
	if !writing {
		for _, t := range v.temps {
			v.add(Problem{Check: CheckStray, Path: t, Row: -1,
				Message: "temp file left by a writer that stopped before committing it; it holds nothing committed",
				Fix:     "run 'rlrec recover ROOT' if the log holds records (see the log problem), then delete the temp file"})
		}
	}
	rep := &Report{Root: root, Files: len(files)}
	var total int64
	for _, f := range files {
		total += f.size
	}
	rep.Bytes = total
	if err := v.checkFiles(ctx, files, total); err != nil {
		return nil, err
	}
	v.crossCheck()
	rep.Rows = v.rows
	rep.Problems = v.problems
	rep.sort()
	return rep, nil
}

// checkFiles checks every file on opts.Workers goroutines.
func (v *verifier) checkFiles(ctx context.Context, files []fileEntry, total int64) error {
	next := make(chan *fileEntry)
	var wg sync.WaitGroup
	for range min(v.opts.Workers, max(len(files), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range next {
				c := v.checkFile(f)
				v.mu.Lock()
				v.merge(c)
				v.done += f.size
				if v.opts.Progress != nil {
					v.opts.Progress(v.done, total)
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
		next <- &files[i]
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

// merge takes in what one file's check found; v.mu is held.
func (v *verifier) merge(c *fileCheck) {
	v.problems = append(v.problems, c.problems...)
	if c.more > 0 {
		v.problems = append(v.problems, Problem{Check: CheckFile, Path: c.f.rel, Row: -1,
			Message: fmt.Sprintf("%d more problems in this file not listed", c.more),
			Fix:     "fix the problems above first; the rest often share their cause"})
	}
	v.rows += c.rows
	key := [2]string{c.f.sid, c.f.erid}
	switch {
	case c.steps != nil:
		v.steps[key] = append(v.steps[key], c.steps)
	case c.episode != nil:
		v.episodes[key] = append(v.episodes[key], c.episode)
	case c.session != nil:
		v.sessions[c.f.sid] = append(v.sessions[c.f.sid], c.session)
	}
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// rel returns p relative to ROOT with "/" separators.
func (v *verifier) rel(p string) string {
	r, err := filepath.Rel(v.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(r)
}
