package parquetout

import (
	"bytes"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

func TestStepsCartpoleRoundTrip(t *testing.T) {
	fsys, root := osFS(t)
	obs := mustCompile(t, sBox(dtF32, 4))
	act := mustCompile(t, sDiscrete(dtI64, 2))
	f, err := NewStepsFormat(obs, act, Config{RowGroupRows: 3})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "steps", "session_id=s1", "episode_record_id=ep-000001")
	w, err := createSteps(f, fsys, dir, Metadata{SessionID: "s1", EpisodeRecordID: "ep-000001"})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	const n = 10
	for i := 0; i < n; i++ {
		o := f32s(float32(i), -1.5, float32(math.Inf(1)), 0)
		a := i64le(int64(i % 2))
		r := StepRow{
			EpisodeID: "0190c0de-7a3b-7c2d-8e9f-0123456789ab", EpisodeIndex: 1, EnvIndex: 3,
			Step: int64(i), SessionStep: int64(i + 1),
			ObservationBlob: append([]byte{0x0a, 16}, o...), ActionBlob: append([]byte{0x0a, 8}, a...),
			Reward: float64(i) / 2, IsFirst: i == 0, IsLast: i == n-1, Terminated: i == n-1,
			RecordedAt:        t0.Add(time.Duration(i) * time.Millisecond),
			ObservationLeaves: [][]byte{o}, ActionLeaves: [][]byte{a},
		}
		if i == 4 {
			r.ObservationBlob, r.ObservationLeaves = nil, nil
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		// The caller may reuse its buffers.
		for j := range o {
			o[j] = 0xEE
		}
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "part-00000.parquet"); path != want {
		t.Fatalf("path %s, want %s", path, want)
	}
	pf := openParquet(t, path)
	if got := len(pf.RowGroups()); got != 4 {
		t.Errorf("%d row groups, want 4", got)
	}
	for key, want := range map[string]string{
		schema.MetaSchemaVersion:   schema.SchemaVersion,
		schema.MetaLayout:          "episode",
		schema.MetaSessionID:       "s1",
		schema.MetaEpisodeRecordID: "ep-000001",
	} {
		if got, ok := pf.Lookup(key); !ok || got != want {
			t.Errorf("metadata %s = %q, %v; want %q", key, got, ok, want)
		}
	}
	js, ok := pf.Lookup(schema.MetaObservationSpace)
	if spec, err := schema.ParseSpecJSON([]byte(js)); !ok || err != nil || spec.GetBox() == nil {
		t.Errorf("observation space metadata %q: %v", js, err)
	}
	rows := readRows(t, pf)
	for i, row := range rows {
		if got := string(row[schema.StepsColEpisodeID][0].ByteArray()); got != "0190c0de-7a3b-7c2d-8e9f-0123456789ab" {
			t.Errorf("row %d episode_id %q", i, got)
		}
		if row[schema.StepsColStep][0].Int64() != int64(i) || row[schema.StepsColSessionStep][0].Int64() != int64(i+1) || row[schema.StepsColEnvIndex][0].Int32() != 3 {
			t.Errorf("row %d: step %v session_step %v env_index %v", i, row[schema.StepsColStep], row[schema.StepsColSessionStep], row[schema.StepsColEnvIndex])
		}
		if got := row[schema.StepsColReward][0].Double(); got != float64(i)/2 {
			t.Errorf("row %d reward %v", i, got)
		}
		if row[schema.StepsColIsFirst][0].Boolean() != (i == 0) || row[schema.StepsColIsLast][0].Boolean() != (i == n-1) {
			t.Errorf("row %d flags", i)
		}
		if got, want := row[schema.StepsColRecordedAt][0].Int64(), t0.Add(time.Duration(i)*time.Millisecond).UnixMicro(); got != want {
			t.Errorf("row %d recorded_at %d want %d", i, got, want)
		}
		obsCol := row[schema.NumFixedStepsColumns]
		if i == 4 {
			if !row[schema.StepsColObservationBlob][0].IsNull() || len(obsCol) != 1 || !obsCol[0].IsNull() {
				t.Errorf("row 4: observation not null: %v %v", row[schema.StepsColObservationBlob], obsCol)
			}
		} else {
			want := []float32{float32(i), -1.5, float32(math.Inf(1)), 0}
			if len(obsCol) != 4 {
				t.Fatalf("row %d observation %v", i, obsCol)
			}
			for j, v := range obsCol {
				if v.Float() != want[j] {
					t.Errorf("row %d observation[%d] = %v want %v", i, j, v.Float(), want[j])
				}
			}
			if !bytes.Equal(row[schema.StepsColObservationBlob][0].ByteArray()[2:], f32s(want...)) {
				t.Errorf("row %d observation_blob %x", i, row[schema.StepsColObservationBlob][0].ByteArray())
			}
		}
		if got := row[schema.NumFixedStepsColumns+1][0].Int64(); got != int64(i%2) {
			t.Errorf("row %d action %d", i, got)
		}
	}
	_ = parquet.Value{}
}

// TestStepsWriterReuse writes several files with one format: the recycled
// writer must carry nothing from one file into the next.
func TestStepsWriterReuse(t *testing.T) {
	fsys, root := osFS(t)
	f, err := NewStepsFormat(mustCompile(t, sBox(dtF32, 4)), mustCompile(t, sDiscrete(dtI64, 2)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	files := []struct {
		session, episode string
		rows             int
		abort            bool
	}{
		{"a", "ep-000001", 300, false},
		{"a", "ep-000002", 7, true},
		{"b", "ep-000003", 3, false},
		{"b", "ep-000004", 0, false},
		{"c", "ep-000005", 1, false},
	}
	for _, fl := range files {
		dir := filepath.Join(root, fl.session, fl.episode)
		w, err := createSteps(f, fsys, dir, Metadata{SessionID: fl.session, EpisodeRecordID: fl.episode})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < fl.rows; i++ {
			o := f32s(float32(i), 0, 0, 0)
			r := StepRow{EpisodeID: fl.episode, Step: int64(i), ObservationLeaves: [][]byte{o}, ActionLeaves: [][]byte{i64le(1)}}
			if err := w.Write(&r); err != nil {
				t.Fatal(err)
			}
		}
		if fl.abort {
			w.Abort()
			continue
		}
		path, err := w.Commit()
		if err != nil {
			t.Fatal(err)
		}
		pf := openParquet(t, path)
		if got, _ := pf.Lookup(schema.MetaSessionID); got != fl.session {
			t.Errorf("%s: session metadata %q", fl.episode, got)
		}
		if got, _ := pf.Lookup(schema.MetaEpisodeRecordID); got != fl.episode {
			t.Errorf("%s: episode metadata %q", fl.episode, got)
		}
		rows := readRows(t, pf)
		if len(rows) != fl.rows {
			t.Fatalf("%s: %d rows, want %d", fl.episode, len(rows), fl.rows)
		}
		for i, row := range rows {
			if string(row[schema.StepsColEpisodeID][0].ByteArray()) != fl.episode || row[schema.StepsColStep][0].Int64() != int64(i) ||
				row[schema.NumFixedStepsColumns][0].Float() != float32(i) {
				t.Fatalf("%s row %d: %v %v", fl.episode, i, row[schema.StepsColEpisodeID], row[schema.StepsColStep])
			}
		}
	}
}

// TestStepsLargeRows mixes rows written straight through (images) with
// batched ones, reusing the caller's buffers after every Write.
func TestStepsLargeRows(t *testing.T) {
	mem := vfs.NewMem()
	obs := mustCompile(t, sDict([]string{"img", "say"}, sBox(dtU8, 84, 84, 3), sText()))
	f, err := NewStepsFormat(obs, mustCompile(t, sDiscrete(dtI64, 6)), Config{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := createSteps(f, mem, "/d", Metadata{SessionID: "s", EpisodeRecordID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	img := make([]byte, 84*84*3)
	const n = 40
	for i := 0; i < n; i++ {
		for j := range img {
			img[j] = byte(i + j)
		}
		r := StepRow{EpisodeID: "e", Step: int64(i), ActionLeaves: [][]byte{i64le(int64(i))}}
		if i%3 != 2 { // every third row has no observation and is batched
			r.ObservationBlob = blobOf(img)
			r.ObservationLeaves = [][]byte{img, nil} // an empty Text leaf, not a null one
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
		for j := range img {
			img[j] = 0xAA // the caller reuses its buffer
		}
	}
	path, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, openMem(t, mem, path))
	if len(rows) != n {
		t.Fatalf("%d rows", len(rows))
	}
	for i, row := range rows {
		imgCol, sayCol := row[schema.NumFixedStepsColumns], row[schema.NumFixedStepsColumns+1]
		if row[schema.StepsColStep][0].Int64() != int64(i) || row[schema.NumFixedStepsColumns+2][0].Int64() != int64(i) {
			t.Fatalf("row %d: step %v action %v", i, row[schema.StepsColStep], row[schema.NumFixedStepsColumns+2])
		}
		if i%3 == 2 {
			if !imgCol[0].IsNull() || !sayCol[0].IsNull() || !row[schema.StepsColObservationBlob][0].IsNull() {
				t.Fatalf("row %d: observation not null", i)
			}
			continue
		}
		want := make([]byte, len(img))
		for j := range want {
			want[j] = byte(i + j)
		}
		if !bytes.Equal(imgCol[0].ByteArray(), want) {
			t.Fatalf("row %d: image differs", i)
		}
		if !bytes.Equal(row[schema.StepsColObservationBlob][0].ByteArray(), blobOf(want)) {
			t.Fatalf("row %d: blob differs", i)
		}
		if sayCol[0].IsNull() || len(sayCol[0].ByteArray()) != 0 {
			t.Fatalf("row %d: empty text became %v", i, sayCol[0])
		}
	}
}
