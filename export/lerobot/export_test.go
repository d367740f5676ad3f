package lerobot_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/export/lerobot"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

func export(t *testing.T, root string, opt ...lerobot.Option) (string, lerobot.Summary, *dataset.Dataset) {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	sum, err := lerobot.Export(context.Background(), d, d.Recordings(), dir, opt...)
	if err != nil {
		t.Fatal(err)
	}
	return dir, sum, d
}

type info struct {
	CodebaseVersion   string            `json:"codebase_version"`
	RobotType         *string           `json:"robot_type"`
	TotalEpisodes     int64             `json:"total_episodes"`
	TotalFrames       int64             `json:"total_frames"`
	TotalTasks        int64             `json:"total_tasks"`
	ChunksSize        int64             `json:"chunks_size"`
	DataFilesSizeInMB int64             `json:"data_files_size_in_mb"`
	FPS               int64             `json:"fps"`
	Splits            map[string]string `json:"splits"`
	DataPath          string            `json:"data_path"`
	VideoPath         *string           `json:"video_path"`
	Features          map[string]struct {
		DType string          `json:"dtype"`
		Shape []int64         `json:"shape"`
		Names json.RawMessage `json:"names"`
	} `json:"features"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type stat struct {
	Mean  json.RawMessage `json:"mean"`
	Std   json.RawMessage `json:"std"`
	Min   json.RawMessage `json:"min"`
	Max   json.RawMessage `json:"max"`
	Count []int64         `json:"count"`
	Q01   json.RawMessage `json:"q01"`
	Q99   json.RawMessage `json:"q99"`
}

type taskRow struct {
	TaskIndex int64  `parquet:"task_index"`
	Task      string `parquet:"task"`
}

type ppFrame struct {
	Image struct {
		Bytes []byte  `parquet:"bytes,optional"`
		Path  *string `parquet:"path,optional"`
	} `parquet:"observation.images.image"`
	State        []float32 `parquet:"observation.state,list"`
	Action       []float32 `parquet:"action,list"`
	Timestamp    float32   `parquet:"timestamp"`
	FrameIndex   int64     `parquet:"frame_index"`
	EpisodeIndex int64     `parquet:"episode_index"`
	Index        int64     `parquet:"index"`
	TaskIndex    int64     `parquet:"task_index"`
	Reward       float32   `parquet:"next.reward"`
	Done         bool      `parquet:"next.done"`
}

type cpFrame struct {
	State        []float32 `parquet:"observation.state,list"`
	Action       int64     `parquet:"action"`
	Timestamp    float32   `parquet:"timestamp"`
	FrameIndex   int64     `parquet:"frame_index"`
	EpisodeIndex int64     `parquet:"episode_index"`
	Index        int64     `parquet:"index"`
	TaskIndex    int64     `parquet:"task_index"`
	Reward       float32   `parquet:"next.reward"`
	Done         bool      `parquet:"next.done"`
}

// episodeRow is the fixed columns of a row of the episodes file.
type episodeRow struct {
	EpisodeIndex         int64     `parquet:"episode_index"`
	Tasks                []string  `parquet:"tasks,list"`
	Length               int64     `parquet:"length"`
	DataChunkIndex       int64     `parquet:"data/chunk_index"`
	DataFileIndex        int64     `parquet:"data/file_index"`
	DatasetFromIndex     int64     `parquet:"dataset_from_index"`
	DatasetToIndex       int64     `parquet:"dataset_to_index"`
	MetaEpisodesChunk    int64     `parquet:"meta/episodes/chunk_index"`
	MetaEpisodesFile     int64     `parquet:"meta/episodes/file_index"`
	RLRecEpisodeRecordID string    `parquet:"rlrec/episode_record_id"`
	StateMean            []float64 `parquet:"stats/observation.state/mean,list"`
	TimestampCount       []int64   `parquet:"stats/timestamp/count,list"`
	TimestampQ50         []float64 `parquet:"stats/timestamp/q50,list"`
}

// dataFiles returns the paths of an export's data files, in order.
func dataFiles(t *testing.T, dir string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "data", "chunk-*", "file-*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("data files %v: %v", paths, err)
	}
	return paths
}

// readFrames reads every data file of an export as rows of T.
func readFrames[T any](t *testing.T, dir string) []T {
	t.Helper()
	var out []T
	for _, p := range dataFiles(t, dir) {
		rows, err := parquet.ReadFile[T](p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
	}
	return out
}

// checkCommon checks what every export holds: the files, info.json's
// counts and templates, the episodes rows against the frames, timestamps
// at frame_index / fps.
func checkCommon(t *testing.T, dir string, frames []frameIdx) (info, []episodeRow, []taskRow, map[string]stat) {
	t.Helper()
	for _, p := range []string{lerobot.InfoPath, lerobot.StatsPath, lerobot.TasksPath, lerobot.EpisodesPath, lerobot.DataFile(0, 0)} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("missing %s: %v", p, err)
		}
	}
	var in info
	readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
	eps, err := parquet.ReadFile[episodeRow](filepath.Join(dir, lerobot.EpisodesPath))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := parquet.ReadFile[taskRow](filepath.Join(dir, lerobot.TasksPath))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]stat
	readJSON(t, filepath.Join(dir, lerobot.StatsPath), &st)

	if in.CodebaseVersion != "v3.0" || in.ChunksSize != 1000 || in.DataFilesSizeInMB <= 0 {
		t.Errorf("info header %+v", in)
	}
	if in.DataPath != "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet" || in.VideoPath != nil {
		t.Errorf("templates %q %v", in.DataPath, in.VideoPath)
	}
	if in.TotalEpisodes != int64(len(eps)) || in.TotalFrames != int64(len(frames)) || in.TotalTasks != int64(len(tasks)) {
		t.Errorf("info counts %d/%d/%d, files %d/%d/%d", in.TotalEpisodes, in.TotalFrames, in.TotalTasks, len(eps), len(frames), len(tasks))
	}
	if in.Splits["train"] != "0:"+itoa(len(eps)) || in.FPS <= 0 {
		t.Errorf("splits %v fps %v", in.Splits, in.FPS)
	}
	for _, name := range []string{"timestamp", "frame_index", "episode_index", "index", "task_index", "next.reward", "next.done"} {
		f, ok := in.Features[name]
		if !ok || len(f.Shape) != 1 || f.Shape[0] != 1 {
			t.Errorf("feature %s: %+v", name, f)
		}
		if s, ok := st[name]; !ok || len(s.Count) != 1 || s.Count[0] != int64(len(frames)) || len(floats(s.Q01)) != 1 || len(floats(s.Q99)) != 1 {
			t.Errorf("stats %s: %+v", name, s)
		}
	}
	for i, tr := range tasks {
		if tr.TaskIndex != int64(i) || tr.Task == "" {
			t.Errorf("task row %d: %+v", i, tr)
		}
	}
	// Episodes cover the frames in order.
	var from int64
	for i, e := range eps {
		if e.EpisodeIndex != int64(i) || e.DatasetFromIndex != from || e.DatasetToIndex != from+e.Length || e.Length <= 0 ||
			e.MetaEpisodesChunk != 0 || e.MetaEpisodesFile != 0 || len(e.Tasks) == 0 || e.RLRecEpisodeRecordID == "" {
			t.Errorf("episode row %d: %+v", i, e)
		}
		if len(e.TimestampCount) != 1 || e.TimestampCount[0] != e.Length || len(e.TimestampQ50) != 1 {
			t.Errorf("episode row %d stats: count %v q50 %v", i, e.TimestampCount, e.TimestampQ50)
		}
		for j := e.DatasetFromIndex; j < e.DatasetToIndex && j < int64(len(frames)); j++ {
			fr := frames[j]
			if fr.index != j || fr.episode != int64(i) || fr.frame != j-from {
				t.Fatalf("frame %d: %+v, episode %d from %d", j, fr, i, from)
			}
			if d := math.Abs(float64(fr.ts) - float64(fr.frame)/float64(in.FPS)); d > lerobot.TimestampTolerance {
				t.Fatalf("frame %d: timestamp %v, frame_index / fps %v", j, fr.ts, float64(fr.frame)/float64(in.FPS))
			}
			if fr.task < 0 || fr.task >= int64(len(tasks)) {
				t.Fatalf("frame %d task %d", j, fr.task)
			}
		}
		from += e.Length
	}
	if from != int64(len(frames)) {
		t.Errorf("episodes cover %d frames of %d", from, len(frames))
	}
	return in, eps, tasks, st
}

type frameIdx struct {
	index, episode, frame, task int64
	ts                          float32
}

// floats decodes a JSON array of numbers (nil when it is not one).
func floats(b []byte) []float64 {
	var v []float64
	if json.Unmarshal(b, &v) != nil {
		return nil
	}
	return v
}

func compact(b []byte) string {
	var buf bytes.Buffer
	json.Compact(&buf, b)
	return buf.String()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCartpole(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 3, SessionID: "cp"}})
	dir, sum, d := export(t, root, lerobot.WithFPS(50))
	frames := readFrames[cpFrame](t, dir)
	idx := make([]frameIdx, len(frames))
	for i, f := range frames {
		idx[i] = frameIdx{f.Index, f.EpisodeIndex, f.FrameIndex, f.TaskIndex, f.Timestamp}
	}
	in, eps, tasks, st := checkCommon(t, dir, idx)
	if in.FPS != 50 || sum.Frames != int64(len(frames)) || sum.Episodes != 4 {
		t.Errorf("fps %v, summary %+v", in.FPS, sum)
	}
	if len(tasks) != 1 || tasks[0].Task != "env/cartpole" || in.RobotType == nil || *in.RobotType != "env/cartpole" {
		t.Errorf("tasks %+v robot %v", tasks, in.RobotType)
	}
	if f := in.Features["observation.state"]; f.DType != "float32" || len(f.Shape) != 1 || f.Shape[0] != 4 {
		t.Errorf("observation.state %+v", f)
	}
	if f := in.Features["action"]; f.DType != "int64" || f.Shape[0] != 1 {
		t.Errorf("action %+v", f)
	}
	var mean []float64
	if err := json.Unmarshal(st["observation.state"].Mean, &mean); err != nil || len(mean) != 4 {
		t.Errorf("observation.state mean %s: %v", st["observation.state"].Mean, err)
	}
	// The values are the recorded ones.
	rec := d.Recordings()[0]
	for _, e := range eps {
		steps, err := d.Steps(rec, e.RLRecEpisodeRecordID)
		if err != nil {
			t.Fatal(err)
		}
		j := e.DatasetFromIndex
		for steps.Next() {
			if steps.Step().ObservationBlob == nil || steps.Step().ActionBlob == nil {
				continue
			}
			obs, _ := steps.ObservationValues()
			act, _ := steps.ActionValues()
			f := frames[j]
			want := obs[0].([]float32)
			for k := range want {
				if f.State[k] != want[k] {
					t.Fatalf("frame %d state %v, recorded %v", j, f.State, want)
				}
			}
			if f.Action != act[0].(int64) || f.Reward != float32(steps.Step().Reward) {
				t.Fatalf("frame %d action %d reward %v, recorded %v %v", j, f.Action, f.Reward, act[0], steps.Step().Reward)
			}
			j++
		}
		steps.Close()
		if j != e.DatasetToIndex {
			t.Errorf("episode %d: %d frames recorded, %d exported", e.EpisodeIndex, j-e.DatasetFromIndex, e.Length)
		}
	}
}

func TestPickPlace(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, Seed: 5, SessionID: "pp"}})
	dir, _, d := export(t, root)
	frames := readFrames[ppFrame](t, dir)
	idx := make([]frameIdx, len(frames))
	for i, f := range frames {
		idx[i] = frameIdx{f.Index, f.EpisodeIndex, f.FrameIndex, f.TaskIndex, f.Timestamp}
	}
	in, eps, tasks, st := checkCommon(t, dir, idx)
	if f := in.Features["observation.images.image"]; f.DType != "image" || len(f.Shape) != 3 || f.Shape[0] != 84 || f.Shape[1] != 84 || f.Shape[2] != 3 ||
		compact(f.Names) != `["height","width","channels"]` {
		t.Errorf("observation.images.image %+v", f)
	}
	if f := in.Features["observation.state"]; f.DType != "float32" || f.Shape[0] != 7 {
		t.Errorf("observation.state %+v", f)
	}
	if f := in.Features["action"]; f.DType != "float32" || f.Shape[0] != 7 {
		t.Errorf("action %+v", f)
	}
	if _, ok := in.Features["observation.instruction"]; ok {
		t.Errorf("the instruction is a feature; it is the task")
	}
	var imean [][][]float64
	if err := json.Unmarshal(st["observation.images.image"].Mean, &imean); err != nil || len(imean) != 3 || len(imean[0]) != 1 || imean[0][0][0] <= 0 || imean[0][0][0] >= 1 {
		t.Errorf("image mean %s: %v", st["observation.images.image"].Mean, err)
	}
	rec := d.Recordings()[0]
	for _, e := range eps {
		steps, err := d.Steps(rec, e.RLRecEpisodeRecordID)
		if err != nil {
			t.Fatal(err)
		}
		j := e.DatasetFromIndex
		for steps.Next() {
			if steps.Step().ObservationBlob == nil || steps.Step().ActionBlob == nil {
				continue
			}
			obs, _ := steps.ObservationValues() // image, state, instruction
			f := frames[j]
			img, err := png.Decode(bytes.NewReader(f.Image.Bytes))
			if err != nil {
				t.Fatalf("frame %d: %v", j, err)
			}
			if f.Image.Path != nil {
				t.Errorf("frame %d image path %q, want null", j, *f.Image.Path)
			}
			want := obs[0].([]uint8)
			if got := pixels(img); !bytes.Equal(got, want) {
				t.Fatalf("frame %d: PNG pixels differ from the recorded observation", j)
			}
			if tasks[f.TaskIndex].Task != obs[2].(string) {
				t.Fatalf("frame %d task %q, instruction %q", j, tasks[f.TaskIndex].Task, obs[2])
			}
			j++
		}
		steps.Close()
		if len(e.Tasks) != 1 || e.Tasks[0] == "" {
			t.Errorf("episode %d tasks %q", e.EpisodeIndex, e.Tasks)
		}
	}
}

// pixels returns an image's HxWx3 bytes.
func pixels(img image.Image) []byte {
	b := img.Bounds()
	out := make([]byte, 0, b.Dx()*b.Dy()*3)
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bb, _ := img.At(x, y).RGBA()
			out = append(out, byte(r>>8), byte(g>>8), byte(bb>>8))
		}
	}
	return out
}

func TestRefuses(t *testing.T) {
	root := roottest.Record(t, []sim.Config{
		{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: 1, SessionID: "a"},
		{Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: 1, SessionID: "b"},
	})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if _, err := lerobot.Export(context.Background(), d, d.Recordings(), filepath.Join(dir, "x")); !errors.Is(err, lerobot.ErrSpaces) {
		t.Errorf("mixed spaces: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if _, err := lerobot.Export(context.Background(), d, d.Find("a", ""), dir); err == nil {
		t.Errorf("a non-empty directory is accepted")
	}
}

// TestAllLeaves exports every leaf kind and dtype, infinities and NaN
// included, and checks that each feature has a dtype and statistics.
func TestAllLeaves(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 6, SessionID: "al"}})
	dir, sum, _ := export(t, root, lerobot.WithIncomplete(true))
	var in info
	readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
	var st map[string]stat
	readJSON(t, filepath.Join(dir, lerobot.StatsPath), &st)
	if len(in.Features) != len(sum.Features) || sum.Frames == 0 {
		t.Fatalf("features %d, summary %+v", len(in.Features), sum)
	}
	for name, f := range in.Features {
		if f.DType == "" || len(f.Shape) == 0 {
			t.Errorf("feature %s: %+v", name, f)
		}
		if _, ok := st[name]; !ok && f.DType != "string" {
			t.Errorf("feature %s has no statistics", name)
		}
	}
}

// TestDataFilesChunked exports with a 1 MiB data file size: episodes
// never straddle files, and the files together load by LeRobot's rules.
func TestDataFilesChunked(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 24, Seed: 5, SessionID: "pp"}})
	dir, sum, _ := export(t, root, lerobot.WithDataFilesSizeInMB(1), lerobot.WithFPS(10))
	if sum.DataFiles < 2 || len(dataFiles(t, dir)) != sum.DataFiles {
		t.Fatalf("%d data files (%v), want several", sum.DataFiles, dataFiles(t, dir))
	}
	var in info
	readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
	if in.DataFilesSizeInMB != 1 || in.FPS != 10 {
		t.Errorf("info %+v", in)
	}
	checkLoadable(t, dir)
}

// TestTimesUnknown: without --fps, steps whose times the recorder stamped
// (here all one time) give no frame rate, and the export refuses; with
// it, the export is written.
func TestTimesUnknown(t *testing.T) {
	cfg := sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, Seed: 2, SessionID: "still"}
	cfg.Clock = sim.StepClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), 0)
	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root, recorder.WithClock(cfg.Clock))
	if err != nil {
		t.Fatal(err)
	}
	// Untimed: the hooks methods only, so the recorder stamps every event.
	untimed := struct{ events.Hooks }{rec}
	if _, err := sim.RunSessions(context.Background(), untimed, []sim.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := lerobot.Export(context.Background(), d, d.Recordings(), dir); !errors.Is(err, lerobot.ErrTimesUnknown) {
		t.Fatalf("export without fps: %v, want ErrTimesUnknown", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused export left %s: %v", dir, err)
	}
	if _, err := lerobot.Export(context.Background(), d, d.Recordings(), dir, lerobot.WithFPS(15)); err != nil {
		t.Fatal(err)
	}
	checkLoadable(t, dir)
}

// recordSim records cfgs into a new ROOT with their simulated times,
// passed through warp when it is not nil.
func recordSim(t *testing.T, warp func(time.Time) time.Time, cfgs ...sim.Config) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	var h events.Hooks = rec
	if warp != nil {
		h = &warped{rec: rec, warp: warp}
	}
	if _, err := sim.RunSessions(context.Background(), h, cfgs); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root
}

// warped hands the recorder every event at warp(its time).
type warped struct {
	events.Hooks
	rec  *recorder.Recorder
	warp func(time.Time) time.Time
}

func (w *warped) RecordAt(ctx context.Context, ev events.Event, at time.Time) error {
	return w.rec.RecordAt(ctx, ev, w.warp(at))
}

// TestSimulatedRate: a simulated run's recorded times advance by its env's
// control period, so an export without --fps gives that rate (cartpole 50
// fps, pick-place 10 fps), with recorded times close to frame_index / fps;
// times at a loop's speed (a period of 0.2 ms, 5,000 fps) and times in
// bursts are refused.
func TestSimulatedRate(t *testing.T) {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	bursty := func(at time.Time) time.Time {
		// Cartpole's steps k = 0, 1, 2, ... (20 ms apart) in bursts of
		// three, 5 ms apart, one burst every 100 ms.
		d := at.Sub(start)
		k := d / (20 * time.Millisecond)
		return start.Add(k/3*100*time.Millisecond + k%3*5*time.Millisecond + d%(20*time.Millisecond))
	}
	for _, tc := range []struct {
		name string
		cfg  sim.Config
		warp func(time.Time) time.Time
		fps  int
		want string // for a refusal, what it says
	}{
		{"cartpole", sim.Config{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6}, nil, 50, ""},
		{"cartpole, one lane, disabled", sim.Config{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 3}, nil, 50, ""},
		{"pick-place", sim.Config{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2}, nil, 10, ""},
		{"a loop's speed", sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, ControlPeriod: 200 * time.Microsecond}, nil, 0, "above the 1000"},
		{"bursts", sim.Config{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3}, bursty, 0, "too irregular"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Seed, cfg.SessionID, cfg.Clock = 7, "rate", sim.StepClock(start, 0)
			root := recordSim(t, tc.warp, cfg)
			d, err := dataset.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			dir := filepath.Join(t.TempDir(), "out")
			sum, err := lerobot.Export(context.Background(), d, d.Recordings(), dir)
			if tc.fps == 0 {
				if !errors.Is(err, lerobot.ErrTimesUnknown) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("export: %v, want ErrTimesUnknown saying %q", err, tc.want)
				}
				if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a refused export left %s: %v", dir, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var in info
			readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
			if in.FPS != int64(tc.fps) || sum.FPS != tc.fps {
				t.Fatalf("info.json fps %d, summary %d, want %d", in.FPS, sum.FPS, tc.fps)
			}
			// Each recorded time is its frame's tick plus the drift of the
			// simulated call times within it: well under one period.
			if period := time.Second / time.Duration(tc.fps); sum.MaxDrift >= period {
				t.Errorf("recorded times up to %v from frame_index / fps, want less than a period (%v)", sum.MaxDrift, period)
			}
		})
	}
}

// TestReplace: an existing non-empty directory is refused (ErrExists)
// unless Replace, which swaps in the complete new export.
func TestReplace(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: 1, SessionID: "a"}})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "old"), []byte("x"), 0o644)
	if _, err := lerobot.Export(context.Background(), d, d.Recordings(), dir, lerobot.WithFPS(30)); !errors.Is(err, lerobot.ErrExists) {
		t.Fatalf("non-empty directory: %v, want ErrExists", err)
	}
	if _, err := lerobot.Export(context.Background(), d, d.Recordings(), dir, lerobot.WithFPS(30), lerobot.WithReplace(true)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "old")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the replaced directory's file is still there: %v", err)
	}
	checkLoadable(t, dir)
	ents, _ := os.ReadDir(filepath.Dir(dir))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".export-") {
			t.Errorf("temporary directory %s left behind", e.Name())
		}
	}
}

// videoEpisode is the video columns of an episodes row of pick-place.
type videoEpisode struct {
	EpisodeIndex         int64   `parquet:"episode_index"`
	Length               int64   `parquet:"length"`
	RLRecEpisodeRecordID string  `parquet:"rlrec/episode_record_id"`
	Chunk                int64   `parquet:"videos/observation.images.image/chunk_index"`
	File                 int64   `parquet:"videos/observation.images.image/file_index"`
	From                 float64 `parquet:"videos/observation.images.image/from_timestamp"`
	To                   float64 `parquet:"videos/observation.images.image/to_timestamp"`
}

// TestVideo exports pick-place with its camera as an MP4 (ffmpeg, which
// .ci/run installs): the feature is declared as LeRobot's video features
// are, the episodes rows place each episode in the video, and the decoded
// frames are the recorded images (within H.264's loss).
func TestVideo(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, Seed: 5, SessionID: "pp"}})
	const fps = 10
	dir, sum, d := export(t, root, lerobot.WithFPS(fps), lerobot.WithVideo(true))
	checkLoadable(t, dir)

	var in struct {
		VideoPath *string `json:"video_path"`
		Features  map[string]struct {
			DType string          `json:"dtype"`
			Shape []int64         `json:"shape"`
			Names json.RawMessage `json:"names"`
			Info  map[string]any  `json:"info"`
		} `json:"features"`
	}
	readJSON(t, filepath.Join(dir, lerobot.InfoPath), &in)
	f := in.Features["observation.images.image"]
	if f.DType != "video" || !slices.Equal(f.Shape, []int64{84, 84, 3}) || compact(f.Names) != `["height","width","channels"]` ||
		f.Info["video.fps"] != float64(fps) || f.Info["video.codec"] != "h264" || f.Info["video.pix_fmt"] != "yuv420p" ||
		f.Info["video.height"] != float64(84) || f.Info["video.width"] != float64(84) || f.Info["has_audio"] != false {
		t.Errorf("video feature %+v", f)
	}
	if in.VideoPath == nil || *in.VideoPath != lerobot.VideoPath {
		t.Errorf("video_path %v", in.VideoPath)
	}
	eps, err := parquet.ReadFile[videoEpisode](filepath.Join(dir, lerobot.EpisodesPath))
	if err != nil {
		t.Fatal(err)
	}
	var at float64
	for _, e := range eps {
		if e.Chunk != 0 || e.File != 0 || math.Abs(e.From-at) > 1e-9 || math.Abs(e.To-e.From-float64(e.Length)/fps) > 1e-9 {
			t.Errorf("episode %d video span %+v, want from %v", e.EpisodeIndex, e, at)
		}
		at = e.To
	}

	video := filepath.Join(dir, lerobot.VideoFile("observation.images.image", 0, 0))
	probe, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-count_frames",
		"-show_entries", "stream=nb_read_frames,width,height,codec_name,pix_fmt,r_frame_rate", "-of", "json", video).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v (install ffmpeg: .ci/run does)", video, err)
	}
	var pr struct {
		Streams []struct {
			Codec  string `json:"codec_name"`
			Width  int    `json:"width"`
			Height int    `json:"height"`
			PixFmt string `json:"pix_fmt"`
			Rate   string `json:"r_frame_rate"`
			Frames string `json:"nb_read_frames"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(probe, &pr); err != nil || len(pr.Streams) != 1 {
		t.Fatalf("ffprobe: %s: %v", probe, err)
	}
	if s := pr.Streams[0]; s.Codec != "h264" || s.Width != 84 || s.Height != 84 || s.PixFmt != "yuv420p" || s.Rate != "10/1" || s.Frames != itoa(int(sum.Frames)) {
		t.Errorf("video stream %+v, want %d frames of 84x84 h264 at 10/1", s, sum.Frames)
	}

	// The decoded frames against the recorded images.
	raw, err := exec.Command("ffmpeg", "-v", "error", "-i", video, "-f", "rawvideo", "-pix_fmt", "rgb24", "-").Output()
	if err != nil {
		t.Fatal(err)
	}
	const frameBytes = 84 * 84 * 3
	if len(raw) != int(sum.Frames)*frameBytes {
		t.Fatalf("decoded %d bytes, want %d frames", len(raw), sum.Frames)
	}
	rec := d.Recordings()[0]
	for _, e := range eps {
		steps, err := d.Steps(rec, e.RLRecEpisodeRecordID)
		if err != nil {
			t.Fatal(err)
		}
		k := int(math.Round(e.From * fps))
		for steps.Next() {
			if steps.Step().ObservationBlob == nil || steps.Step().ActionBlob == nil {
				continue
			}
			obs, _ := steps.ObservationValues()
			want := obs[0].([]uint8)
			got := raw[k*frameBytes : (k+1)*frameBytes]
			var diff int
			for i := range want {
				diff += int(math.Abs(float64(want[i]) - float64(got[i])))
			}
			if mean := float64(diff) / frameBytes; mean > 6 {
				t.Fatalf("episode %d video frame %d differs from the recorded image by %.1f levels on average", e.EpisodeIndex, k, mean)
			}
			k++
		}
		steps.Close()
	}
	// No PNG column: the data files hold no image.
	for _, p := range dataFiles(t, dir) {
		pf, closeFile := openPF(t, p)
		if _, ok := pf.Schema().Lookup("observation.images.image"); ok {
			t.Errorf("%s has the video feature as a column", p)
		}
		closeFile()
	}
}

// TestFFmpegMissing: WithVideo runs the ffmpeg WithFFmpeg names; when it
// is not there, Export says so (ErrFFmpeg, naming it) and writes nothing.
func TestFFmpegMissing(t *testing.T) {
	root := roottest.Record(t, []sim.Config{{Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: 1, SessionID: "a"}})
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	missing := filepath.Join(t.TempDir(), "no-ffmpeg")
	dir := filepath.Join(t.TempDir(), "out")
	_, err = lerobot.Export(context.Background(), d, d.Recordings(), dir, lerobot.WithFPS(30), lerobot.WithVideo(true), lerobot.WithFFmpeg(missing))
	if !errors.Is(err, lerobot.ErrFFmpeg) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Export with ffmpeg %s: %v, want ErrFFmpeg naming it", missing, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was made: %v", dir, err)
	}
}
