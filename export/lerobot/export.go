package lerobot

import (
	"context"
	"errors"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/frame"
	"github.com/rlrec/rlrec/schema"
)

// CodebaseVersion is the LeRobot dataset version the export follows.
const CodebaseVersion = "v3.0"

// Paths of the files the export writes, relative to its directory. The
// data files are DataPath with chunk and file indices filled in (see
// DataFile).
const (
	InfoPath     = "meta/info.json"
	StatsPath    = "meta/stats.json"
	TasksPath    = "meta/tasks.parquet"
	EpisodesPath = "meta/episodes/chunk-000/file-000.parquet"
	DataPath     = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"

	// ChunksSize is info.json's chunks_size: files per chunk directory.
	ChunksSize = 1000
	// DefaultDataFilesSizeInMB is the data file size (MiB) after which
	// the export starts the next file, LeRobot's default.
	DefaultDataFilesSizeInMB = 100
	videoFilesSizeInMB       = 200
)

// DataFile returns the path, relative to the export directory, of the
// data file with the given chunk and file index.
func DataFile(chunk, file int) string {
	return fmt.Sprintf("data/chunk-%03d/file-%03d.parquet", chunk, file)
}

// options is Export's configuration (Option).
type options struct {
	fps          int
	incomplete   bool
	replace      bool
	dataFilesMiB int
	video        bool
	ffmpeg       string
	progress     func(Progress)
}

// Option configures Export. The project's public packages configure
// with functional options: docs/decisions/options.md.
type Option func(*options)

// WithFPS sets info.json's fps, a whole number of frames per second; by
// default, and with 0, it is derived from the recorded step times (see
// the package doc). A negative one is refused (ErrFPS).
func WithFPS(fps int) Option { return func(o *options) { o.fps = fps } }

// WithIncomplete(true) also exports the episodes whose status is not
// "completed" (cut short by the session's end, a failure or a crash).
func WithIncomplete(yes bool) Option { return func(o *options) { o.incomplete = yes } }

// WithReplace(true) allows a directory that exists and is not empty: it
// is replaced, once the new export is complete, by the new one.
func WithReplace(yes bool) Option { return func(o *options) { o.replace = yes } }

// WithDataFilesSizeInMB sets info.json's data_files_size_in_mb: a data
// file is closed after the episode that takes it to this many MiB; by
// default, and with 0, DefaultDataFilesSizeInMB.
func WithDataFilesSizeInMB(mib int) Option { return func(o *options) { o.dataFilesMiB = mib } }

// WithVideo(true) encodes the RGB camera images as MP4 videos (H.264,
// with ffmpeg) instead of PNG images in the data files; gray images stay
// PNG.
func WithVideo(yes bool) Option { return func(o *options) { o.video = yes } }

// WithFFmpeg names the ffmpeg program for WithVideo: a path, or a name
// looked up in PATH; by default, and with "", "ffmpeg".
func WithFFmpeg(program string) Option { return func(o *options) { o.ffmpeg = program } }

// WithProgress has Export call progress after each exported episode.
func WithProgress(progress func(Progress)) Option { return func(o *options) { o.progress = progress } }

// Progress is how far an export is.
type Progress struct {
	Episodes, TotalEpisodes int
	Frames                  int64
}

// Summary describes a finished export.
type Summary struct {
	Episodes int
	Frames   int64
	Tasks    int
	FPS      int
	// DataFiles counts the data files written.
	DataFiles int
	// Incomplete counts the episodes left out for their status.
	Incomplete int
	// Skipped counts steps left out for a null observation or action.
	Skipped int64
	// MaxDrift is the largest difference between a frame's recorded time
	// (from its episode's first frame) and its timestamp frame_index /
	// fps.
	MaxDrift time.Duration
	// Features lists the feature names in info.json order.
	Features []string
}

func spacesKey(sp dataset.Spaces) (string, error) {
	var b []byte
	for _, l := range []*schema.Layout{sp.Observation, sp.Action} {
		if l == nil {
			b = append(b, "null\n"...)
			continue
		}
		js, err := schema.SpecJSON(l.Spec)
		if err != nil {
			return "", err
		}
		b = append(append(b, js...), '\n')
	}
	return string(b), nil
}

type epRef struct {
	rec dataset.Recording
	ep  dataset.Episode
}

// Export writes the recordings recs of d as a LeRobot v3.0 dataset into
// dir, which must not exist or be empty (unless WithReplace). The
// dataset is written into a new sibling directory which is renamed to dir
// once complete, so dir never holds a partial export.
func Export(ctx context.Context, d *dataset.Dataset, recs []dataset.Recording, dir string, opts ...Option) (Summary, error) {
	var opt options
	for _, o := range opts {
		o(&opt)
	}
	var sum Summary
	if opt.fps < 0 {
		return sum, fmt.Errorf("%w: got %d", ErrFPS, opt.fps)
	}
	if opt.dataFilesMiB < 0 {
		return sum, fmt.Errorf("data files size %d MiB: want a positive number", opt.dataFilesMiB)
	}
	if opt.dataFilesMiB == 0 {
		opt.dataFilesMiB = DefaultDataFilesSizeInMB
	}
	exists := false
	if ents, err := os.ReadDir(dir); err == nil {
		exists = true
		if len(ents) > 0 && !opt.replace {
			return sum, fmt.Errorf("%w: %s", ErrExists, dir)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return sum, fmt.Errorf("output directory: %w", err)
	}

	// The episodes to export and their spaces.
	var refs []epRef
	var spaces dataset.Spaces
	var key string
	for _, rec := range recs {
		eps, err := d.Episodes(rec)
		if err != nil {
			return sum, err
		}
		for _, e := range eps {
			if !d.HasSteps(rec, e.EpisodeRecordID) {
				continue
			}
			if !opt.incomplete && e.Row.Status != schema.EpisodeCompleted {
				sum.Incomplete++
				continue
			}
			k, err := spacesKey(e.Spaces)
			if err != nil {
				return sum, err
			}
			if key == "" {
				key, spaces = k, e.Spaces
			} else if k != key {
				return sum, fmt.Errorf("%w: recording %s episode %s differs from the first episode exported", ErrSpaces, rec, e.EpisodeRecordID)
			}
			refs = append(refs, epRef{rec, e})
		}
	}
	if len(refs) == 0 {
		return sum, fmt.Errorf("%w: the recordings hold no episode with steps", ErrNoFrames)
	}
	if spaces.Action == nil {
		return sum, fmt.Errorf("%w: the recordings have no action space", ErrNoFrames)
	}
	fs, taskLeaf, err := features(spaces.Observation, spaces.Action)
	if err != nil {
		return sum, err
	}

	ffmpeg := ""
	if opt.video {
		if ffmpeg, err = findFFmpeg(opt.ffmpeg); err != nil {
			return sum, err
		}
		for _, f := range fs {
			if f.kind == kindImage && f.c == 3 {
				f.dtype = "video"
			}
		}
	}

	fps := opt.fps
	if fps == 0 {
		if fps, err = deriveFPS(ctx, d, refs); err != nil {
			return sum, err
		}
	}

	parent := filepath.Dir(filepath.Clean(dir))
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".export-")
	if err != nil {
		return sum, fmt.Errorf("create the export's temporary directory: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()

	x := &exporter{d: d, fs: fs, taskLeaf: taskLeaf, spaces: spaces, fps: fps, opt: opt, sum: &sum, taskIndex: map[string]int64{}, ffmpeg: ffmpeg}
	if err := x.frames(ctx, tmp, refs); err != nil {
		return sum, err
	}
	if err := x.meta(tmp); err != nil {
		return sum, err
	}
	if exists {
		if err := os.RemoveAll(dir); err != nil {
			return sum, fmt.Errorf("replace %s: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return sum, fmt.Errorf("move the export into place: %w", err)
	}
	done = true
	if err := syncDir(parent); err != nil {
		return sum, err
	}
	return sum, nil
}

// deriveFPS reads the recorded step times of the frames to export (a
// first pass that decodes no leaf) and returns the frame rate of the
// median interval between consecutive frames.
func deriveFPS(ctx context.Context, d *dataset.Dataset, refs []epRef) (int, error) {
	seen := map[dataset.Recording]bool{}
	for _, r := range refs {
		if seen[r.rec] {
			continue
		}
		seen[r.rec] = true
		clock, err := sessionClock(d, r.rec)
		if err != nil {
			return 0, err
		}
		if err := checkClock(r.rec, clock); err != nil {
			return 0, err
		}
	}
	var iv []float64
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		st, err := d.Steps(r.rec, r.ep.EpisodeRecordID)
		if err != nil {
			return 0, err
		}
		var prev time.Time
		first := true
		for st.Next() {
			s := st.Step()
			if s.ObservationBlob == nil || s.ActionBlob == nil {
				continue
			}
			if !first {
				iv = append(iv, s.RecordedAt.Sub(prev).Seconds())
			}
			first = false
			prev = s.RecordedAt
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return 0, err
		}
	}
	return fpsFromIntervals(iv)
}

// episodeMeta is what the episodes file says of one exported episode.
type episodeMeta struct {
	rec         dataset.Recording
	rid, id     string
	length      int64
	from        int64
	chunk, file int
	tasks       []string
	envComp     string
	stats       []any       // per feature (fs order, then the fixed ones): *numStats or *imgStats
	videos      []videoSpan // per video feature, in fs order
}

// videoSpan is where an episode's frames of one video feature are.
type videoSpan struct {
	chunk, file int
	from, to    float64
}

// exporter holds the state of one export.
type exporter struct {
	d         *dataset.Dataset
	fs        []*feature
	taskLeaf  int
	spaces    dataset.Spaces
	fps       int
	opt       options
	sum       *Summary
	taskIndex map[string]int64
	taskList  []string
	metas     []episodeMeta
	global    []any // per feature as episodeMeta.stats, over every frame
	ffmpeg    string
	videos    []*videoWriter // per video feature, in fs order
}

func (x *exporter) newStats() []any {
	out := make([]any, 0, len(x.fs)+len(fixedFeatures))
	for _, f := range x.fs {
		switch f.kind {
		case kindImage:
			out = append(out, newImgStats(f.c))
		case kindString:
			out = append(out, nil)
		default:
			out = append(out, newNumStats(f.width))
		}
	}
	for range fixedFeatures {
		out = append(out, newNumStats(1))
	}
	return out
}

func (x *exporter) taskOf(t string) int64 {
	if i, ok := x.taskIndex[t]; ok {
		return i
	}
	x.taskIndex[t] = int64(len(x.taskList))
	x.taskList = append(x.taskList, t)
	return x.taskIndex[t]
}

// frames writes the data files under dir and gathers the episodes'
// metadata and statistics.
func (x *exporter) frames(ctx context.Context, dir string, refs []epRef) error {
	dw, err := newDataWriter(dir, x.fs, int64(x.opt.dataFilesMiB)<<20)
	if err != nil {
		return err
	}
	x.global = x.newStats()
	videoOf := map[*feature]*videoWriter{}
	for _, f := range x.fs {
		if f.dtype == "video" {
			v := &videoWriter{ffmpeg: x.ffmpeg, dir: dir, f: f, fps: x.fps, limit: videoFilesSizeInMB << 20}
			x.videos = append(x.videos, v)
			videoOf[f] = v
		}
	}
	defer func() {
		for _, v := range x.videos {
			v.abort()
		}
	}()
	var index int64
	// PNG frames at zlib's fastest level: lossless all the same, and
	// the export's time is mostly the encoder's (BENCHMARKS.md).
	enc := frame.Encoder{Level: png.BestSpeed}
	var vals []float64
	fps := float64(x.fps)
	for ri, r := range refs {
		if err := ctx.Err(); err != nil {
			return err
		}
		m := episodeMeta{rec: r.rec, rid: r.ep.EpisodeRecordID, id: r.ep.Row.EpisodeID, from: index,
			envComp: r.ep.Row.EnvComponentID, stats: x.newStats()}
		m.chunk, m.file = dw.position()
		for _, v := range x.videos {
			c, f, from := v.position()
			m.videos = append(m.videos, videoSpan{chunk: c, file: f, from: from})
		}
		st, err := x.d.Steps(r.rec, r.ep.EpisodeRecordID)
		if err != nil {
			return err
		}
		var t0 time.Time
		var frame int64
		epTasks := map[string]bool{}
		for st.Next() {
			s := st.Step()
			if s.ObservationBlob == nil || s.ActionBlob == nil {
				x.sum.Skipped++
				continue
			}
			obs, err := st.ObservationLeaves()
			if err != nil {
				st.Close()
				return err
			}
			act, err := st.ActionLeaves()
			if err != nil {
				st.Close()
				return err
			}
			if frame == 0 {
				t0 = s.RecordedAt
			}
			want := float64(frame) / fps
			ts := float32(want)
			if math.Abs(float64(ts)-want) > TimestampTolerance {
				st.Close()
				return fmt.Errorf("%w: recording %s episode %s frame %d: float32 holds %v s as %v; export shorter episodes or a lower fps", ErrTimestamp, r.rec, m.rid, frame, want, ts)
			}
			if drift := time.Duration(math.Abs(s.RecordedAt.Sub(t0).Seconds()-want) * 1e9); drift > x.sum.MaxDrift {
				x.sum.MaxDrift = drift
			}
			task := m.envComp
			if task == "" {
				task = "default"
			}
			if x.taskLeaf >= 0 {
				task = string(obs[x.taskLeaf])
			}
			ti := x.taskOf(task)
			if !epTasks[task] {
				epTasks[task] = true
				m.tasks = append(m.tasks, task)
			}
			row := make(map[string]any, len(x.fs)+len(fixedFeatures))
			var size int64
			for i, f := range x.fs {
				l, leaves := x.spaces.Observation, obs
				if f.act {
					l, leaves = x.spaces.Action, act
				}
				var v any
				switch f.kind {
				case kindString:
					v = string(leaves[f.leaf])
					size += int64(len(leaves[f.leaf]))
				case kindImage:
					pix := leaves[f.leaf]
					if len(pix) != f.h*f.w*f.c {
						err = fmt.Errorf("image leaf has %d bytes, want %d", len(pix), f.h*f.w*f.c)
						break
					}
					m.stats[i].(*imgStats).add(pix)
					if v := videoOf[f]; v != nil {
						if err = v.add(ctx, pix); err != nil {
							break
						}
						continue
					}
					var b []byte
					b, _, _, err = enc.Encode(pix, f.h, f.w, f.c, 1)
					v = map[string]any{"bytes": b, "path": nil}
					size += int64(len(b))
				case kindVector:
					// The row keeps the value's slice: no reuse.
					v, vals, err = f.vectorValue(l, leaves, nil, nil, vals)
					if err == nil {
						m.stats[i].(*numStats).add(vals)
					}
					size += int64(8 * f.width)
				case kindExact:
					v, vals, err = f.exactValue(&l.Leaves[f.leaf], leaves[f.leaf], vals)
					if err == nil {
						m.stats[i].(*numStats).add(vals)
					}
					size += int64(8 * f.width)
				}
				if err != nil {
					st.Close()
					var ie *InexactError
					if errors.As(err, &ie) {
						return fmt.Errorf("%s row %d (recording %s episode %s step %d): %w", st.Path(), st.Row(), r.rec, m.rid, s.Step, err)
					}
					return fmt.Errorf("%s row %d: %s: %w", st.Path(), st.Row(), f.name, err)
				}
				row[f.name] = v
			}
			done := s.Terminated || s.Truncated
			fixed := [...]float64{float64(ts), float64(frame), float64(len(x.metas)), float64(index), float64(ti), float64(float32(s.Reward)), b2f(done)}
			for j, v := range fixed {
				m.stats[len(x.fs)+j].(*numStats).add([]float64{v})
			}
			row["timestamp"] = ts
			row["frame_index"] = frame
			row["episode_index"] = int64(len(x.metas))
			row["index"] = index
			row["task_index"] = ti
			row["next.reward"] = float32(s.Reward)
			row["next.done"] = done
			if err := dw.add(row, size+64); err != nil {
				st.Close()
				return err
			}
			frame++
			index++
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return err
		}
		if frame == 0 {
			continue
		}
		m.length = frame
		for i, v := range x.videos {
			_, _, to := v.position()
			m.videos[i].to = to
			if err := v.endEpisode(); err != nil {
				return err
			}
		}
		for i, s := range m.stats {
			switch g := x.global[i].(type) {
			case *numStats:
				g.merge(s.(*numStats))
			case *imgStats:
				g.merge(s.(*imgStats))
			}
		}
		x.metas = append(x.metas, m)
		if err := dw.endEpisode(); err != nil {
			return err
		}
		if x.opt.progress != nil {
			x.opt.progress(Progress{Episodes: ri + 1, TotalEpisodes: len(refs), Frames: index})
		}
	}
	if err := dw.close(); err != nil {
		return err
	}
	for _, v := range x.videos {
		if err := v.finish(); err != nil {
			return err
		}
	}
	if index == 0 {
		return fmt.Errorf("%w: no step has both an observation and an action", ErrNoFrames)
	}
	x.sum.Frames = index
	x.sum.DataFiles = dw.files
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
