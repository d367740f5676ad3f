package curate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rlrec/rlrec/curate/where"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
)

// options is Copy's configuration (Option). The defaults copy every
// recording of the source, in the source's layout.
type options struct {
	session, env  string
	recordings    []dataset.Recording
	where         *where.Filter
	layout        hive.Layout
	splits        Splits
	seed          uint64
	recorder      []recorder.Option
	open          func(root string, opts ...recorder.Option) (*recorder.Recorder, error)
	progress      func(done, total int)
	stepsProgress func(done, total int64)
}

// Option configures Copy. The project's public packages configure with
// functional options: docs/decisions/options.md.
type Option func(*options)

// WithSession copies the recordings of this session id only ("": all).
func WithSession(id string) Option { return func(o *options) { o.session = id } }

// WithEnv narrows WithSession's recordings to the one of this env id ("":
// all of the session's). It needs WithSession.
func WithEnv(id string) Option { return func(o *options) { o.env = id } }

// WithRecordings copies these recordings of SRC only (in SRC's order),
// as rlrec copy --env NAME selects every recording of an env; WithSession
// and WithEnv must then not be given (or be ""). None: all.
func WithRecordings(recs ...dataset.Recording) Option {
	return func(o *options) { o.recordings = recs }
}

// WithWhere copies the episodes f matches only (nil: all).
func WithWhere(f *where.Filter) Option { return func(o *options) { o.where = f } }

// WithLayout sets the steps layout of the destination; by default, and
// with "", the source's.
func WithLayout(l hive.Layout) Option { return func(o *options) { o.layout = l } }

// WithSplits splits the episodes by SplitPoint with WithSeed's seed (0 by
// default): each split is a ROOT of its own, DST/<name>. Empty: no split.
func WithSplits(s Splits) Option { return func(o *options) { o.splits = s } }

// WithSeed sets the seed WithSplits assigns episodes with.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = seed } }

// WithRecorderOptions adds options of the destination's recorders
// (logger, memory budget, compression).
func WithRecorderOptions(opts ...recorder.Option) Option {
	return func(o *options) { o.recorder = append(o.recorder, opts...) }
}

// WithOpen sets how the recorder of each destination ROOT is opened; by
// default, and with nil, recorder.Open. A destination in object storage
// (s3://bucket/prefix, DST/<name> with splits) needs one that gives the
// recorder its store and local log directory (recorder.WithStore), as
// rlrec copy does.
func WithOpen(open func(root string, opts ...recorder.Option) (*recorder.Recorder, error)) Option {
	return func(o *options) { o.open = open }
}

// WithProgress has Copy call progress after each recording with the
// number done and the total.
func WithProgress(progress func(done, total int)) Option {
	return func(o *options) { o.progress = progress }
}

// WithStepsProgress has Copy call progress as the copy goes with the steps
// (rows) handed to the destination's recorders so far and the total to
// copy (the steps_recorded of the episodes selected): after every action
// event that opens a row of a copied episode, and at the end of each
// recording, when done is exactly the steps of the recordings copied.
// done never goes back and never passes total. It is called from Copy's
// goroutine.
func WithStepsProgress(progress func(done, total int64)) Option {
	return func(o *options) { o.stepsProgress = progress }
}

// Report says what Copy wrote.
type Report struct {
	// Layout is the destination's steps layout.
	Layout hive.Layout
	// Targets lists the destination ROOTs: one, or one per split in split
	// order.
	Targets []Target
	// Notes lists what the replay of a recording could not rebuild exactly
	// (dataset.ReplayReport.Notes), prefixed by the recording.
	Notes []string
}

// Target is one destination ROOT and what it got.
type Target struct {
	// Split is the split's name, "" without a split.
	Split string
	Root  string
	// Recordings, Episodes and Steps count what was copied into it (Steps
	// is the steps_recorded of its episodes).
	Recordings, Episodes, Steps int64
}

// plan is what one recording sends to each target.
type plan struct {
	rec dataset.Recording
	// keep holds, per target, the record ids of its episodes; a nil map
	// keeps every episode (a copy without filter or split).
	keep []map[string]bool
	// to lists the targets the recording is copied to.
	to []int
	// steps counts the steps of the episodes copied.
	steps int64
}

// Copy builds the dataset dst from the ROOT src (see the package doc). dst
// (and with splits, every DST/<name>) must not exist or be an empty
// directory, and may not lie inside src.
func Copy(ctx context.Context, src, dst string, opt ...Option) (*Report, error) {
	var opts options
	for _, o := range opt {
		o(&opts)
	}
	d, err := dataset.Open(src)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := checkDest(src, dst); err != nil {
		return nil, err
	}
	recs := d.Recordings()
	if len(opts.recordings) > 0 {
		if opts.session != "" || opts.env != "" {
			return nil, fmt.Errorf("curate: WithRecordings with WithSession or WithEnv: give one selection")
		}
		want := map[dataset.Recording]bool{}
		for _, r := range opts.recordings {
			want[r] = true
		}
		recs = slices.DeleteFunc(recs, func(r dataset.Recording) bool { return !want[r] })
		if len(recs) != len(want) {
			return nil, fmt.Errorf("%d of the %d recordings to copy: %w in %s", len(want)-len(recs), len(want), dataset.ErrNotFound, src)
		}
	} else if opts.session != "" {
		recs = d.Find(opts.session, opts.env)
		if len(recs) == 0 {
			if opts.env != "" {
				return nil, fmt.Errorf("session %q env %q: %w in %s", opts.session, opts.env, dataset.ErrNotFound, src)
			}
			return nil, fmt.Errorf("session %q: %w in %s", opts.session, dataset.ErrNotFound, src)
		}
	} else if opts.env != "" {
		return nil, fmt.Errorf("an env id needs its session id: give the session too")
	}
	rep := &Report{Layout: opts.layout}
	if rep.Layout == "" {
		if rep.Layout, err = sourceLayout(d); err != nil {
			return nil, err
		}
	}
	nt := max(1, len(opts.splits))
	for i := range nt {
		t := Target{Root: dst}
		if len(opts.splits) > 0 {
			t.Split = opts.splits[i].Name
			t.Root = joinRoot(dst, t.Split)
		}
		rep.Targets = append(rep.Targets, t)
	}
	all := opts.where == nil && len(opts.splits) == 0
	var plans []plan
	for _, rec := range recs {
		s, err := d.Session(rec)
		if err != nil {
			return nil, err
		}
		if s.Row() == nil {
			return nil, fmt.Errorf("%s: %w in %s (it was open or crashed): recover the ROOT first, or leave the recording out (WithSession)", rec, dataset.ErrNoSessionRow, src)
		}
		eps, err := d.Episodes(rec)
		if err != nil {
			return nil, err
		}
		p := plan{rec: rec, keep: make([]map[string]bool, nt)}
		counts := make([]int, nt)
		for i := range eps {
			e := &eps[i]
			if opts.where != nil && !opts.where.Match(e) {
				continue
			}
			t := 0
			if len(opts.splits) > 0 {
				t = opts.splits.Assign(opts.seed, rec, e.EpisodeRecordID)
			}
			if !all {
				if p.keep[t] == nil {
					p.keep[t] = map[string]bool{}
				}
				p.keep[t][e.EpisodeRecordID] = true
			}
			counts[t]++
			p.steps += e.Row.StepsRecorded
			rep.Targets[t].Episodes++
			rep.Targets[t].Steps += e.Row.StepsRecorded
		}
		for t := range nt {
			if all || counts[t] > 0 {
				p.to = append(p.to, t)
				rep.Targets[t].Recordings++
			}
		}
		if len(p.to) > 0 {
			plans = append(plans, p)
		}
	}
	if !all {
		total := int64(0)
		for _, t := range rep.Targets {
			total += t.Episodes
		}
		if total == 0 {
			return nil, fmt.Errorf("%w: no episode of the %s selected matches the filter; nothing was written", ErrNothing, count(len(recs), "recording"))
		}
	}
	if err := checkEmpty(ctx, dst); err != nil {
		return nil, err
	}
	recorders := make([]*recorder.Recorder, nt)
	closeAll := func() error {
		var errs []error
		for i, r := range recorders {
			if r != nil {
				if err := r.Close(context.WithoutCancel(ctx)); err != nil {
					errs = append(errs, fmt.Errorf("close %s: %w", rep.Targets[i].Root, err))
				}
			}
		}
		return errors.Join(errs...)
	}
	// The recorders of the splits share the default memory budget.
	ropts := []recorder.Option{recorder.WithLayout(rep.Layout), recorder.WithMemoryBudget(max(recorder.DefaultMemoryBudget/int64(nt), 32<<20))}
	ropts = append(ropts, opts.recorder...)
	open := opts.open
	if open == nil {
		open = recorder.Open
	}
	for t := range rep.Targets {
		r, err := open(rep.Targets[t].Root, ropts...)
		if err != nil {
			return nil, errors.Join(err, closeAll())
		}
		recorders[t] = r
	}
	var stepsTotal, stepsDone int64
	for _, p := range plans {
		stepsTotal += p.steps
	}
	for i, p := range plans {
		// Rows counted from the events may differ from the episodes
		// table's steps_recorded (an action for a completed episode opens
		// no row): the count is capped at the recording's steps, and set
		// to them once it is copied.
		end := stepsDone + p.steps
		var rows func(n int64)
		if opts.stepsProgress != nil {
			base := stepsDone
			var handed int64
			rows = func(n int64) {
				handed += n
				if done := min(base+handed, end); done > stepsDone {
					stepsDone = done
					opts.stepsProgress(stepsDone, stepsTotal)
				}
			}
		}
		if err := copyRecording(ctx, d, p, recorders, rep, rows); err != nil {
			err = fmt.Errorf("%w; %s holds what was copied before it: remove it and copy again", err, dst)
			return nil, errors.Join(err, closeAll())
		}
		if opts.progress != nil {
			opts.progress(i+1, len(plans))
		}
		stepsDone = end
		if opts.stepsProgress != nil {
			opts.stepsProgress(stepsDone, stepsTotal)
		}
	}
	if err := closeAll(); err != nil {
		return nil, err
	}
	return rep, nil
}

// copyRecording replays one recording into the recorders of its targets,
// each event filtered to the episodes the target keeps.
//
// rows, when not nil, is called with the number of step rows an action
// event opened in the targets (its lanes that name a kept episode not
// yet completed).
func copyRecording(ctx context.Context, d *dataset.Dataset, p plan, recs []*recorder.Recorder, rep *Report, rows func(n int64)) error {
	s, err := d.Session(p.rec)
	if err != nil {
		return fmt.Errorf("copy %s: %w", p.rec, err)
	}
	clock := ""
	if row := s.Row(); row != nil {
		clock = row.Clock
	}
	var completed map[string]bool
	if rows != nil {
		completed = map[string]bool{}
	}
	rr, err := d.ReplayEvents(p.rec, func(ev events.Event, at time.Time) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var opened int64
		for _, t := range p.to {
			out := filterEvent(ev, p.keep[t])
			if out == nil {
				continue
			}
			if rows != nil {
				switch e := out.(type) {
				case *events.ActionReceived:
					opened += actionRows(e, completed)
				case *events.EpisodeCompleted:
					completed[e.EpisodeRecordID] = true
				}
			}
			var err error
			if dataset.RecorderClocked(clock, ev) {
				// The source's times were its recorder's: so are the copy's.
				err = recs[t].RecordStamped(ctx, out, at, 0)
			} else {
				err = recs[t].RecordAt(ctx, out, at)
			}
			if err != nil {
				return fmt.Errorf("copy %s into %s: %w", p.rec, rep.Targets[t].Root, err)
			}
		}
		if opened > 0 {
			rows(opened)
		}
		return nil
	})
	for _, n := range rr.Notes {
		rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s", p.rec, n))
	}
	if err != nil {
		return fmt.Errorf("copy %s: %w", p.rec, err)
	}
	return nil
}

// filterEvent returns ev as a target that keeps the episodes in keep sees
// it (keep nil: every episode): the start and end of other episodes are
// left out (nil), and in batch events their lanes carry no episode id,
// which the recorder records as it records a lane without an episode
// (a dropped step for an action, nothing for an observation). ev itself
// is not modified.
func filterEvent(ev events.Event, keep map[string]bool) events.Event {
	if keep == nil {
		return ev
	}
	switch e := ev.(type) {
	case *events.EpisodeStarted:
		if !keep[e.EpisodeRecordID] {
			return nil
		}
	case *events.EpisodeCompleted:
		if !keep[e.EpisodeRecordID] {
			return nil
		}
	case *events.ActionReceived:
		c := *e
		c.EpisodeIDs, c.EpisodeRecordIDs = keepLanes(e.EpisodeIDs, e.EpisodeRecordIDs, keep)
		c.EpisodeID, c.EpisodeRecordID = laneZero(e.EpisodeID, e.EpisodeRecordID, keep)
		return &c
	case *events.ObservationEmitted:
		c := *e
		c.EpisodeIDs, c.EpisodeRecordIDs = keepLanes(e.EpisodeIDs, e.EpisodeRecordIDs, keep)
		c.EpisodeID, c.EpisodeRecordID = laneZero(e.EpisodeID, e.EpisodeRecordID, keep)
		return &c
	case *events.StepCompleted:
		c := *e
		c.EpisodeID, c.EpisodeRecordID = laneZero(e.EpisodeID, e.EpisodeRecordID, keep)
		return &c
	}
	return ev
}

// actionRows is the number of step rows a opens in a recorder: its lanes
// that name an episode not completed (under NEXT_STEP autoreset a lane
// still names the episode that completed on the previous step, and the
// recorder counts that step as dropped).
func actionRows(a *events.ActionReceived, completed map[string]bool) int64 {
	var n int64
	for _, rid := range a.EpisodeRecordIDs {
		if rid != "" && !completed[rid] {
			n++
		}
	}
	return n
}

func keepLanes(ids, rids []string, keep map[string]bool) ([]string, []string) {
	outIDs := make([]string, len(ids))
	outRIDs := make([]string, len(rids))
	for i, rid := range rids {
		if keep[rid] {
			outRIDs[i] = rid
			if i < len(ids) {
				outIDs[i] = ids[i]
			}
		}
	}
	return outIDs, outRIDs
}

func laneZero(id, rid string, keep map[string]bool) (string, string) {
	if keep[rid] {
		return id, rid
	}
	return "", ""
}

// sourceLayout is the steps layout the source's files name (rlrec.layout
// of its first steps file), the default layout when it has none.
func sourceLayout(d *dataset.Dataset) (hive.Layout, error) {
	files := d.Files(schema.TableSteps)
	if len(files) == 0 {
		return hive.LayoutEpisode, nil
	}
	st, err := dataset.OpenStepsFile(files[0].Path)
	if err != nil {
		return "", err
	}
	defer st.Close()
	v, _ := st.Metadata(schema.MetaLayout)
	if v == "" {
		if files[0].Episode {
			return hive.LayoutEpisode, nil
		}
		return hive.LayoutSession, nil
	}
	l, err := hive.ParseLayout(v)
	if err != nil {
		return "", fmt.Errorf("%s: metadata %s: %w", files[0].Path, schema.MetaLayout, err)
	}
	return l, nil
}

// checkDest refuses a destination that is the source or lies inside it.
func checkDest(src, dst string) error {
	if store.IsURL(src) || store.IsURL(dst) {
		s, d := strings.TrimRight(src, "/"), strings.TrimRight(dst, "/")
		if d == s || strings.HasPrefix(d, s+"/") {
			return fmt.Errorf("the destination %s lies inside the source %s: choose a prefix outside it", dst, src)
		}
		return nil
	}
	as, err := filepath.Abs(src)
	if err != nil {
		return err
	}
	ad, err := filepath.Abs(dst)
	if err != nil {
		return err
	}
	if ad == as || strings.HasPrefix(ad, as+string(filepath.Separator)) {
		return fmt.Errorf("the destination %s lies inside the source %s: choose a directory outside it", dst, src)
	}
	return nil
}

// joinRoot names the ROOT name under dst: a directory, or a bucket
// prefix below an s3:// URL.
func joinRoot(dst, name string) string {
	if store.IsURL(dst) {
		return strings.TrimRight(dst, "/") + "/" + name
	}
	return filepath.Join(dst, name)
}

// checkEmpty refuses a destination ROOT that exists and is not an empty
// directory (or, in a bucket, a prefix that holds tables).
func checkEmpty(ctx context.Context, dir string) error {
	if store.IsURL(dir) {
		rd, err := store.OpenReader(ctx, dir)
		if err != nil {
			return fmt.Errorf("the destination %s: %w", dir, err)
		}
		l, err := rd.List()
		if err != nil {
			return fmt.Errorf("the destination %s: %w", dir, err)
		}
		if len(l.Files) > 0 || len(l.Strays) > 0 {
			return fmt.Errorf("the destination %s is not empty: copy into a new or empty prefix (a copy never adds to an existing ROOT)", dir)
		}
		return nil
	}
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		if info, serr := os.Stat(dir); serr == nil && !info.IsDir() {
			return fmt.Errorf("the destination %s is a file: give a new directory", dir)
		}
		return fmt.Errorf("the destination %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("the destination %s is not empty: copy into a new or empty directory (a copy never adds to an existing ROOT)", dir)
	}
	return nil
}
