package parquetout

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// stepsBytesGolden pins the SHA-256 and size of every file of
// TestStepsFileBytes: the steps files' bytes (page layout, encodings,
// statistics, compressed pages, footer) are part of the format, and a
// change to how the writer hands its rows to parquet-go must leave them
// as they are. Regenerate with -update only for an intended format change.
const stepsBytesGolden = "testdata/steps-sha256.golden"

// bytesCase is a steps file of many pages written the way the recorder
// writes one: a layout "episode" file of one episode, or a packed layout
// "session" file of many, with episode boundaries and a row group bound.
type bytesCase struct {
	name     string
	obs, act *spacesv1.SpaceSpec
	packed   bool
	cfg      Config
	rows     int
	// leaves returns row i's observation and action leaves.
	leaves func(i int) (obs, act [][]byte)
}

func bytesCases() []bytesCase {
	cartpole := func(i int) ([][]byte, [][]byte) {
		x := float32(i)
		return [][]byte{f32s(x*0.01, float32(math.Sin(float64(i)/7)), 0.03, x*-0.001)}, [][]byte{i64le(int64(i>>1) & 1)}
	}
	// pick-place: Dict{image: Box(84,84,3) uint8 (above the binary
	// threshold: a binary column, and a row large enough to be written
	// through directly), state: Box(7) float32, instruction: Text},
	// action Box(7) float32.
	frames := make([][]byte, 64)
	for i := range frames {
		frames[i] = imageBytes(i)
	}
	instr := []string{"pick up the red block", "pick up the green block", "lift the blue block", ""}
	pickPlace := func(i int) ([][]byte, [][]byte) {
		x := float32(i)
		state := f32s(x*0.1, 0.2, -x, 0.5, 0.25, x*x, 0)
		act := f32s(0.1, -0.2, x*0.01, 0, 0, 0, float32(i%3)-1)
		return [][]byte{frames[i%len(frames)], state, []byte(instr[i/40%len(instr)])}, [][]byte{act}
	}
	allKinds := func(i int) ([][]byte, [][]byte) {
		obs, _ := allKindsLeaves(i % 200)
		return obs, [][]byte{append(i64le(int64(i%3)), i64le(int64(i%2))...)}
	}
	ppObs := sDict([]string{"image", "state", "instruction"}, sBox(dtU8, 84, 84, 3), sBox(dtF32, 7), sText())
	return []bytesCase{
		{name: "cartpole/episode", obs: sBox(dtF32, 4), act: sDiscrete(dtI64, 2), rows: 150_000, leaves: cartpole},
		{name: "cartpole/session", obs: sBox(dtF32, 4), act: sDiscrete(dtI64, 2), packed: true, rows: 150_000, leaves: cartpole,
			cfg: Config{RowGroupBytes: 2 << 20}},
		{name: "cartpole/session-16k-pages", obs: sBox(dtF32, 4), act: sDiscrete(dtI64, 2), packed: true, rows: 20_000, leaves: cartpole,
			cfg: PageClassConfig(Config{RowGroupRows: 5000}, 2)},
		{name: "cartpole/episode-snappy", obs: sBox(dtF32, 4), act: sDiscrete(dtI64, 2), rows: 20_000, leaves: cartpole,
			cfg: Config{Compression: CompressionSnappy}},
		{name: "cartpole/episode-none", obs: sBox(dtF32, 4), act: sDiscrete(dtI64, 2), rows: 20_000, leaves: cartpole,
			cfg: Config{Compression: CompressionNone}},
		{name: "pick-place/episode", obs: ppObs, act: sBox(dtF32, 7), rows: 1_200, leaves: pickPlace},
		{name: "pick-place/session", obs: ppObs, act: sBox(dtF32, 7), packed: true, rows: 1_200, leaves: pickPlace,
			cfg: Config{RowGroupBytes: 8 << 20}},
		{name: "all-kinds/episode", obs: allKindsSpec(), act: sMultiDiscrete(dtI64, 3, 3), rows: 3_000, leaves: allKinds},
		{name: "all-kinds/session", obs: allKindsSpec(), act: sMultiDiscrete(dtI64, 3, 3), packed: true, rows: 3_000, leaves: allKinds,
			cfg: Config{RowGroupBytes: 4 << 20}},
	}
}

// bytesRows returns the case's rows, and where the packed file's
// episodes start (EndEpisode before that row). Every column of schema
// version 3 is set on some rows and null on others, some rows have no
// observation, and a packed file's episodes have lengths of 1 to 400 rows.
func bytesRows(c bytesCase) (rows []StepRow, ends []bool) {
	r := rand.New(rand.NewPCG(31, 4))
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	const lanes = 16
	var infos []byte
	rows, ends = make([]StepRow, c.rows), make([]bool, c.rows)
	episode, epStep, epLen := 0, 0, 1+r.IntN(400)
	for i := range c.rows {
		if c.packed && epStep == epLen {
			ends[i] = true
			episode, epStep, epLen = episode+1, 0, 1+r.IntN(400)
		}
		if i%lanes == 0 {
			// A batch's infos, the same on each of its rows.
			infos = fmt.Appendf(nil, `{"elapsed_steps":[%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d]}`,
				i, i+1, i+2, i+3, i+4, i+5, i+6, i+7, i+8, i+9, i+10, i+11, i+12, i+13, i+14, i+15)
		}
		o, a := c.leaves(i)
		row := StepRow{
			EpisodeRecordID: fmt.Sprintf("ep-%06d", episode+1),
			EpisodeID:       fmt.Sprintf("0190c0de-7a3b-7c2d-8e9f-%012x", episode*7919),
			EpisodeIndex:    int64(episode/lanes + 1),
			EnvIndex:        int32(episode % lanes),
			Step:            int64(epStep),
			SessionStep:     int64(i),
			ObservationBlob: blobOf(bytes.Join(o, nil)), ActionBlob: blobOf(bytes.Join(a, nil)),
			Reward:            float64(r.IntN(3)) - 0.5*float64(i%2),
			IsFirst:           epStep == 0,
			IsLast:            epStep == epLen-1,
			Terminated:        epStep == epLen-1 && episode%3 != 0,
			Truncated:         epStep == epLen-1 && episode%3 == 0,
			RecordedAt:        t0.Add(time.Duration(i)*20*time.Millisecond + time.Duration(r.IntN(1000))*time.Microsecond),
			ObservationLeaves: o, ActionLeaves: a,
			Lane: int64(i % lanes), HasLane: i%101 != 7,
			PredictMs: float64(r.IntN(5000)) / 1000, HasPredictMs: i%5 != 0,
			StepMs: float64(r.IntN(20000)) / 1000, HasStepMs: i%7 != 0,
		}
		if i%53 != 11 {
			row.Infos = infos
		}
		if epStep == 0 {
			row.ObservationInfos = []byte(`{"seed":` + fmt.Sprint(episode) + `}`)
		}
		if i%9 == 4 {
			row.RawObservationBlob = row.ObservationBlob
			row.RawActionBlob = []byte{}
		}
		if i%97 == 5 {
			row.ObservationBlob, row.ObservationLeaves = nil, nil
		}
		rows[i] = row
		epStep++
	}
	return rows, ends
}

// bytesFormat returns the case's steps format and file metadata.
func bytesFormat(t testing.TB, c bytesCase) (*StepsFormat, Metadata) {
	t.Helper()
	obs, act := mustCompile(t, c.obs), mustCompile(t, c.act)
	newFormat := NewStepsFormat
	if c.packed {
		newFormat = NewPackedStepsFormat
	}
	f, err := newFormat(obs, act, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	meta := Metadata{SessionID: "0190c0de-0000-7000-8000-00000000abcd", EnvID: "env-1", ObservationSpace: c.obs, ActionSpace: c.act}
	if c.packed {
		meta.Layout = "session"
	} else {
		meta.EpisodeRecordID = "ep-000001"
	}
	return f, meta
}

// encodeRows writes rows as one steps file to out, ending an episode
// before each row marked in ends (in a packed file, a row group ends only
// there).
func encodeRows(t testing.TB, f *StepsFormat, meta Metadata, out io.Writer, rows []StepRow, ends []bool) {
	t.Helper()
	w := f.NewEncoder(out, "steps", meta)
	w.SetEpisodeBoundaries(f.Table().Packed)
	for i := range rows {
		if ends[i] {
			if err := w.EndEpisode(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Write(&rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeBytesCase writes the case's file to memory.
func writeBytesCase(t testing.TB, c bytesCase) []byte {
	t.Helper()
	f, meta := bytesFormat(t, c)
	rows, ends := bytesRows(c)
	var buf bytes.Buffer
	encodeRows(t, f, meta, &buf, rows, ends)
	b := buf.Bytes()
	if err := CheckFooter(bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	return b
}

// BenchmarkStepsPacked writes the rows of TestStepsFileBytes's cases as
// the recorder writes a packed file of layout "session" (every version 3
// column; cartpole's infos are a 16-lane list on every row), one file per
// op, and reports the CPU per row.
func BenchmarkStepsPacked(b *testing.B) {
	for _, c := range bytesCases() {
		if !c.packed {
			continue
		}
		b.Run(strings.TrimSuffix(c.name, "/session"), func(b *testing.B) {
			f, meta := bytesFormat(b, c)
			rows, ends := bytesRows(c)
			b.ReportAllocs()
			for b.Loop() {
				encodeRows(b, f, meta, io.Discard, rows, ends)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
		})
	}
}

// fileShape returns a file's row groups, its column chunks and its data
// pages (from the offset indexes).
func fileShape(t testing.TB, b []byte) (groups, chunks, pages int) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, rg := range pf.RowGroups() {
		for _, cc := range rg.ColumnChunks() {
			oi, err := cc.OffsetIndex()
			if err != nil {
				t.Fatal(err)
			}
			pages += oi.NumPages()
			chunks++
		}
	}
	return len(pf.RowGroups()), chunks, pages
}

// TestStepsFileBytes writes large steps files of many pages and row groups
// (cartpole, a camera env and every leaf kind, in both layouts, with every
// codec) and checks their SHA-256 against the golden list.
func TestStepsFileBytes(t *testing.T) {
	golden := map[string]string{}
	if !*update {
		b, err := os.ReadFile(stepsBytesGolden)
		if err != nil {
			t.Fatalf("read %s: %v (run with -update to write it)", stepsBytesGolden, err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if name, rest, ok := strings.Cut(line, " "); ok {
				golden[name] = rest
			}
		}
	}
	var out strings.Builder
	for _, c := range bytesCases() {
		b := writeBytesCase(t, c)
		// Every file has more pages than column chunks, so pages are cut
		// as a long episode's are; every packed one more than one row
		// group.
		groups, chunks, pages := fileShape(t, b)
		if pages <= chunks || (c.packed && groups < 2) {
			t.Errorf("%s: %d row groups, %d pages: want more", c.name, groups, pages)
		}
		t.Logf("%s: %d row groups, %d data pages", c.name, groups, pages)
		sum := sha256.Sum256(b)
		got := fmt.Sprintf("%s %d", hex.EncodeToString(sum[:]), len(b))
		fmt.Fprintf(&out, "%s %s\n", c.name, got)
		if *update {
			continue
		}
		if want, ok := golden[c.name]; !ok {
			t.Errorf("%s: not in %s (run with -update)", c.name, stepsBytesGolden)
		} else if got != want {
			t.Errorf("%s: sha256 and size %s, want %s", c.name, got, want)
		}
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(stepsBytesGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stepsBytesGolden, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bareWideStep is the packed cartpole steps file's columns (the fixed
// ones, episode_record_id, the typed ones and schema version 3's) as a
// plain parquet-go row type, for BenchmarkStepsPackedVsBare.
type bareWideStep struct {
	bareStep
	EpisodeRecordID    string    `parquet:"episode_record_id,dict"`
	Observation        []float32 `parquet:"observation,optional,list"`
	Action             *int64    `parquet:"action,optional"`
	Lane               *int64    `parquet:"lane,optional"`
	Infos              *string   `parquet:"infos,optional"`
	RawObservationBlob []byte    `parquet:"raw_observation_blob,optional,plain"`
	RawActionBlob      []byte    `parquet:"raw_action_blob,optional,plain"`
	PredictMs          *float64  `parquet:"predict_ms,optional"`
	StepMs             *float64  `parquet:"step_ms,optional"`
	ObservationInfos   *string   `parquet:"observation_infos,optional"`
}

func optionalOf[T any](set bool, v T) *T {
	if !set {
		return nil
	}
	return &v
}

func optionalString(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// BenchmarkStepsPackedVsBare writes cartpole/session's rows as a steps
// file and, in the same op, with a bare parquet-go GenericWriter of the
// same columns in the same batches of 256 rows (its typed column writes,
// no parquet.Value per value): the steps writer's cost over parquet-go's
// own floor for a file this wide. Reported: ns/row of each and their
// ratio.
func BenchmarkStepsPackedVsBare(b *testing.B) {
	c := bytesCases()[1]
	f, meta := bytesFormat(b, c)
	rows, ends := bytesRows(c)
	bare := make([]bareWideStep, len(rows))
	for i := range rows {
		r := &rows[i]
		var obs []float32
		if r.ObservationLeaves != nil {
			obs = decodeF32(r.ObservationLeaves[0])
		}
		a := int64(binary.LittleEndian.Uint64(r.ActionLeaves[0]))
		bare[i] = bareWideStep{
			bareStep: bareStep{EpisodeID: r.EpisodeID, EpisodeIndex: r.EpisodeIndex, EnvIndex: r.EnvIndex, Step: r.Step,
				SessionStep: r.SessionStep, ObservationBlob: r.ObservationBlob, ActionBlob: r.ActionBlob, Reward: r.Reward,
				IsFirst: r.IsFirst, IsLast: r.IsLast, Terminated: r.Terminated, Truncated: r.Truncated,
				RecordedAt: r.RecordedAt.UnixMicro()},
			EpisodeRecordID: r.EpisodeRecordID, Observation: obs, Action: &a,
			Lane: optionalOf(r.HasLane, r.Lane), Infos: optionalString(r.Infos),
			RawObservationBlob: r.RawObservationBlob, RawActionBlob: r.RawActionBlob,
			PredictMs: optionalOf(r.HasPredictMs, r.PredictMs), StepMs: optionalOf(r.HasStepMs, r.StepMs),
			ObservationInfos: optionalString(r.ObservationInfos),
		}
	}
	codec, _ := codecFor(f.cfg.Compression)
	var ours, theirs time.Duration
	for b.Loop() {
		t0 := time.Now()
		encodeRows(b, f, meta, io.Discard, rows, ends)
		t1 := time.Now()
		w := parquet.NewGenericWriter[bareWideStep](io.Discard, parquet.Compression(codec),
			parquet.PageBufferSize(f.cfg.PageBufferSize), parquet.MaxRowsPerRowGroup(f.cfg.RowGroupRows),
			parquet.SkipPageStatistics(schema.ColObservationBlob), parquet.SkipPageBounds(schema.ColObservationBlob),
			parquet.SkipPageStatistics(schema.ColActionBlob), parquet.SkipPageBounds(schema.ColActionBlob),
			parquet.SkipPageStatistics(schema.ColRawObservationBlob), parquet.SkipPageBounds(schema.ColRawObservationBlob),
			parquet.SkipPageStatistics(schema.ColRawActionBlob), parquet.SkipPageBounds(schema.ColRawActionBlob))
		for i := 0; i < len(bare); i += batchRows {
			if _, err := w.Write(bare[i:min(i+batchRows, len(bare))]); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		ours, theirs = ours+t1.Sub(t0), theirs+time.Since(t1)
	}
	n := float64(b.N * len(rows))
	b.ReportMetric(float64(ours.Nanoseconds())/n, "steps-ns/row")
	b.ReportMetric(float64(theirs.Nanoseconds())/n, "bare-ns/row")
	b.ReportMetric(float64(ours)/float64(theirs), "steps/bare")
}
