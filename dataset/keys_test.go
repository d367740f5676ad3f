package dataset_test

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// Spaces with Dict keys holding "." and "%", which the runtime accepts.
// "a.b.c" and the nested "a" / "b.c" must land in different columns.
var (
	dottedObsSpec = &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{
		Keys: []string{"pos.x", "50%", "a.b.c", "a"},
		Spaces: []*spacesv1.SpaceSpec{
			{Shape: []int64{2}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}},
			{Dtype: spacesv1.DataType_DATA_TYPE_INT64, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 3}}},
			{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MaxLength: 8}}},
			{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{
				Keys:   []string{"b.c"},
				Spaces: []*spacesv1.SpaceSpec{{Dtype: spacesv1.DataType_DATA_TYPE_UINT8, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}}},
			}}},
		},
	}}}
	dottedActSpec = &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{
		Keys: []string{"move.dx", "%"},
		Spaces: []*spacesv1.SpaceSpec{
			{Dtype: spacesv1.DataType_DATA_TYPE_FLOAT64, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}},
			{Dtype: spacesv1.DataType_DATA_TYPE_INT64, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}},
		},
	}}}
)

func dottedObs(step int) [][]byte {
	le := binary.LittleEndian
	return [][]byte{
		le.AppendUint32(le.AppendUint32(nil, math.Float32bits(float32(step))), math.Float32bits(-0.5)),
		le.AppendUint64(nil, uint64(step%3)),
		[]byte("t" + string(rune('0'+step))),
		{byte(10 + step)},
	}
}

func dottedAct(step int) [][]byte {
	le := binary.LittleEndian
	return [][]byte{
		le.AppendUint64(nil, math.Float64bits(float64(step)/4)),
		le.AppendUint64(nil, uint64(step%2)),
	}
}

// recordDottedKeys records one session of one episode of three steps over
// the dotted spaces and returns the ROOT and the session id.
func recordDottedKeys(t *testing.T) (string, string) {
	t.Helper()
	const sid, rid = "dotted", "ep-000001"
	ids, rids := []string{"e1"}, []string{rid}
	slabs := func(spec *spacesv1.SpaceSpec, leaves [][]byte) [][]byte {
		s, err := blob.JoinLanes(spec, [][][]byte{leaves})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	obs := func(step int, reset bool) events.Event {
		return &events.ObservationEmitted{SessionID: sid, EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: int64(step), IsReset: reset,
			NumEnvs: 1, ObservationSpace: dottedObsSpec, Observation: slabs(dottedObsSpec, dottedObs(step))}
	}
	src := "runtime"
	evs := []events.Event{
		&events.SessionStarted{SessionID: sid, EnvID: "env"},
		&events.EpisodeStarted{SessionID: sid, EpisodeID: "e1", EpisodeRecordID: rid, EpisodeIndex: 1},
		obs(0, true),
		&events.Log{SessionID: sid, Level: events.LogInfo, Message: "env reset complete in 1ms (1 episode(s) ready)", Source: &src},
	}
	const steps = 3
	for s := 1; s <= steps; s++ {
		evs = append(evs,
			&events.ActionReceived{SessionID: sid, EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: int64(s),
				ActionSpace: dottedActSpec, Action: slabs(dottedActSpec, dottedAct(s))},
			&events.StepCompleted{SessionID: sid, Step: int64(s), Rewards: []float64{float64(s)}})
		if s == steps {
			evs = append(evs, &events.EpisodeCompleted{SessionID: sid, EpisodeID: "e1", EpisodeRecordID: rid, EpisodeIndex: 1,
				StepCount: steps, CumulativeReward: 6, Terminated: true})
		}
		evs = append(evs, obs(s, false))
	}
	evs = append(evs,
		&events.SessionEnded{SessionID: sid, Reason: "completed requested episodes", TotalSteps: steps, TotalEpisodes: 1},
		&events.TelemetrySnapshot{SessionID: sid, Snapshot: events.Snapshot{Horizon: events.HorizonSession, Rows: []events.TelemetryRow{
			{Op: "env.step", Component: "env", Metric: "rpc.total", Kind: events.MetricDurationMs, Count: steps, Avg: 1, P50: 1, P95: 1, P99: 1},
		}}})

	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root, recorder.WithClock(sim.StepClock(clockStart, time.Millisecond)))
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if err := events.Dispatch(context.Background(), rec, ev); err != nil {
			t.Fatalf("event %d (%s): %v", i, ev.Kind(), err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return root, sid
}

// TestDottedDictKeys records spaces whose Dict keys hold "." and "%" and
// reads them back: nothing is dropped, the typed columns are named with
// the escaped keys and hold the leaves, the names split back into the
// keys, the JSON rendering uses the real keys, and a replay gives the same
// tables.
func TestDottedDictKeys(t *testing.T) {
	root, sid := recordDottedKeys(t)
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.Session(dataset.Recording{SessionID: sid})
	if err != nil {
		t.Fatal(err)
	}
	if row := s.Row(); row == nil || row.Problems != 0 || row.StepsRecorded != 3 {
		t.Fatalf("sessions row %+v: want 3 steps recorded and no problems", row)
	}
	files := d.EpisodeFiles(dataset.Recording{SessionID: sid}, "ep-000001")
	if len(files) != 1 {
		t.Fatalf("steps files %v", files)
	}
	pf := openParquetFile(t, files[0].Path)

	columns := []struct {
		name string
		side string
		keys []string
		want func(step int) []any // the column's values at a step
	}{
		{"observation.pos%2Ex", schema.ColObservation, []string{"pos.x"}, func(s int) []any { return []any{float32(s), float32(-0.5)} }},
		{"observation.50%25", schema.ColObservation, []string{"50%"}, func(s int) []any { return []any{int64(s % 3)} }},
		{"observation.a%2Eb%2Ec", schema.ColObservation, []string{"a.b.c"}, func(s int) []any { return []any{"t" + string(rune('0'+s))} }},
		{"observation.a.b%2Ec", schema.ColObservation, []string{"a", "b.c"}, func(s int) []any { return []any{int32(10 + s)} }},
		{"action.move%2Edx", schema.ColAction, []string{"move.dx"}, func(s int) []any { return []any{float64(s) / 4} }},
		{"action.%25", schema.ColAction, []string{"%"}, func(s int) []any { return []any{int64(s % 2)} }},
	}
	var typed []string
	fields := pf.Schema().Fields()
	for _, f := range fields[schema.NumFixedStepsColumns : len(fields)-schema.NumV3StepsColumns] {
		typed = append(typed, f.Name())
	}
	var want []string
	for _, c := range columns {
		want = append(want, c.name)
	}
	if !slices.Equal(typed, want) {
		t.Fatalf("typed columns %q, want %q", typed, want)
	}
	rows := partitionRows(t, files)
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3", len(rows))
	}
	for _, c := range columns {
		t.Run(c.name, func(t *testing.T) {
			side, keys, err := schema.SplitColumnName(c.name)
			if err != nil || side != c.side || !slices.Equal(keys, c.keys) {
				t.Fatalf("SplitColumnName = %q, %q, %v; want %q, %q", side, keys, err, c.side, c.keys)
			}
			leaf, ok := pf.Schema().Lookup(c.name)
			if !ok {
				leaf, ok = pf.Schema().Lookup(c.name, "list", "element")
			}
			if !ok {
				t.Fatalf("no column %s", c.name)
			}
			for i, row := range rows {
				// Row i is the action of step i+1, computed from the
				// observation of step i.
				step := i
				if c.side == schema.ColAction {
					step = i + 1
				}
				var got []any
				for _, v := range row {
					if v.Column() == leaf.ColumnIndex {
						got = append(got, goValue(v))
					}
				}
				if w := c.want(step); !slices.Equal(got, w) {
					t.Errorf("row %d: %v, want %v", i, got, w)
				}
			}
		})
	}

	st, err := d.Steps(dataset.Recording{SessionID: sid}, "ep-000001")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	wantJSON := []struct{ obs, act string }{
		{`{"pos.x":[0,-0.5],"50%":0,"a.b.c":"t0","a":{"b.c":10}}`, `{"move.dx":0.25,"%":1}`},
		{`{"pos.x":[1,-0.5],"50%":1,"a.b.c":"t1","a":{"b.c":11}}`, `{"move.dx":0.5,"%":0}`},
		{`{"pos.x":[2,-0.5],"50%":2,"a.b.c":"t2","a":{"b.c":12}}`, `{"move.dx":0.75,"%":1}`},
	}
	i := 0
	for ; st.Next(); i++ {
		if i >= len(wantJSON) {
			t.Fatal("more steps than recorded")
		}
		obs, err := st.AppendObservationJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		act, err := st.AppendActionJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(obs) != wantJSON[i].obs || string(act) != wantJSON[i].act {
			t.Errorf("step %d JSON\n %s %s\nwant\n %s %s", i, obs, act, wantJSON[i].obs, wantJSON[i].act)
		}
		if !slices.Equal(leafPaths(st.Spaces().Observation), []string{"pos%2Ex", "50%25", "a%2Eb%2Ec", "a.b%2Ec"}) {
			t.Errorf("observation leaf paths %q", leafPaths(st.Spaces().Observation))
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if i != len(wantJSON) {
		t.Fatalf("%d steps, want %d", i, len(wantJSON))
	}

	dst, reps := replayInto(t, root)
	for _, rep := range reps {
		if len(rep.Notes) > 0 {
			t.Errorf("replay notes: %v", rep.Notes)
		}
	}
	compareRoots(t, root, dst)
}

func leafPaths(l *schema.Layout) []string {
	var out []string
	for _, lf := range l.Leaves {
		out = append(out, lf.Path)
	}
	return out
}

// goValue returns a typed column value as the Go value of its physical
// type.
func goValue(v parquet.Value) any {
	switch v.Kind() {
	case parquet.Int32:
		return v.Int32()
	case parquet.Int64:
		return v.Int64()
	case parquet.Float:
		return v.Float()
	case parquet.Double:
		return v.Double()
	case parquet.ByteArray:
		return string(v.ByteArray())
	case parquet.Boolean:
		return v.Boolean()
	}
	return nil
}

func openParquetFile(t *testing.T, path string) *parquet.File {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fh.Close() })
	info, err := fh.Stat()
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(fh, info.Size())
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}
