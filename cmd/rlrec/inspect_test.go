package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
)

var update = flag.Bool("update", false, "rewrite testdata/golden-root and the golden outputs under cmd/rlrec/testdata")

// goldenRoot is a small recorded ROOT committed for golden tests.
const goldenRoot = "../../testdata/golden-root"

// goldenSessions are the sessions recorded into goldenRoot, one after
// another, each with its own simulated clock, so the ROOT is the same on
// every run. They follow rlmesh rc.5's order, as the version 2 golden ROOT
// (goldenRootV2) was recorded, so that the two compare row for row;
// rlmesh 0.1's recordings are the simulator's, the recorder's and the
// demo's tests.
var goldenSessions = []sim.Config{
	{Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 8, Seed: 1, SessionID: "golden-cartpole", Order: sim.OrderRC5},
	// A clean cap (no env server's repeat), so that its second episode
	// ends by the env, with final info.
	{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 3, Seed: 2, SessionID: "golden-all-leaves",
		CapsCompleteOnce: true, Order: sim.OrderRC5},
}

// writeGoldenRoot records goldenSessions into dir.
func writeGoldenRoot(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec, err := recorder.Open(dir, recorder.WithWriters(1))
	if err != nil {
		t.Fatal(err)
	}
	for i, cfg := range goldenSessions {
		cfg.Clock = sim.StepClock(start.Add(time.Duration(i)*time.Hour), time.Millisecond)
		// Events are stamped from the session's own goroutine, so the
		// times do not depend on what else reads a clock.
		hooks := &stampedHooks{rec: rec, now: sim.StepClock(start.Add(time.Duration(i)*time.Hour), 500*time.Microsecond)}
		if _, err := sim.Run(context.Background(), hooks, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The recorder's state directory holds only an empty log after a clean
	// close; it is not part of the dataset.
	if err := os.RemoveAll(filepath.Join(dir, "_rlrec")); err != nil {
		t.Fatal(err)
	}
}

// runCmd runs an rlrec command line and returns its status, stdout and
// stderr.
func runReadCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}
	env.Logger = slog.New(slog.DiscardHandler)
	code := run(context.Background(), env, args)
	return code, out.String(), errOut.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/rlrec -run Golden -update)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update if the change is intended):\n%s", path, got)
	}
}

func TestGolden(t *testing.T) {
	if *update {
		writeGoldenRoot(t, goldenRoot)
	}
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{"inspect", []string{"inspect", goldenRoot}, "inspect.txt"},
		{"inspect json", []string{"inspect", "--json", goldenRoot}, "inspect.json"},
		{"inspect session", []string{"inspect", goldenRoot, "--session", "golden-all-leaves"}, "inspect-session.txt"},
		{"inspect session json", []string{"inspect", goldenRoot, "--session", "golden-cartpole", "--json"}, "inspect-session.json"},
		{"inspect episode", []string{"inspect", goldenRoot, "--session", "golden-cartpole", "--episode", "ep-000002"}, "inspect-episode.txt"},
		{"replay jsonl", []string{"replay", goldenRoot, "--session", "golden-all-leaves"}, "replay-all-leaves.jsonl"},
		{"replay jsonl episode", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--episode", "ep-000003"}, "replay-cartpole-ep3.jsonl"},
		{"verify", []string{"verify", goldenRoot}, "verify.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReadCmd(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			// The ROOT path is printed as given.
			checkGolden(t, tc.golden, out)
		})
	}
}

func TestGoldenRootIsSmall(t *testing.T) {
	var total int64
	err := filepath.Walk(goldenRoot, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if total == 0 || total > 512<<10 {
		t.Errorf("golden root holds %d bytes, want some and under 512 KiB", total)
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"inspect no root", []string{"inspect"}, 2},
		{"inspect episode without session", []string{"inspect", goldenRoot, "--episode", "ep-000001"}, 2},
		{"inspect bad flag", []string{"inspect", goldenRoot, "--nope"}, 2},
		{"inspect missing root", []string{"inspect", filepath.Join(t.TempDir(), "missing")}, 1},
		{"inspect unknown session", []string{"inspect", goldenRoot, "--session", "nope"}, 1},
		{"replay no session", []string{"replay", goldenRoot}, 2},
		{"replay bad format", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "csv"}, 2},
		{"replay events episode", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--format", "events", "--episode", "ep-000001"}, 2},
		{"replay unknown session", []string{"replay", goldenRoot, "--session", "nope"}, 1},
		{"replay unknown episode", []string{"replay", goldenRoot, "--session", "golden-cartpole", "--episode", "ep-999999"}, 1},
		{"replay help", []string{"replay", "--help"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runReadCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %s", code, tc.code, errOut)
			}
			if code != 0 && errOut == "" {
				t.Error("no diagnostic on stderr")
			}
		})
	}
}

// TestReplayArrow reads the Arrow stream back with arrow-go and compares
// it with the steps table.
func TestReplayArrow(t *testing.T) {
	out := filepath.Join(t.TempDir(), "steps.arrows")
	code, _, errOut := runReadCmd(t, "replay", goldenRoot, "--session", "golden-all-leaves", "--format", "arrow", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ipc.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if !r.Schema().Equal(arrowStepsSchema) {
		t.Fatalf("schema %v", r.Schema())
	}
	d, err := dataset.Open(goldenRoot)
	if err != nil {
		t.Fatal(err)
	}
	type stepRow struct {
		rid string
		s   dataset.Step
	}
	var want []stepRow
	leaves, err := d.Lookup("golden-all-leaves", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, rid := range d.EpisodeRecordIDs(leaves) {
		st, err := d.Steps(leaves, rid)
		if err != nil {
			continue
		}
		for st.Next() {
			s := *st.Step()
			s.ObservationBlob = append([]byte(nil), s.ObservationBlob...)
			s.ActionBlob = append([]byte(nil), s.ActionBlob...)
			want = append(want, stepRow{rid, s})
		}
		st.Close()
	}
	i := 0
	for r.Next() {
		rec := r.RecordBatch()
		for j := 0; j < int(rec.NumRows()); j++ {
			if i >= len(want) {
				t.Fatal("more Arrow rows than steps")
			}
			w := want[i]
			col := func(k int) arrow.Array { return rec.Column(k) }
			got := dataset.Step{
				EpisodeID:       col(3).(*array.String).Value(j),
				EpisodeIndex:    col(4).(*array.Int64).Value(j),
				EnvIndex:        col(5).(*array.Int32).Value(j),
				Step:            col(6).(*array.Int64).Value(j),
				SessionStep:     col(7).(*array.Int64).Value(j),
				ObservationBlob: col(8).(*array.Binary).Value(j),
				ActionBlob:      col(9).(*array.Binary).Value(j),
				Reward:          col(10).(*array.Float64).Value(j),
				IsFirst:         col(11).(*array.Boolean).Value(j),
				IsLast:          col(12).(*array.Boolean).Value(j),
				Terminated:      col(13).(*array.Boolean).Value(j),
				Truncated:       col(14).(*array.Boolean).Value(j),
				RecordedAt:      time.UnixMicro(int64(col(15).(*array.Timestamp).Value(j))).UTC(),
			}
			if col(0).(*array.String).Value(j) != "golden-all-leaves" || col(1).(*array.String).Value(j) != leaves.EnvID || col(2).(*array.String).Value(j) != w.rid {
				t.Fatalf("row %d: partition columns differ", i)
			}
			if got.EpisodeID != w.s.EpisodeID || got.EpisodeIndex != w.s.EpisodeIndex || got.EnvIndex != w.s.EnvIndex ||
				got.Step != w.s.Step || got.SessionStep != w.s.SessionStep || !bytes.Equal(got.ObservationBlob, w.s.ObservationBlob) ||
				!bytes.Equal(got.ActionBlob, w.s.ActionBlob) || got.Reward != w.s.Reward || got.IsFirst != w.s.IsFirst ||
				got.IsLast != w.s.IsLast || got.Terminated != w.s.Terminated || got.Truncated != w.s.Truncated ||
				!got.RecordedAt.Equal(w.s.RecordedAt) {
				t.Fatalf("row %d differs:\n arrow %+v\n steps %+v", i, got, w.s)
			}
			i++
		}
	}
	if err := r.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	if i != len(want) || i == 0 {
		t.Fatalf("%d Arrow rows, %d steps", i, len(want))
	}
}

// TestReplayEventsIngest runs replay --format events into ingest and
// compares the session rows of the two ROOTs (the full table comparison
// is in package dataset).
func TestReplayEventsIngest(t *testing.T) {
	stream := filepath.Join(t.TempDir(), "s.events")
	code, _, errOut := runReadCmd(t, "replay", goldenRoot, "--session", "golden-cartpole", "--format", "events", "-o", stream)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if code, _, errOut := runReadCmd(t, "ingest", "--out", dst, stream); code != 0 {
		t.Fatalf("ingest exit %d: %s", code, errOut)
	}
	a, _ := dataset.Open(goldenRoot)
	b, _ := dataset.Open(dst)
	ca, err := a.Lookup("golden-cartpole", "")
	if err != nil {
		t.Fatal(err)
	}
	sa, err := a.Session(ca)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Session(ca)
	if err != nil {
		t.Fatal(err)
	}
	if len(sa.Rows) != 1 || len(sb.Rows) != 1 || !equalSessionRow(sa.Rows[0], sb.Rows[0]) {
		t.Errorf("session rows differ:\n %+v\n %+v", sa.Rows, sb.Rows)
	}
}

func equalSessionRow(a, b schema.SessionRow) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// stampedHooks hands every event to the recorder with a time from now.
type stampedHooks struct {
	rec *recorder.Recorder
	now func() time.Time
}

func (h *stampedHooks) at(ctx context.Context, ev events.Event) error {
	return h.rec.RecordAt(ctx, ev, h.now())
}

func (h *stampedHooks) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnLog(ctx context.Context, ev *events.Log) error { return h.at(ctx, ev) }
func (h *stampedHooks) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return h.at(ctx, ev)
}
func (h *stampedHooks) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	return h.at(ctx, ev)
}

func (h *stampedHooks) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return h.at(ctx, ev)
}

// TestPrintSpaceKeys checks that the space tree shows dict keys by their
// real names, unescaping the leaf paths.
func TestPrintSpaceKeys(t *testing.T) {
	tests := []struct {
		name   string
		leaves []inspectLeaf
		want   string
	}{
		{
			name:   "single leaf",
			leaves: []inspectLeaf{{"", "Discrete(2) int64"}},
			want:   "  action: Discrete(2) int64\n",
		},
		{
			name: "dotted and percent keys",
			leaves: []inspectLeaf{
				{"pos%2Ex", "Box(2) float32"},
				{"50%25", "Discrete(3) int64"},
				{"a%2Eb%2Ec", "Text"},
				{"a.b%2Ec", "Box() uint8"},
				{"a.0", "Box() bool"},
			},
			want: "  action:\n" +
				"    pos.x: Box(2) float32\n" +
				"    50%: Discrete(3) int64\n" +
				"    a.b.c: Text\n" +
				"    a:\n" +
				"      b.c: Box() uint8\n" +
				"      0: Box() bool\n",
		},
		{
			name:   "key with a newline is quoted",
			leaves: []inspectLeaf{{"x\ny", "Text"}, {" pad", "Text"}},
			want:   "  action:\n    \"x\\ny\": Text\n    \" pad\": Text\n",
		},
		{
			name:   "malformed path is shown whole",
			leaves: []inspectLeaf{{"a%zz", "Text"}},
			want:   "  action:\n    a%zz: Text\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printSpace(&b, "action", tc.leaves)
			if b.String() != tc.want {
				t.Fatalf("printSpace =\n%s\nwant\n%s", b.String(), tc.want)
			}
		})
	}
}

// TestGoldenRootReproduced: recording goldenSessions today gives
// testdata/golden-root byte for byte, so any change to what the recorder
// writes shows here (rewrite it with -update when the change is meant).
func TestGoldenRootReproduced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "root")
	writeGoldenRoot(t, dir)
	want := map[string][]byte{}
	err := filepath.Walk(goldenRoot, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, err := filepath.Rel(goldenRoot, path)
		if err != nil {
			return err
		}
		want[rel], err = os.ReadFile(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got++
		if w, ok := want[rel]; !ok {
			t.Errorf("%s: written, not in %s", rel, goldenRoot)
		} else if !bytes.Equal(b, w) {
			t.Errorf("%s: %d bytes differ from the golden %d bytes", rel, len(b), len(w))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(want) {
		t.Errorf("%d files written, the golden root holds %d", got, len(want))
	}
}
