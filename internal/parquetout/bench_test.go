package parquetout

import (
	"encoding/binary"
	"io/fs"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// bareStep is the fixed steps columns as a plain parquet-go row type: the
// baseline the steps writer is measured against.
type bareStep struct {
	EpisodeID       string  `parquet:"episode_id,dict"`
	EpisodeIndex    int64   `parquet:"episode_index"`
	EnvIndex        int32   `parquet:"env_index"`
	Step            int64   `parquet:"step"`
	SessionStep     int64   `parquet:"session_step"`
	ObservationBlob []byte  `parquet:"observation_blob,optional,plain"`
	ActionBlob      []byte  `parquet:"action_blob,optional,plain"`
	Reward          float64 `parquet:"reward"`
	IsFirst         bool    `parquet:"is_first"`
	IsLast          bool    `parquet:"is_last"`
	Terminated      bool    `parquet:"terminated"`
	Truncated       bool    `parquet:"truncated"`
	RecordedAt      int64   `parquet:"recorded_at,timestamp(microsecond:utc)"`
}

// bareTypedStep adds cartpole's typed columns to bareStep.
type bareTypedStep struct {
	bareStep
	Observation []float32 `parquet:"observation,optional,list"`
	Action      *int64    `parquet:"action,optional"`
}

// bareImageStep adds the image case's typed columns to bareStep: the image
// is stored twice, as in the steps table (blob and binary column).
type bareImageStep struct {
	bareStep
	Observation []byte `parquet:"observation,optional,plain"`
	Action      *int64 `parquet:"action,optional"`
}

type benchCase struct {
	name     string
	obs, act *spacesv1.SpaceSpec
	obsLeaf  func(i int) []byte
	actLeaf  func(i int) []byte
}

func cartpoleCase() benchCase {
	return benchCase{
		name: "cartpole",
		obs:  sBox(dtF32, 4),
		act:  sDiscrete(dtI64, 2),
		obsLeaf: func(i int) []byte {
			x := float32(i)
			return f32s(x*0.01, x*-0.02, 0.03, x*0.001)
		},
		actLeaf: func(i int) []byte { return i64le(int64(i & 1)) },
	}
}

// imageBytes is a synthetic 84x84x3 frame shaped like a rendered game
// screen: flat colour bands, with a 12x12 sprite of noise whose position
// moves with seed. Real frames compress; random bytes would not.
func imageBytes(seed int) []byte {
	r := rand.New(rand.NewPCG(uint64(seed), 7))
	b := make([]byte, 84*84*3)
	sx, sy := (seed*7)%72, (seed*3)%72
	for y := 0; y < 84; y++ {
		for x := 0; x < 84; x++ {
			for c := 0; c < 3; c++ {
				v := byte(y/12*30 + c*60)
				if x >= sx && x < sx+12 && y >= sy && y < sy+12 {
					v = byte(r.IntN(256))
				}
				b[(y*84+x)*3+c] = v
			}
		}
	}
	return b
}

func imageCase() benchCase {
	frames := make([][]byte, 256)
	for i := range frames {
		frames[i] = imageBytes(i)
	}
	return benchCase{
		name:    "image",
		obs:     sBox(dtU8, 84, 84, 3),
		act:     sDiscrete(dtI64, 6),
		obsLeaf: func(i int) []byte { return frames[i%len(frames)] },
		actLeaf: func(i int) []byte { return i64le(int64(i % 6)) },
	}
}

func blobOf(leaf []byte) []byte {
	b := []byte{0x0a}
	b = binary.AppendUvarint(b, uint64(len(leaf)))
	return append(b, leaf...)
}

const benchEpisodeID = "0190c0de-7a3b-7c2d-8e9f-0123456789ab"

// benchRows precomputes 256 rows to cycle through.
func benchRows(c benchCase) []StepRow {
	rows := make([]StepRow, 256)
	t0 := time.Now()
	for i := range rows {
		o, a := c.obsLeaf(i), c.actLeaf(i)
		rows[i] = StepRow{
			EpisodeID: benchEpisodeID, EpisodeIndex: 1, Step: int64(i), SessionStep: int64(i),
			ObservationBlob: blobOf(o), ActionBlob: blobOf(a), Reward: 1,
			RecordedAt: t0, ObservationLeaves: [][]byte{o}, ActionLeaves: [][]byte{a},
		}
	}
	return rows
}

func payloadBytes(r *StepRow) int64 {
	return int64(len(r.ObservationBlob) + len(r.ActionBlob) + len(r.EpisodeID) + 8*5 + 4)
}

// discardFS is a vfs.FS whose files count their bytes and drop them, so
// benchmarks measure encoding alone.
type discardFS struct{ vfs.FS }

func (discardFS) MkdirAll(string) error                 { return nil }
func (discardFS) SyncDir(string) error                  { return nil }
func (discardFS) SyncFS(string) error                   { return nil }
func (discardFS) Stat(string) (fs.FileInfo, error)      { return nil, fs.ErrNotExist }
func (discardFS) ReadDir(string) ([]fs.DirEntry, error) { return nil, nil }
func (discardFS) Rename(string, string) error           { return nil }
func (discardFS) Remove(string) error                   { return nil }
func (discardFS) Create(name string) (vfs.File, error)  { return &countFile{name: name}, nil }

type countFile struct {
	vfs.File
	name string
	n    int64
}

func (f *countFile) Write(b []byte) (int, error) { f.n += int64(len(b)); return len(b), nil }
func (f *countFile) Sync() error                 { return nil }
func (f *countFile) Close() error                { lastSize = f.n; return nil }
func (f *countFile) Name() string                { return f.name }

var lastSize int64

func benchSteps(b *testing.B, c benchCase, cfg Config, typed bool) {
	var obs, act *schema.Layout
	if typed {
		obs, act = mustCompile(b, c.obs), mustCompile(b, c.act)
	}
	f, err := NewStepsFormat(obs, act, cfg)
	if err != nil {
		b.Fatal(err)
	}
	rows := benchRows(c)
	if !typed {
		for i := range rows {
			rows[i].ObservationLeaves, rows[i].ActionLeaves = nil, nil
		}
	}
	dir := "steps"
	b.ReportAllocs()
	b.SetBytes(payloadBytes(&rows[0]))
	b.ResetTimer()
	w, err := createSteps(f, discardFS{}, dir, Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if err := w.Write(&rows[i&255]); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	report(b)
}

func benchBare(b *testing.B, c benchCase, cfg Config) {
	cfg = cfg.withDefaults()
	codec, err := codecFor(cfg.Compression)
	if err != nil {
		b.Fatal(err)
	}
	src := benchRows(c)
	rows := make([]bareStep, len(src))
	for i, r := range src {
		rows[i] = bareStep{
			EpisodeID: r.EpisodeID, EpisodeIndex: r.EpisodeIndex, Step: r.Step, SessionStep: r.SessionStep,
			ObservationBlob: r.ObservationBlob, ActionBlob: r.ActionBlob, Reward: r.Reward,
			RecordedAt: r.RecordedAt.UnixMicro(),
		}
	}
	b.ReportAllocs()
	b.SetBytes(payloadBytes(&src[0]))
	b.ResetTimer()
	f := &countFile{name: "bare"}
	w := parquet.NewGenericWriter[bareStep](f,
		parquet.Compression(codec),
		parquet.PageBufferSize(cfg.PageBufferSize),
		parquet.MaxRowsPerRowGroup(cfg.RowGroupRows),
		parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
		parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob),
	)
	const batch = 64
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		off := i & 255 &^ (batch - 1)
		if _, err := w.Write(rows[off : off+n]); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	b.StopTimer()
	report(b)
}

func report(b *testing.B) {
	b.ReportMetric(float64(lastSize)/float64(b.N), "filebytes/row")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

func BenchmarkSteps(b *testing.B) {
	for _, c := range []benchCase{cartpoleCase(), imageCase()} {
		for _, codec := range []string{CompressionZstd, CompressionSnappy, CompressionNone} {
			cfg := Config{Compression: codec}
			b.Run(c.name+"/"+codec+"/rlrec", func(b *testing.B) { benchSteps(b, c, cfg, true) })
			b.Run(c.name+"/"+codec+"/rlrec-untyped", func(b *testing.B) { benchSteps(b, c, cfg, false) })
			b.Run(c.name+"/"+codec+"/bare", func(b *testing.B) { benchBare(b, c, cfg) })
		}
	}
}

// BenchmarkStepsVsBare interleaves the steps writer and a bare parquet-go
// GenericWriter of the fixed columns, 4096 rows at a time, so that machine
// load hits both alike, and reports their per-row costs and
// speed ratio (rlrec rows/s divided by bare rows/s).
func BenchmarkStepsVsBare(b *testing.B) {
	for _, c := range []benchCase{cartpoleCase(), imageCase()} {
		for _, codec := range []string{CompressionZstd, CompressionSnappy, CompressionNone} {
			b.Run(c.name+"/"+codec, func(b *testing.B) { benchVsBare(b, c, Config{Compression: codec}) })
		}
	}
}

func benchVsBare(b *testing.B, c benchCase, cfg Config) {
	f, err := NewStepsFormat(mustCompile(b, c.obs), mustCompile(b, c.act), cfg)
	if err != nil {
		b.Fatal(err)
	}
	cfg = f.cfg
	codec, _ := codecFor(cfg.Compression)
	rows := benchRows(c)
	bare := make([]bareStep, len(rows))
	for i, r := range rows {
		bare[i] = bareStep{
			EpisodeID: r.EpisodeID, EpisodeIndex: r.EpisodeIndex, Step: r.Step, SessionStep: r.SessionStep,
			ObservationBlob: r.ObservationBlob, ActionBlob: r.ActionBlob, Reward: r.Reward,
			RecordedAt: r.RecordedAt.UnixMicro(),
		}
	}
	chunk := 4096
	if c.name == "image" {
		chunk = 256
	}
	w, err := createSteps(f, discardFS{}, "steps", Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		b.Fatal(err)
	}
	bf := &countFile{name: "bare"}
	bw := parquet.NewGenericWriter[bareStep](bf,
		parquet.Compression(codec),
		parquet.PageBufferSize(cfg.PageBufferSize),
		parquet.MaxRowsPerRowGroup(cfg.RowGroupRows),
		parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
		parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob),
	)
	var bareTyped []bareTypedStep
	var btw *parquet.GenericWriter[bareTypedStep]
	if c.name == "cartpole" {
		for i, r := range rows {
			a := int64(i & 1)
			bareTyped = append(bareTyped, bareTypedStep{bareStep: bare[i], Observation: decodeF32(r.ObservationLeaves[0]), Action: &a})
		}
		btw = parquet.NewGenericWriter[bareTypedStep](&countFile{name: "baretyped"},
			parquet.Compression(codec),
			parquet.PageBufferSize(cfg.PageBufferSize),
			parquet.MaxRowsPerRowGroup(cfg.RowGroupRows),
			parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
			parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob),
		)
	}
	var bareImage []bareImageStep
	var biw *parquet.GenericWriter[bareImageStep]
	if c.name == "image" {
		for i, r := range rows {
			a := int64(i % 6)
			bareImage = append(bareImage, bareImageStep{bareStep: bare[i], Observation: r.ObservationLeaves[0], Action: &a})
		}
		biw = parquet.NewGenericWriter[bareImageStep](&countFile{name: "bareimage"},
			parquet.Compression(codec),
			parquet.PageBufferSize(cfg.PageBufferSize),
			parquet.MaxRowsPerRowGroup(cfg.RowGroupRows),
			parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
			parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob),
			parquet.SkipPageStatistics(schema.ColObservation), parquet.SkipPageBounds(schema.ColObservation),
		)
	}
	var ours, theirs, theirsTyped time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		for j := 0; j < chunk; j++ {
			if err := w.Write(&rows[j&255]); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for j := 0; j < chunk; j += 64 {
			off := j & 255
			if _, err := bw.Write(bare[off : off+64]); err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		ours += t1.Sub(t0)
		theirs += t2.Sub(t1)
		if biw != nil {
			for j := 0; j < chunk; j += 64 {
				off := j & 255
				if _, err := biw.Write(bareImage[off : off+64]); err != nil {
					b.Fatal(err)
				}
			}
			theirsTyped += time.Since(t2)
		}
		if btw != nil {
			for j := 0; j < chunk; j += 64 {
				off := j & 255
				if _, err := btw.Write(bareTyped[off : off+64]); err != nil {
					b.Fatal(err)
				}
			}
			theirsTyped += time.Since(t2)
		}
	}
	b.StopTimer()
	if _, err := w.Commit(); err != nil {
		b.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		b.Fatal(err)
	}
	n := float64(b.N * chunk)
	b.ReportMetric(float64(ours.Nanoseconds())/n, "rlrec-ns/row")
	b.ReportMetric(float64(theirs.Nanoseconds())/n, "bare-ns/row")
	b.ReportMetric(float64(theirs)/float64(ours), "speed-ratio")
	if btw != nil || biw != nil {
		b.ReportMetric(float64(theirsTyped.Nanoseconds())/n, "baretyped-ns/row")
		b.ReportMetric(float64(theirsTyped)/float64(ours), "speed-ratio-typed")
	}
	if c.name == "image" {
		img := float64(len(rows[0].ObservationLeaves[0]))
		b.ReportMetric(img*n/ours.Seconds()/1e6, "rlrec-imgMB/s")
		b.ReportMetric(img*n/theirs.Seconds()/1e6, "bare-imgMB/s")
	}
}

func decodeF32(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// BenchmarkStepsEpisodeFile writes one 200-step cartpole episode file per
// op: the per-file cost the recorder pays for every episode.
func BenchmarkStepsEpisodeFile(b *testing.B) {
	for _, codec := range []string{CompressionZstd, CompressionSnappy, CompressionNone} {
		b.Run(codec, func(b *testing.B) { benchStepsEpisodeFile(b, Config{Compression: codec}) })
	}
}

func benchStepsEpisodeFile(b *testing.B, cfg Config) {
	c := cartpoleCase()
	f, err := NewStepsFormat(mustCompile(b, c.obs), mustCompile(b, c.act), cfg)
	if err != nil {
		b.Fatal(err)
	}
	rows := benchRows(c)[:200]
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w, err := createSteps(f, discardFS{}, "steps", Metadata{SessionID: "s", EpisodeRecordID: "e"})
		if err != nil {
			b.Fatal(err)
		}
		for j := range rows {
			if err := w.Write(&rows[j]); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/b.Elapsed().Seconds(), "rows/s")
}

// BenchmarkEpisodesFile writes one one-row episodes file per op, as the
// recorder does for every episode.
func BenchmarkEpisodesFile(b *testing.B) {
	for _, codec := range []string{CompressionZstd, CompressionSnappy, CompressionNone} {
		b.Run(codec, func(b *testing.B) { benchEpisodesFile(b, Config{Compression: codec}) })
	}
}

func benchEpisodesFile(b *testing.B, cfg Config) {
	t0 := time.Now()
	rows := []schema.EpisodeRow{{EpisodeID: benchEpisodeID, EpisodeIndex: 1, Status: schema.EpisodeCompleted,
		StepCount: new(int64), StartedAt: t0, EndedAt: &t0, FinalInfo: new(string)}}
	meta := Metadata{SessionID: "s", EpisodeRecordID: "ep-000001", ObservationSpace: sBox(dtF32, 4), ActionSpace: sDiscrete(dtI64, 2)}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := writeTable(discardFS{}, "episodes", meta, cfg, rows); err != nil {
			b.Fatal(err)
		}
	}
}
