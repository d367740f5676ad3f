package report

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/frame"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/stats"
)

// Settings are the bounds a report was made with (Report.Settings): the
// options Build was given (Option), each one not given, or zero, at its
// default.
type Settings struct {
	// MaxPoints bounds the points of a per-episode plot; more episodes
	// are drawn as that many buckets (min-max band and mean). Default 500.
	MaxPoints int
	// PlayerFrames bounds the frames of a playable sequence, sampled
	// evenly over the episode (first and last step included). Default 32.
	PlayerFrames int
	// StripFrames bounds the frames of a strip, taken evenly from the
	// sequence's. Default 8.
	StripFrames int
	// FrameSide bounds the larger side of a shown frame in pixels: a
	// larger frame is shrunk by the smallest integer factor that fits
	// (box average). Default 96.
	FrameSide int
	// FrameBytes bounds the PNG bytes of all frames in the report; the
	// sequences that would exceed it are left out, with a note. Default
	// 3 MiB.
	FrameBytes int
	// MaxElements bounds the elements shown per feature in the statistics
	// table; the rest are left out, with a note. Default 16.
	MaxElements int
	// Generated, when not zero, is shown as the time the report was made.
	Generated time.Time
	// Words words the remedies the page asks for (recover, verify, the
	// statistics of a recording); nil: findings.APIWords.
	Words findings.Words
}

func (o Settings) withDefaults() Settings {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxPoints, defaultMaxPoints)
	def(&o.PlayerFrames, 32)
	def(&o.StripFrames, 8)
	def(&o.FrameSide, 96)
	def(&o.FrameBytes, 3<<20)
	def(&o.MaxElements, 16)
	o.StripFrames = min(o.StripFrames, o.PlayerFrames)
	return o
}

// Option configures Build. The project's public packages configure with
// functional options: docs/decisions/options.md.
type Option func(*Settings)

// WithMaxPoints bounds the points of a per-episode plot; more episodes
// are drawn as that many buckets (min-max band and mean). Default 500.
func WithMaxPoints(n int) Option { return func(s *Settings) { s.MaxPoints = n } }

// WithPlayerFrames bounds the frames of a playable sequence, sampled
// evenly over the episode (first and last step included). Default 32.
func WithPlayerFrames(n int) Option { return func(s *Settings) { s.PlayerFrames = n } }

// WithStripFrames bounds the frames of a strip, taken evenly from the
// sequence's. Default 8.
func WithStripFrames(n int) Option { return func(s *Settings) { s.StripFrames = n } }

// WithFrameSide bounds the larger side of a shown frame in pixels: a
// larger frame is shrunk by the smallest integer factor that fits (box
// average). Default 96.
func WithFrameSide(pixels int) Option { return func(s *Settings) { s.FrameSide = pixels } }

// WithFrameBytes bounds the PNG bytes of all frames in the report; the
// sequences that would exceed it are left out, with a note. Default 3 MiB.
func WithFrameBytes(bytes int) Option { return func(s *Settings) { s.FrameBytes = bytes } }

// WithMaxElements bounds the elements shown per feature in the statistics
// table; the rest are left out, with a note. Default 16.
func WithMaxElements(n int) Option { return func(s *Settings) { s.MaxElements = n } }

// WithGenerated shows t as the time the report was made (the zero t: no
// time is shown, the default).
func WithGenerated(t time.Time) Option { return func(s *Settings) { s.Generated = t } }

// WithWords words the remedies the page asks for (recover, verify, the
// statistics of a recording); by default, and with nil, findings.APIWords.
func WithWords(w findings.Words) Option { return func(s *Settings) { s.Words = w } }

// Report is what a report shows; WriteHTML renders it.
type Report struct {
	Root     string
	Settings Settings
	// Problems and Notes are the findings about the ROOT itself (its
	// log, its lock, stray files); each recording has its own.
	Problems, Notes []findings.Finding
	Recordings      []*Recording
	// FrameBytes counts the PNG bytes of the frames shown.
	FrameBytes int
}

// Recording is the part of a report about one recording.
type Recording struct {
	dataset.Recording
	// Anchor is the id of its section in the page.
	Anchor string
	// Row is its sessions row; nil when it has none.
	Row *schema.SessionRow
	// EnvComponentID names the environment (from the sessions row, else
	// from an episodes row).
	EnvComponentID string
	// Episodes counts its episodes rows; Completed holds the completed
	// ones in order of completion (ended_at, then record id), Incomplete
	// counts the others.
	Episodes   int
	Completed  []Episode
	Incomplete int
	// Reported counts the completed episodes whose success is known,
	// Succeeded those that succeeded.
	Reported, Succeeded int
	// Stats are its per-feature statistics; Reward its reward feature.
	Stats  *stats.Recording
	Reward *stats.Feature
	Spaces dataset.Spaces

	Problems, Notes []findings.Finding
	Images          []*ImageLeaf
	root            string
	words           findings.Words
}

// Episode is one completed episode as the plots see it.
type Episode struct {
	RecordID string
	// Return is the runtime's cumulative reward, or the sum of the
	// recorded rewards when the runtime reported none.
	Return float64
	// Length is the runtime's step count, or the steps recorded.
	Length int64
	// Steps counts the steps recorded (rows of its steps file).
	Steps   int64
	Success *bool
	EndedAt time.Time
}

// ImageLeaf is an observation leaf shown as frames.
type ImageLeaf struct {
	// Name is the steps column ("observation.image").
	Name string
	// Leaf describes it ("Box(84,84,3) uint8").
	Leaf      string
	index     int
	h, w, c   int
	Sequences []*Sequence
	// Omitted says which chosen episodes were left out, and why.
	Omitted []string
}

// Sequence is the frames of one chosen episode.
type Sequence struct {
	// Labels say why it was chosen: "first to complete", "best", "worst".
	Labels  []string
	Episode Episode
	// Frames are the frames of the playable sequence, in step order;
	// Strip indexes the frames of the strip among them.
	Frames []Frame
	Strip  []int
	// SrcW and SrcH are the recorded frame size.
	SrcW, SrcH int
}

// Build reads what the report shows of recs from d: the sessions and
// episodes rows, the statistics of every steps row (package stats), the
// findings (package findings), and the steps of the few episodes whose
// frames it shows. recs must be recordings of d.
func Build(ctx context.Context, d *dataset.Dataset, recs []dataset.Recording, opt ...Option) (*Report, error) {
	if len(recs) == 0 {
		return nil, ErrNoRecordings
	}
	var opts Settings
	for _, o := range opt {
		o(&opts)
	}
	opts = opts.withDefaults()
	rep := &Report{Root: d.Root(), Settings: opts}
	st := findings.ReadState(d.Root())
	froot := findings.Root{Path: d.Root(), Words: opts.Words, NeedsRecovery: st.NeedsRecovery(), RecorderWriting: st.Writing, Strays: d.Strays()}
	byRec := map[dataset.Recording]*Recording{}
	for i, rec := range recs {
		r := &Recording{Recording: rec, Anchor: fmt.Sprintf("rec-%d", i+1), root: d.Root(), words: opts.Words}
		if err := r.readRows(d); err != nil {
			return nil, err
		}
		fr := findings.Recording{Recording: rec, EpisodesIncomplete: int64(r.Incomplete)}
		if r.Row != nil {
			fr.Status, fr.Reason, fr.Problems, fr.ProblemSummary = r.Row.Status, r.Row.Reason, r.Row.Problems, r.Row.ProblemSummary
			fr.Clock = r.Row.Clock
		}
		logs, err := d.Logs(rec)
		if err != nil {
			return nil, err
		}
		fr.ReadLogs(logs)
		froot.Recordings = append(froot.Recordings, fr)
		rep.Recordings = append(rep.Recordings, r)
		byRec[rec] = r
	}
	problems, notes := findings.List(froot)
	for _, f := range problems {
		if r := byRec[f.Recording]; f.OfRecording && r != nil {
			r.Problems = append(r.Problems, f)
		} else {
			rep.Problems = append(rep.Problems, f)
		}
	}
	for _, f := range notes {
		if r := byRec[f.Recording]; f.OfRecording && r != nil {
			r.Notes = append(r.Notes, f)
		} else {
			rep.Notes = append(rep.Notes, f)
		}
	}

	res, err := stats.Compute(ctx, d, recs)
	if err != nil {
		return nil, err
	}
	for i := range res.Recordings {
		sr := &res.Recordings[i]
		r := byRec[sr.Recording]
		if r == nil {
			continue
		}
		r.Stats = sr
		for j := range sr.Features {
			if sr.Features[j].Name == schema.ColReward {
				r.Reward = &sr.Features[j]
			}
		}
	}
	for _, r := range rep.Recordings {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := rep.readFrames(d, r); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// readRows reads the recording's sessions and episodes rows and spaces.
func (r *Recording) readRows(d *dataset.Dataset) error {
	s, err := d.Session(r.Recording)
	if err != nil {
		return err
	}
	r.Row = s.Row()
	if r.Row != nil {
		r.EnvComponentID = r.Row.EnvComponentID
	}
	eps, err := d.Episodes(r.Recording)
	if err != nil {
		return err
	}
	if r.Spaces, err = d.SessionSpaces(r.Recording); err != nil {
		return err
	}
	r.Episodes = len(eps)
	for _, e := range eps {
		row := &e.Row
		if r.EnvComponentID == "" {
			r.EnvComponentID = row.EnvComponentID
		}
		if row.Status != schema.EpisodeCompleted {
			r.Incomplete++
			continue
		}
		ep := Episode{RecordID: e.EpisodeRecordID, Return: row.RewardSum, Length: row.StepsRecorded, Steps: row.StepsRecorded, Success: row.Success}
		if row.StepsFile == nil {
			ep.Steps = 0
		}
		if row.CumulativeReward != nil {
			ep.Return = *row.CumulativeReward
		}
		if row.StepCount != nil {
			ep.Length = *row.StepCount
		}
		if row.EndedAt != nil {
			ep.EndedAt = *row.EndedAt
		}
		if ep.Success != nil {
			r.Reported++
			if *ep.Success {
				r.Succeeded++
			}
		}
		r.Completed = append(r.Completed, ep)
	}
	// Episodes reads rows by record id (start order): completion order is
	// by ended_at, ties (lanes completing on one step) by record id.
	slices.SortStableFunc(r.Completed, func(a, b Episode) int { return a.EndedAt.Compare(b.EndedAt) })
	return nil
}

// Returns are the completed episodes' returns in order of completion.
func (r *Recording) Returns() []float64 {
	out := make([]float64, len(r.Completed))
	for i, e := range r.Completed {
		out[i] = e.Return
	}
	return out
}

// Lengths are the completed episodes' lengths in order of completion.
func (r *Recording) Lengths() []float64 {
	out := make([]float64, len(r.Completed))
	for i, e := range r.Completed {
		out[i] = float64(e.Length)
	}
	return out
}

// SuccessWindow is the number of episodes the rolling success rate
// averages over: a tenth of the episodes that report success, at least 10
// (or all of them, when fewer) and at most 100.
func (r *Recording) SuccessWindow() int {
	return max(min(r.Reported/10, 100), min(r.Reported, 10), 1)
}

// RollingSuccess is the success rate over the last SuccessWindow
// episodes that reported success (fewer at the start), at each of them
// in order of completion.
func (r *Recording) RollingSuccess() []float64 {
	w := r.SuccessWindow()
	var flags []bool
	for _, e := range r.Completed {
		if e.Success != nil {
			flags = append(flags, *e.Success)
		}
	}
	out := make([]float64, len(flags))
	n := 0
	for i, ok := range flags {
		if ok {
			n++
		}
		if i >= w && flags[i-w] {
			n--
		}
		out[i] = float64(n) / float64(min(i+1, w))
	}
	return out
}

// SuccessRate is Succeeded / Reported (NaN when no episode reported).
func (r *Recording) SuccessRate() float64 {
	if r.Reported == 0 {
		return math.NaN()
	}
	return float64(r.Succeeded) / float64(r.Reported)
}

// MeanReturn is the mean return of the completed episodes (NaN when
// none).
func (r *Recording) MeanReturn() float64 {
	if len(r.Completed) == 0 {
		return math.NaN()
	}
	var s float64
	for _, e := range r.Completed {
		s += e.Return
	}
	return s / float64(len(r.Completed))
}

// chosen picks the episodes whose frames are shown: the first completed,
// the best and the worst by return (the earliest on ties), among those
// with recorded steps; one episode chosen twice is shown once with both
// labels.
func (r *Recording) chosen() []*Sequence {
	var first, best, worst *Episode
	for i := range r.Completed {
		e := &r.Completed[i]
		if e.Steps == 0 {
			continue
		}
		if first == nil {
			first, best, worst = e, e, e
			continue
		}
		if e.Return > best.Return {
			best = e
		}
		if e.Return < worst.Return {
			worst = e
		}
	}
	var out []*Sequence
	for _, c := range []struct {
		e     *Episode
		label string
	}{{first, "first to complete"}, {best, "best"}, {worst, "worst"}} {
		if c.e == nil {
			continue
		}
		found := false
		for _, s := range out {
			if s.Episode.RecordID == c.e.RecordID {
				s.Labels = append(s.Labels, c.label)
				found = true
			}
		}
		if !found {
			out = append(out, &Sequence{Labels: []string{c.label}, Episode: *c.e})
		}
	}
	return out
}

// readFrames fills the recording's image leaves with the frames of the
// chosen episodes, within the report's frame budget.
func (rep *Report) readFrames(d *dataset.Dataset, r *Recording) error {
	obs := r.Spaces.Observation
	if obs == nil {
		return nil
	}
	for i := range obs.Leaves {
		lf := &obs.Leaves[i]
		if frame.IsImage(lf) {
			h, w, c := frame.Shape(lf)
			r.Images = append(r.Images, &ImageLeaf{Name: schema.ColumnName(schema.ColObservation, lf.Path), Leaf: lf.String(),
				index: i, h: h, w: w, c: c})
		}
	}
	if len(r.Images) == 0 {
		return nil
	}
	enc := &frame.Encoder{}
	for _, seq := range r.chosen() {
		frames, err := rep.episodeFrames(d, r, seq.Episode, enc)
		if err != nil {
			return err
		}
		for k, img := range r.Images {
			size := 0
			for _, f := range frames[k] {
				size += len(f.PNG)
			}
			name := fmt.Sprintf("episode %s (%s)", seq.Episode.RecordID, joinLabels(seq.Labels))
			switch {
			case len(frames[k]) == 0:
				img.Omitted = append(img.Omitted, fmt.Sprintf("%s: no step of it holds an observation", name))
				continue
			case rep.FrameBytes+size > rep.Settings.FrameBytes:
				img.Omitted = append(img.Omitted, fmt.Sprintf("%s: its %d frames (%s of PNG) would exceed the report's frame budget of %s; report fewer recordings, or raise the frame budget, to see them",
					name, len(frames[k]), humanBytes(size), humanBytes(rep.Settings.FrameBytes)))
				continue
			}
			rep.FrameBytes += size
			s := *seq
			s.Labels = slices.Clone(seq.Labels)
			s.Frames, s.SrcW, s.SrcH = frames[k], img.w, img.h
			for _, j := range sampleSteps(int64(len(frames[k])), rep.Settings.StripFrames) {
				s.Strip = append(s.Strip, int(j))
			}
			img.Sequences = append(img.Sequences, &s)
		}
	}
	return nil
}

// episodeFrames reads the frames of every image leaf at the sampled steps
// of one episode: frames[k] are leaf k's.
func (rep *Report) episodeFrames(d *dataset.Dataset, r *Recording, ep Episode, enc *frame.Encoder) ([][]Frame, error) {
	frames := make([][]Frame, len(r.Images))
	picks := sampleSteps(ep.Steps, rep.Settings.PlayerFrames)
	if len(picks) == 0 {
		return frames, nil
	}
	st, err := d.Steps(r.Recording, ep.RecordID)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var pos int64
	next := 0
	for next < len(picks) && st.Next() {
		if pos == picks[next] {
			next++
			leaves, err := st.ObservationLeaves()
			if err != nil {
				return nil, err
			}
			if leaves != nil {
				for i, img := range r.Images {
					if img.index >= len(leaves) {
						return nil, &dataset.FileError{Path: st.Path(), Row: st.Row(),
							Err: fmt.Errorf("the observation has %d leaves, its space %d: %w", len(leaves), len(r.Spaces.Observation.Leaves), ErrDamaged)}
					}
					k := frame.ShrinkFactor(img.h, img.w, rep.Settings.FrameSide)
					b, w, h, err := enc.Encode(leaves[img.index], img.h, img.w, img.c, k)
					if err != nil {
						return nil, &dataset.FileError{Path: st.Path(), Row: st.Row(), Err: fmt.Errorf("%s: %w: %w", img.Name, ErrDamaged, err)}
					}
					frames[i] = append(frames[i], Frame{Step: st.Step().Step, W: w, H: h, PNG: b})
				}
			}
		}
		pos++
	}
	if err := st.Err(); err != nil {
		return nil, err
	}
	return frames, nil
}

func joinLabels(labels []string) string {
	switch len(labels) {
	case 0:
		return ""
	case 1:
		return labels[0]
	}
	s := labels[0]
	for _, l := range labels[1 : len(labels)-1] {
		s += ", " + l
	}
	return s + " and " + labels[len(labels)-1]
}

func humanBytes(n int) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
