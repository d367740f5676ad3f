package lerobot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
)

// writeFile writes one finished file of the export with vfs.WriteFile (a
// temporary name, fsync, rename) and syncs its directory.
func writeFile(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := vfs.Default.MkdirAll(dir); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp")
	if err := vfs.WriteFile(vfs.Default, tmp, path, data); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	if err := vfs.Default.SyncDir(dir); err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// rowGroupBytes bounds the frames a data file's writer buffers before it
// writes them as a row group.
const rowGroupBytes = 16 << 20

// dataWriter writes the frames into data files of about limit bytes,
// starting a new file only between episodes (an episode's frames are in
// one file, as LeRobot's episodes file says). A file is built in memory
// and written whole, so memory holds at most about one file.
type dataWriter struct {
	dir     string
	schema  *parquet.Schema
	limit   int64
	fileNo  int // the file being written: chunk fileNo/ChunksSize, file fileNo%ChunksSize
	buf     bytes.Buffer
	pw      *parquet.GenericWriter[map[string]any]
	batch   []map[string]any
	pending int64 // bytes of frames not yet written as a row group
	files   int
}

func newDataWriter(dir string, fs []*feature, limit int64) (*dataWriter, error) {
	group := parquet.Group{}
	for _, f := range fs {
		if f.dtype != "video" {
			group[f.name] = f.node()
		}
	}
	group["timestamp"] = parquet.Leaf(parquet.FloatType)
	group["next.reward"] = parquet.Leaf(parquet.FloatType)
	group["next.done"] = parquet.Leaf(parquet.BooleanType)
	for _, n := range []string{"frame_index", "episode_index", "index", "task_index"} {
		group[n] = parquet.Int(64)
	}
	return &dataWriter{dir: dir, schema: parquet.NewSchema("lerobot", group), limit: limit}, nil
}

// position is the chunk and file index of the file the next frame goes
// to.
func (w *dataWriter) position() (chunk, file int) {
	return w.fileNo / ChunksSize, w.fileNo % ChunksSize
}

func (w *dataWriter) add(row map[string]any, size int64) error {
	if w.pw == nil {
		w.buf.Reset()
		w.pw = parquet.NewGenericWriter[map[string]any](&w.buf, w.schema,
			parquet.Compression(&parquet.Zstd), parquet.PageBufferSize(1<<20), parquet.MaxRowsPerRowGroup(1<<16))
	}
	w.batch = append(w.batch, row)
	w.pending += size
	if len(w.batch) == 256 {
		if err := w.writeBatch(); err != nil {
			return err
		}
	}
	if w.pending >= rowGroupBytes {
		return w.flush()
	}
	return nil
}

func (w *dataWriter) writeBatch() error {
	if len(w.batch) == 0 {
		return nil
	}
	_, err := w.pw.Write(w.batch)
	clear(w.batch)
	w.batch = w.batch[:0]
	if err != nil {
		return fmt.Errorf("write frames: %w", err)
	}
	return nil
}

func (w *dataWriter) flush() error {
	if err := w.writeBatch(); err != nil {
		return err
	}
	w.pending = 0
	if err := w.pw.Flush(); err != nil {
		return fmt.Errorf("write frames: %w", err)
	}
	return nil
}

// endEpisode ends the file once it has reached the size limit.
func (w *dataWriter) endEpisode() error {
	if w.pw == nil || int64(w.buf.Len())+w.pending < w.limit {
		return nil
	}
	return w.finish()
}

func (w *dataWriter) finish() error {
	if err := w.writeBatch(); err != nil {
		return err
	}
	if err := w.pw.Close(); err != nil {
		return fmt.Errorf("write frames: %w", err)
	}
	w.pw = nil
	w.pending = 0
	if err := writeFile(filepath.Join(w.dir, filepath.FromSlash(DataFile(w.position()))), w.buf.Bytes()); err != nil {
		return err
	}
	w.buf.Reset()
	w.fileNo++
	w.files++
	return nil
}

func (w *dataWriter) close() error {
	if w.pw == nil {
		return nil
	}
	return w.finish()
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
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return writeFile(path, append(js, '\n'))
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
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[TaskRow](&buf, parquet.KeyValueMetadata("pandas", pandasTasksMeta))
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("write tasks: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write tasks: %w", err)
	}
	return writeFile(path, buf.Bytes())
}

// meta writes meta/tasks.parquet, meta/episodes, meta/stats.json and,
// last, meta/info.json.
func (x *exporter) meta(dir string) error {
	if err := writeTasks(filepath.Join(dir, TasksPath), x.taskList); err != nil {
		return err
	}
	if err := x.writeEpisodes(filepath.Join(dir, EpisodesPath)); err != nil {
		return err
	}
	statsJS := map[string]any{}
	names := x.statNames()
	for i, s := range x.global {
		switch g := s.(type) {
		case *numStats:
			statsJS[names[i]] = g.result()
		case *imgStats:
			statsJS[names[i]] = g.result()
		}
	}
	if err := writeJSON(filepath.Join(dir, StatsPath), statsJS); err != nil {
		return err
	}

	feats := orderedMap{}
	var videoPath any
	for _, f := range x.fs {
		ft := orderedMap{{"dtype", f.dtype}, {"shape", f.shape()}, {"names", f.infoNames()}}
		if f.dtype == "video" {
			ft = append(ft, kv{"info", videoInfo(f, x.fps)})
			videoPath = VideoPath
		}
		feats = append(feats, kv{f.name, ft})
		x.sum.Features = append(x.sum.Features, f.name)
	}
	for _, ff := range fixedFeatures {
		feats = append(feats, kv{ff.name, orderedMap{{"dtype", ff.dtype}, {"shape", []int64{1}}, {"names", nil}}})
		x.sum.Features = append(x.sum.Features, ff.name)
	}
	var robot any
	for i, m := range x.metas {
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
	info := orderedMap{
		{"codebase_version", CodebaseVersion},
		{"robot_type", robot},
		{"total_episodes", len(x.metas)},
		{"total_frames", x.sum.Frames},
		{"total_tasks", len(x.taskList)},
		{"chunks_size", ChunksSize},
		{"data_files_size_in_mb", x.opt.dataFilesMiB},
		{"video_files_size_in_mb", videoFilesSizeInMB},
		{"fps", x.fps},
		{"splits", map[string]string{"train": fmt.Sprintf("0:%d", len(x.metas))}},
		{"data_path", DataPath},
		{"video_path", videoPath},
		{"features", feats},
	}
	if err := writeJSON(filepath.Join(dir, InfoPath), info); err != nil {
		return err
	}
	x.sum.Episodes, x.sum.Tasks, x.sum.FPS = len(x.metas), len(x.taskList), x.fps
	return nil
}

// statNames names the entries of episodeMeta.stats.
func (x *exporter) statNames() []string {
	var out []string
	for _, f := range x.fs {
		out = append(out, f.name)
	}
	for _, ff := range fixedFeatures {
		out = append(out, ff.name)
	}
	return out
}

// Columns of the episodes file besides the stats/<feature>/<stat> ones.
// The rlrec/ columns name the recorded episode each row comes from.
const (
	colEpisodeIndex = "episode_index"
	colTasks        = "tasks"
	colLength       = "length"
)

func (x *exporter) writeEpisodes(path string) error {
	group := parquet.Group{
		colEpisodeIndex:             parquet.Int(64),
		colTasks:                    parquet.List(parquet.String()),
		colLength:                   parquet.Int(64),
		"data/chunk_index":          parquet.Int(64),
		"data/file_index":           parquet.Int(64),
		"dataset_from_index":        parquet.Int(64),
		"dataset_to_index":          parquet.Int(64),
		"meta/episodes/chunk_index": parquet.Int(64),
		"meta/episodes/file_index":  parquet.Int(64),
		"rlrec/session_id":          parquet.String(),
		"rlrec/env_id":              parquet.String(),
		"rlrec/episode_record_id":   parquet.String(),
		"rlrec/episode_id":          parquet.String(),
	}
	for _, v := range x.videos {
		p := "videos/" + v.f.name + "/"
		group[p+"chunk_index"] = parquet.Int(64)
		group[p+"file_index"] = parquet.Int(64)
		group[p+"from_timestamp"] = parquet.Leaf(parquet.DoubleType)
		group[p+"to_timestamp"] = parquet.Leaf(parquet.DoubleType)
	}
	names := x.statNames()
	for i, s := range x.global {
		for _, k := range statKeys {
			col := "stats/" + names[i] + "/" + k
			switch {
			case s == nil:
				continue
			case k == "count":
				group[col] = parquet.List(parquet.Int(64))
			default:
				if _, img := s.(*imgStats); img {
					group[col] = parquet.List(parquet.List(parquet.List(parquet.Leaf(parquet.DoubleType))))
				} else {
					group[col] = parquet.List(parquet.Leaf(parquet.DoubleType))
				}
			}
		}
	}
	rows := make([]map[string]any, len(x.metas))
	for i, m := range x.metas {
		row := map[string]any{
			colEpisodeIndex: int64(i), colTasks: m.tasks, colLength: m.length,
			"data/chunk_index": int64(m.chunk), "data/file_index": int64(m.file),
			"dataset_from_index": m.from, "dataset_to_index": m.from + m.length,
			"meta/episodes/chunk_index": int64(0), "meta/episodes/file_index": int64(0),
			"rlrec/session_id": m.rec.SessionID, "rlrec/env_id": m.rec.EnvID,
			"rlrec/episode_record_id": m.rid, "rlrec/episode_id": m.id,
		}
		for j, v := range x.videos {
			p := "videos/" + v.f.name + "/"
			sp := m.videos[j]
			row[p+"chunk_index"], row[p+"file_index"] = int64(sp.chunk), int64(sp.file)
			row[p+"from_timestamp"], row[p+"to_timestamp"] = sp.from, sp.to
		}
		for j, s := range m.stats {
			var res map[string]any
			switch g := s.(type) {
			case *numStats:
				res = g.result()
			case *imgStats:
				res = g.result()
			default:
				continue
			}
			for k, v := range res {
				row["stats/"+names[j]+"/"+k] = v
			}
		}
		rows[i] = row
	}
	var buf bytes.Buffer
	pw := parquet.NewGenericWriter[map[string]any](&buf, parquet.NewSchema("episodes", group))
	if _, err := pw.Write(rows); err != nil {
		return fmt.Errorf("write episodes: %w", err)
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write episodes: %w", err)
	}
	return writeFile(path, buf.Bytes())
}
