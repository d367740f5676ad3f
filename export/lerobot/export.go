package lerobot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/frame"
	"github.com/rlrec/rlrec/schema"
)

// CodebaseVersion is the LeRobot dataset version the export follows.
const CodebaseVersion = "v3.0"

// Paths of the files the export writes, relative to its directory.
const (
	InfoPath     = "meta/info.json"
	StatsPath    = "meta/stats.json"
	TasksPath    = "meta/tasks.parquet"
	EpisodesPath = "meta/episodes/chunk-000/file-000.parquet"
	DataPath     = "data/chunk-000/file-000.parquet"

	dataPathTemplate  = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
	videoPathTemplate = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
	chunksSize        = 1000
	dataFilesSizeInMB = 100
	videoFilesSizeMB  = 200
)

// ErrSpaces is returned when the recordings to export do not share their
// observation and action spaces.
var ErrSpaces = errors.New("recordings have different spaces")

// ErrNoFrames is returned when the recordings hold no step with both an
// observation and an action.
var ErrNoFrames = errors.New("no frames to export")

// Options tune an export.
type Options struct {
	// FPS is the info.json fps; 0 derives it from the steps' recorded_at
	// (see the package doc).
	FPS float64
	// Incomplete also exports the episodes whose status is not
	// "completed" (cut short by the session's end, a failure or a crash).
	Incomplete bool
}

// Summary describes a finished export.
type Summary struct {
	Episodes int
	Frames   int64
	Tasks    int
	FPS      float64
	// Incomplete counts the episodes left out for their status.
	Incomplete int
	// Skipped counts steps left out for a null observation or action.
	Skipped int64
	// Features lists the feature names in info.json order.
	Features []string
}

// feature kinds
const (
	kImage = iota
	kFloat
	kInt
	kIntList
	kString
)

type feature struct {
	name  string
	act   bool // a leaf of the action space
	leaf  int
	kind  int
	dtype string
	shape []int64
	names any
	st    *acc
}

// acc accumulates statistics element by element.
type acc struct {
	n             int64 // frames
	k             []int64
	sum, sq       []float64
	min, max      []float64
	shape         []int64
	perChannelImg bool
}

func newAcc(width int, shape []int64) *acc {
	a := &acc{k: make([]int64, width), sum: make([]float64, width), sq: make([]float64, width), min: make([]float64, width), max: make([]float64, width), shape: shape}
	for i := range a.min {
		a.min[i] = math.Inf(1)
		a.max[i] = math.Inf(-1)
	}
	return a
}

// add counts v in element i; NaN and infinities are left out (JSON has
// no spelling for them).
func (a *acc) add(i int, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return
	}
	a.k[i]++
	a.sum[i] += v
	a.sq[i] += v * v
	a.min[i] = min(a.min[i], v)
	a.max[i] = max(a.max[i], v)
}

func (a *acc) json() map[string]any {
	w := len(a.sum)
	mean, std := make([]float64, w), make([]float64, w)
	for i := range w {
		if a.k[i] == 0 {
			a.min[i], a.max[i] = 0, 0
			continue
		}
		m := a.sum[i] / float64(a.k[i])
		mean[i] = m
		std[i] = math.Sqrt(max(0, a.sq[i]/float64(a.k[i])-m*m))
	}
	shape := func(v []float64) any {
		if a.perChannelImg {
			out := make([][][]float64, len(v))
			for i := range v {
				out[i] = [][]float64{{v[i]}}
			}
			return out
		}
		return v
	}
	return map[string]any{
		"mean":  shape(mean),
		"std":   shape(std),
		"min":   shape(a.min),
		"max":   shape(a.max),
		"count": []int64{a.n},
	}
}

// isImage reports whether a leaf is exported as an image.
func isImage(l *schema.Leaf) bool { return frame.IsImage(l) }

// features maps the spaces' leaves to features; task is the index of the
// observation leaf that is the task (-1: none).
func features(sp dataset.Spaces) (fs []*feature, task int, err error) {
	task = -1
	add := func(l *schema.Layout, act bool) error {
		if l == nil {
			return nil
		}
		prefix := "observation"
		if act {
			prefix = "action"
		}
		for i := range l.Leaves {
			lf := &l.Leaves[i]
			name := prefix
			if lf.Path != "" {
				segs, err := schema.SplitPath(lf.Path)
				if err != nil {
					return err
				}
				name += "." + strings.Join(segs, ".")
			} else if !act {
				name += ".state"
				if isImage(lf) {
					name = "observation.image"
				}
			}
			f := &feature{name: name, act: act, leaf: i}
			switch {
			case lf.Kind == schema.KindText:
				if !act && task < 0 {
					task = i
					continue
				}
				f.kind, f.dtype, f.shape = kString, "string", []int64{1}
			case isImage(lf):
				f.kind, f.dtype = kImage, "image"
				f.shape = append([]int64(nil), lf.Shape...)
				f.names = []string{"height", "width", "channel"}
				f.st = newAcc(int(lf.Shape[2]), nil)
				f.st.perChannelImg = true
			case lf.Kind == schema.KindBox:
				f.kind, f.dtype, f.shape = kFloat, "float32", []int64{max(lf.Numel, 1)}
			case lf.Kind == schema.KindDiscrete:
				f.kind, f.dtype, f.shape = kInt, "int64", []int64{1}
			default: // MultiBinary, MultiDiscrete
				f.kind, f.dtype, f.shape = kIntList, "int64", []int64{lf.Numel}
			}
			if f.st == nil && f.kind != kString {
				f.st = newAcc(int(f.shape[0]), f.shape)
			}
			fs = append(fs, f)
		}
		return nil
	}
	if err := add(sp.Observation, false); err != nil {
		return nil, -1, err
	}
	if err := add(sp.Action, true); err != nil {
		return nil, -1, err
	}
	seen := map[string]bool{}
	for _, f := range fs {
		if seen[f.name] {
			return nil, -1, fmt.Errorf("two leaves map to the feature name %q", f.name)
		}
		seen[f.name] = true
	}
	return fs, task, nil
}

// fixed features, in info.json order after the leaf features.
var fixedFeatures = []struct {
	name, dtype string
}{
	{"timestamp", "float32"},
	{"frame_index", "int64"},
	{"episode_index", "int64"},
	{"index", "int64"},
	{"task_index", "int64"},
	{"next.reward", "float32"},
	{"next.done", "bool"},
}

func (f *feature) node() parquet.Node {
	switch f.kind {
	case kImage:
		return parquet.Group{
			"bytes": parquet.Optional(parquet.Leaf(parquet.ByteArrayType)),
			"path":  parquet.Optional(parquet.String()),
		}
	case kFloat:
		return parquet.List(parquet.Leaf(parquet.FloatType))
	case kInt:
		return parquet.Int(64)
	case kIntList:
		return parquet.List(parquet.Int(64))
	}
	return parquet.String()
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

type episodeMeta struct {
	rec        dataset.Recording
	rid, id    string
	length     int64
	from       int64
	tasks      []string
	envComp    string
	firstStart time.Time
}

// Export writes the recordings recs of d as a LeRobot v3.0 dataset into
// dir, which must not exist or be empty. Files are written under
// temporary names and renamed into place, info.json last.
func Export(ctx context.Context, d *dataset.Dataset, recs []dataset.Recording, dir string, opt Options) (Summary, error) {
	var sum Summary
	if opt.FPS < 0 || math.IsNaN(opt.FPS) || math.IsInf(opt.FPS, 0) {
		return sum, fmt.Errorf("fps %v: want a positive number", opt.FPS)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return sum, fmt.Errorf("%s is not empty; export into a new directory", dir)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return sum, err
	}

	// The episodes to export and their spaces.
	type epRef struct {
		rec dataset.Recording
		ep  dataset.Episode
	}
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
			if !opt.Incomplete && e.Row.Status != schema.EpisodeCompleted {
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
				return sum, fmt.Errorf("%w: %s episode %s differs from the first episode exported; export one recording (--session, --env) at a time", ErrSpaces, rec, e.EpisodeRecordID)
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
	fs, taskLeaf, err := features(spaces)
	if err != nil {
		return sum, err
	}

	if err := os.MkdirAll(filepath.Join(dir, "data", "chunk-000"), 0o755); err != nil {
		return sum, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "meta", "episodes", "chunk-000"), 0o755); err != nil {
		return sum, err
	}

	// The data file, written frame by frame.
	group := parquet.Group{}
	for _, f := range fs {
		group[f.name] = f.node()
	}
	group["timestamp"] = parquet.Leaf(parquet.FloatType)
	group["next.reward"] = parquet.Leaf(parquet.FloatType)
	group["next.done"] = parquet.Leaf(parquet.BooleanType)
	for _, n := range []string{"frame_index", "episode_index", "index", "task_index"} {
		group[n] = parquet.Int(64)
	}
	dataSchema := parquet.NewSchema("lerobot", group)
	fixedSt := map[string]*acc{}
	for _, ff := range fixedFeatures {
		fixedSt[ff.name] = newAcc(1, []int64{1})
	}

	var taskIndex = map[string]int64{}
	var taskList []string
	taskOf := func(t string) int64 {
		if i, ok := taskIndex[t]; ok {
			return i
		}
		taskIndex[t] = int64(len(taskList))
		taskList = append(taskList, t)
		return taskIndex[t]
	}

	var metas []episodeMeta
	var intervals []float64
	err = writeAtomic(filepath.Join(dir, DataPath), func(w io.Writer) error {
		pw := parquet.NewGenericWriter[map[string]any](w, dataSchema,
			parquet.Compression(&parquet.Zstd), parquet.PageBufferSize(1<<20), parquet.MaxRowsPerRowGroup(4096))
		const batch = 256
		rows := make([]map[string]any, 0, batch)
		flush := func() error {
			if len(rows) == 0 {
				return nil
			}
			_, err := pw.Write(rows)
			rows = rows[:0]
			return err
		}
		var index int64
		var png pngEncoder
		for _, r := range refs {
			if err := ctx.Err(); err != nil {
				return err
			}
			m := episodeMeta{rec: r.rec, rid: r.ep.EpisodeRecordID, id: r.ep.Row.EpisodeID, from: index, envComp: r.ep.Row.EnvComponentID}
			st, err := d.Steps(r.rec, r.ep.EpisodeRecordID)
			if err != nil {
				return err
			}
			var t0, prev time.Time
			var frame int64
			epTasks := map[string]bool{}
			for st.Next() {
				s := st.Step()
				if s.ObservationBlob == nil || s.ActionBlob == nil {
					sum.Skipped++
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
				} else {
					intervals = append(intervals, s.RecordedAt.Sub(prev).Seconds())
				}
				prev = s.RecordedAt
				task := m.envComp
				if task == "" {
					task = "default"
				}
				if taskLeaf >= 0 {
					task = string(obs[taskLeaf])
				}
				ti := taskOf(task)
				if !epTasks[task] {
					epTasks[task] = true
					m.tasks = append(m.tasks, task)
				}
				row := make(map[string]any, len(fs)+len(fixedFeatures))
				for _, f := range fs {
					l, leaves := spaces.Observation, obs
					if f.act {
						l, leaves = spaces.Action, act
					}
					v, err := f.value(&l.Leaves[f.leaf], leaves[f.leaf], &png)
					if err != nil {
						st.Close()
						return fmt.Errorf("%s step %d: %s: %w", st.Path(), s.Step, f.name, err)
					}
					row[f.name] = v
				}
				ts := float32(s.RecordedAt.Sub(t0).Seconds())
				done := s.Terminated || s.Truncated
				row["timestamp"] = ts
				row["frame_index"] = frame
				row["episode_index"] = int64(len(metas))
				row["index"] = index
				row["task_index"] = ti
				row["next.reward"] = float32(s.Reward)
				row["next.done"] = done
				for name, v := range map[string]float64{
					"timestamp": float64(ts), "frame_index": float64(frame), "episode_index": float64(len(metas)),
					"index": float64(index), "task_index": float64(ti), "next.reward": float64(float32(s.Reward)), "next.done": b2f(done),
				} {
					fixedSt[name].n++
					fixedSt[name].add(0, v)
				}
				rows = append(rows, row)
				if len(rows) == batch {
					if err := flush(); err != nil {
						st.Close()
						return err
					}
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
			metas = append(metas, m)
		}
		if err := flush(); err != nil {
			return err
		}
		return pw.Close()
	})
	if err != nil {
		return sum, err
	}
	total := int64(0)
	for _, m := range metas {
		total += m.length
	}
	if total == 0 {
		return sum, fmt.Errorf("%w: no step has both an observation and an action", ErrNoFrames)
	}

	fps := opt.FPS
	if fps == 0 {
		fps = medianFPS(intervals)
	}

	// meta/tasks.parquet
	if err := writeTasks(filepath.Join(dir, TasksPath), taskList); err != nil {
		return sum, err
	}
	// meta/episodes
	if err := writeEpisodes(filepath.Join(dir, EpisodesPath), metas); err != nil {
		return sum, err
	}
	// meta/stats.json
	statsJS := map[string]any{}
	for _, f := range fs {
		if f.st != nil {
			statsJS[f.name] = f.st.json()
		}
	}
	for name, a := range fixedSt {
		statsJS[name] = a.json()
	}
	if err := writeJSON(filepath.Join(dir, StatsPath), statsJS); err != nil {
		return sum, err
	}
	// meta/info.json
	feats := orderedMap{}
	for _, f := range fs {
		feats = append(feats, kv{f.name, orderedMap{{"dtype", f.dtype}, {"shape", f.shape}, {"names", f.names}}})
		sum.Features = append(sum.Features, f.name)
	}
	for _, ff := range fixedFeatures {
		feats = append(feats, kv{ff.name, orderedMap{{"dtype", ff.dtype}, {"shape", []int64{1}}, {"names", nil}}})
		sum.Features = append(sum.Features, ff.name)
	}
	var robot any
	for i, m := range metas {
		if i == 0 {
			robot = m.envComp
		} else if robot != m.envComp {
			robot = nil
			break
		}
	}
	if robot == "" {
		robot = nil
	}
	var fpsJS any = fps
	if fps == math.Trunc(fps) {
		fpsJS = int64(fps)
	}
	info := orderedMap{
		{"codebase_version", CodebaseVersion},
		{"robot_type", robot},
		{"total_episodes", len(metas)},
		{"total_frames", total},
		{"total_tasks", len(taskList)},
		{"chunks_size", chunksSize},
		{"data_files_size_in_mb", dataFilesSizeInMB},
		{"video_files_size_in_mb", videoFilesSizeMB},
		{"fps", fpsJS},
		{"splits", map[string]string{"train": fmt.Sprintf("0:%d", len(metas))}},
		{"data_path", dataPathTemplate},
		{"video_path", videoPathTemplate},
		{"features", feats},
	}
	if err := writeJSON(filepath.Join(dir, InfoPath), info); err != nil {
		return sum, err
	}
	sum.Episodes, sum.Frames, sum.Tasks, sum.FPS = len(metas), total, len(taskList), fps
	return sum, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// medianFPS is 1 / the median interval, rounded to a whole number, at
// least 1 (1 when there is no positive interval).
func medianFPS(iv []float64) float64 {
	pos := iv[:0:0]
	for _, v := range iv {
		if v > 0 {
			pos = append(pos, v)
		}
	}
	if len(pos) == 0 {
		return 1
	}
	sort.Float64s(pos)
	m := pos[len(pos)/2]
	if len(pos)%2 == 0 {
		m = (pos[len(pos)/2-1] + pos[len(pos)/2]) / 2
	}
	return max(1, math.Round(1/m))
}

// value converts one leaf to its column value and adds it to the
// feature's statistics.
func (f *feature) value(l *schema.Leaf, b []byte, enc *pngEncoder) (any, error) {
	switch f.kind {
	case kString:
		return string(b), nil
	case kImage:
		h, w, c := int(l.Shape[0]), int(l.Shape[1]), int(l.Shape[2])
		if len(b) != h*w*c {
			return nil, fmt.Errorf("image leaf has %d bytes, want %d", len(b), h*w*c)
		}
		f.st.n++
		for i, p := range b {
			f.st.add(i%c, float64(p)/255)
		}
		pngBytes, err := enc.encode(b, h, w, c)
		if err != nil {
			return nil, err
		}
		return map[string]any{"bytes": pngBytes, "path": nil}, nil
	case kFloat:
		return elems[float32](f, l, b)
	case kInt:
		v, err := blob.DecodeLeaf(l, b)
		if err != nil {
			return nil, err
		}
		f.st.n++
		f.st.add(0, float64(v.(int64)))
		return v.(int64), nil
	}
	return elems[int64](f, l, b)
}

// elems decodes a leaf's elements as T, the feature's dtype, and adds
// them to its statistics, element by element.
func elems[T float32 | int64](f *feature, l *schema.Leaf, b []byte) ([]T, error) {
	out, err := blob.AppendElems(make([]T, 0, f.shape[0]), l.DType, b)
	if err != nil {
		return nil, err
	}
	f.st.n++
	for i, v := range out {
		f.st.add(i, float64(v))
	}
	return out, nil
}

// pngEncoder encodes HxWxC uint8 pixels as PNG, every pixel kept.
type pngEncoder struct{ enc frame.Encoder }

func (e *pngEncoder) encode(pix []byte, h, w, c int) ([]byte, error) {
	b, _, _, err := e.enc.Encode(pix, h, w, c, 1)
	return b, err
}

type kv struct {
	k string
	v any
}

// orderedMap marshals as a JSON object with its keys in order.
type orderedMap []kv

func (m orderedMap) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range m {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.k)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func writeJSON(path string, v any) error {
	js, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return err
	}
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	})
}

// writeAtomic writes path through a temporary file renamed into place.
func writeAtomic(path string, fill func(w io.Writer) error) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// TaskRow is one row of meta/tasks.parquet.
type TaskRow struct {
	TaskIndex int64  `parquet:"task_index"`
	Task      string `parquet:"task"`
}

// pandasTasksMeta makes pandas read the task column back as the index,
// as the file LeRobot writes from a DataFrame indexed by task.
const pandasTasksMeta = `{"index_columns": ["task"], "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object", "metadata": {"encoding": "UTF-8"}}], "columns": [{"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null}, {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": null}], "creator": {"library": "rlrec", "version": "1"}, "pandas_version": "2.2.3"}`

func writeTasks(path string, tasks []string) error {
	rows := make([]TaskRow, len(tasks))
	for i, t := range tasks {
		rows[i] = TaskRow{int64(i), t}
	}
	return writeAtomic(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[TaskRow](w, parquet.KeyValueMetadata("pandas", pandasTasksMeta))
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		return pw.Close()
	})
}

// EpisodeRow is one row of meta/episodes/chunk-000/file-000.parquet. The
// rlrec/ columns name the recorded episode it comes from.
type EpisodeRow struct {
	EpisodeIndex         int64    `parquet:"episode_index"`
	Tasks                []string `parquet:"tasks,list"`
	Length               int64    `parquet:"length"`
	DataChunkIndex       int64    `parquet:"data/chunk_index"`
	DataFileIndex        int64    `parquet:"data/file_index"`
	DatasetFromIndex     int64    `parquet:"dataset_from_index"`
	DatasetToIndex       int64    `parquet:"dataset_to_index"`
	MetaEpisodesChunk    int64    `parquet:"meta/episodes/chunk_index"`
	MetaEpisodesFile     int64    `parquet:"meta/episodes/file_index"`
	RLRecSessionID       string   `parquet:"rlrec/session_id"`
	RLRecEnvID           string   `parquet:"rlrec/env_id"`
	RLRecEpisodeRecordID string   `parquet:"rlrec/episode_record_id"`
	RLRecEpisodeID       string   `parquet:"rlrec/episode_id"`
}

func writeEpisodes(path string, metas []episodeMeta) error {
	rows := make([]EpisodeRow, len(metas))
	for i, m := range metas {
		rows[i] = EpisodeRow{
			EpisodeIndex: int64(i), Tasks: m.tasks, Length: m.length,
			DatasetFromIndex: m.from, DatasetToIndex: m.from + m.length,
			RLRecSessionID: m.rec.SessionID, RLRecEnvID: m.rec.EnvID,
			RLRecEpisodeRecordID: m.rid, RLRecEpisodeID: m.id,
		}
	}
	return writeAtomic(path, func(w io.Writer) error {
		pw := parquet.NewGenericWriter[EpisodeRow](w)
		if _, err := pw.Write(rows); err != nil {
			return err
		}
		return pw.Close()
	})
}
