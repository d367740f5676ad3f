package curate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/curate"
	"github.com/rlrec/rlrec/curate/where"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/sim"
	"github.com/rlrec/rlrec/verify"
)

// source records a ROOT of several recordings in layout l: every env,
// both autoreset modes, a failed session, two runs under one session id.
func source(t *testing.T, l hive.Layout) string {
	t.Helper()
	cfgs := []sim.Config{
		{SessionID: "cartpole", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 9, TimeLimit: 15, Seed: 1},
		{SessionID: "cartpole", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 5, MaxEpisodeSteps: 12, Seed: 2},
		{SessionID: "failing", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 100, TimeLimit: 10, FailAfterSteps: 25, Seed: 3},
		{SessionID: "pick-place", Env: "pick-place", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 20, Seed: 4},
		{SessionID: "all-leaves", Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 8, Seed: 5},
	}
	root := filepath.Join(t.TempDir(), "src-"+string(l))
	roottest.RecordInto(t, root, cfgs, recorder.WithLayout(l))
	return root
}

func mustVerify(t *testing.T, root string) {
	t.Helper()
	rep, err := verify.Root(context.Background(), root)
	if err != nil {
		t.Fatalf("verify %s: %v", root, err)
	}
	for _, p := range rep.Problems {
		t.Errorf("verify %s: %s %s row %d: %s", root, p.Check, p.Path, p.Row, p.Message)
	}
}

func open(t *testing.T, root string) *dataset.Dataset {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// episodeRows returns a recording's episodes rows by record id, without
// steps_file (which names the layout's file).
func episodeRows(t *testing.T, d *dataset.Dataset, rec dataset.Recording) map[string]schema.EpisodeRow {
	t.Helper()
	eps, err := d.Episodes(rec)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]schema.EpisodeRow{}
	for _, e := range eps {
		r := e.Row
		if _, dup := out[r.EpisodeRecordID]; dup {
			t.Fatalf("%s: episode %s has two rows", rec, r.EpisodeRecordID)
		}
		r.StepsFile = nil
		out[r.EpisodeRecordID] = r
	}
	return out
}

// stepRows renders an episode's steps, blobs included.
func stepRows(t *testing.T, d *dataset.Dataset, rec dataset.Recording, rid string) []string {
	t.Helper()
	if !d.HasSteps(rec, rid) {
		return nil
	}
	st, err := d.Steps(rec, rid)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out []string
	for st.Next() {
		s := *st.Step()
		out = append(out, fmt.Sprintf("%+v", s))
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sameEpisodes checks that dst holds exactly the episodes of src named in
// want (nil: all), rows and steps equal.
func sameEpisodes(t *testing.T, src, dst *dataset.Dataset, rec dataset.Recording, want map[string]bool) {
	t.Helper()
	a, b := episodeRows(t, src, rec), episodeRows(t, dst, rec)
	n := 0
	for rid, ra := range a {
		if want != nil && !want[rid] {
			if _, ok := b[rid]; ok {
				t.Errorf("%s episode %s was copied, but not selected", rec, rid)
			}
			continue
		}
		n++
		rb, ok := b[rid]
		if !ok {
			t.Errorf("%s episode %s is missing from the copy", rec, rid)
			continue
		}
		if !reflect.DeepEqual(ra, rb) {
			t.Errorf("%s episode %s differs:\n source %+v\n copy   %+v", rec, rid, ra, rb)
		}
		sa, sb := stepRows(t, src, rec, rid), stepRows(t, dst, rec, rid)
		if strings.Join(sa, "\n") != strings.Join(sb, "\n") {
			t.Errorf("%s episode %s: steps differ (%d rows, copy %d)", rec, rid, len(sa), len(sb))
		}
	}
	if len(b) != n {
		t.Errorf("%s: the copy has %d episodes, want %d", rec, len(b), n)
	}
}

func TestCopyEverything(t *testing.T) {
	for _, tc := range []struct{ from, to hive.Layout }{
		{hive.LayoutEpisode, hive.LayoutSession},
		{hive.LayoutSession, hive.LayoutEpisode},
		{hive.LayoutEpisode, hive.LayoutEpisode},
		{hive.LayoutSession, ""},
	} {
		t.Run(fmt.Sprintf("%s to %s", tc.from, tc.to), func(t *testing.T) {
			src := source(t, tc.from)
			dst := filepath.Join(t.TempDir(), "dst")
			rep, err := curate.Copy(context.Background(), src, dst, curate.WithLayout(tc.to))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.to
			if want == "" {
				want = tc.from
			}
			if rep.Layout != want {
				t.Errorf("layout %s, want %s", rep.Layout, want)
			}
			t.Logf("report %+v", rep)
			mustVerify(t, dst)
			ds, dd := open(t, src), open(t, dst)
			if !reflect.DeepEqual(ds.Recordings(), dd.Recordings()) {
				t.Fatalf("recordings %v, copy %v", ds.Recordings(), dd.Recordings())
			}
			for _, f := range dd.Files(schema.TableSteps) {
				if f.Episode != (want == hive.LayoutEpisode) {
					t.Fatalf("steps file %s in layout %s", f.Rel, want)
				}
			}
			for _, rec := range ds.Recordings() {
				sameEpisodes(t, ds, dd, rec, nil)
				sa, err := ds.Session(rec)
				if err != nil {
					t.Fatal(err)
				}
				sb, err := dd.Session(rec)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(sa.Rows, sb.Rows) {
					t.Errorf("%s sessions rows differ:\n source %+v\n copy   %+v", rec, sa.Rows, sb.Rows)
				}
				for _, read := range []func(*dataset.Dataset) (any, error){
					func(d *dataset.Dataset) (any, error) { return d.Logs(rec) },
					func(d *dataset.Dataset) (any, error) { return d.Telemetry(rec) },
				} {
					a, err := read(ds)
					if err != nil {
						t.Fatal(err)
					}
					b, err := read(dd)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(a, b) {
						t.Errorf("%s: logs or telemetry differ", rec)
					}
				}
			}
		})
	}
}

// unfinishedLeftOut counts the actions no StepCompleted followed (logs
// rows, schema.UnfinishedAction) of rec's episodes that want leaves out.
func unfinishedLeftOut(t *testing.T, ds *dataset.Dataset, rec dataset.Recording, want map[string]bool) int64 {
	t.Helper()
	logs, err := ds.Logs(rec)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, l := range logs {
		if l.Source == nil || *l.Source != schema.SourceEvent {
			continue
		}
		if u, err := schema.ParseUnfinishedAction(l.Message); err == nil && !want[u.EpisodeRecordID] {
			n++
		}
	}
	return n
}

func TestCopyWhere(t *testing.T) {
	src := source(t, hive.LayoutSession)
	const filter = "status = 'completed' AND step_count > 5 AND NOT (truncated AND step_count > 14)"
	f, err := where.Parse(filter)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	var progress [][2]int64
	rep, err := curate.Copy(context.Background(), src, dst, curate.WithWhere(f), curate.WithLayout(hive.LayoutEpisode), curate.WithStepsProgress(func(done, total int64) { progress = append(progress, [2]int64{done, total}) }))
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, dst)
	// The steps progress rises to the steps copied.
	if len(progress) == 0 || progress[len(progress)-1][0] != rep.Targets[0].Steps || progress[len(progress)-1][1] != rep.Targets[0].Steps {
		t.Errorf("steps progress %v, want it to end at %d of %d", progress, rep.Targets[0].Steps, rep.Targets[0].Steps)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i][0] < progress[i-1][0] {
			t.Errorf("steps progress went back: %v", progress)
		}
	}
	ds, dd := open(t, src), open(t, dst)
	var eps, steps int64
	var recs []dataset.Recording
	for _, rec := range ds.Recordings() {
		all, err := ds.Episodes(rec)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for i := range all {
			if f.Match(&all[i]) {
				want[all[i].EpisodeRecordID] = true
				eps++
				steps += all[i].Row.StepsRecorded
			}
		}
		if len(want) == 0 {
			if dd.HasRecording(rec) {
				t.Errorf("%s has no matching episode but was copied", rec)
			}
			continue
		}
		recs = append(recs, rec)
		sameEpisodes(t, ds, dd, rec, want)
		s, err := dd.Session(rec)
		if err != nil {
			t.Fatal(err)
		}
		orig, _ := ds.Session(rec)
		row, o := s.Row(), orig.Row()
		if row.EpisodesRecorded != int64(len(want)) {
			t.Errorf("%s: episodes_recorded %d, want %d", rec, row.EpisodesRecorded, len(want))
		}
		// Every lane-step of the source is a step or a dropped step. An
		// action no StepCompleted followed is no step in the source (a
		// logs row); when its episode is left out, the copy's recorder sees
		// an action naming an episode it does not have, which it counts as
		// dropped, as it does every other action of a left-out episode.
		leftOut := unfinishedLeftOut(t, ds, rec, want)
		if row.StepsRecorded+row.DroppedSteps != o.StepsRecorded+o.DroppedSteps+leftOut {
			t.Errorf("%s: steps %d + dropped %d, source %d + %d + %d unfinished actions of left-out episodes", rec, row.StepsRecorded, row.DroppedSteps, o.StepsRecorded, o.DroppedSteps, leftOut)
		}
		// Problems may differ: a step of an episode left out (the failed
		// step of an incomplete one, say) replays with no episode id.
		if row.Status != o.Status {
			t.Errorf("%s: status %s, source %s", rec, row.Status, o.Status)
		}
	}
	if len(recs) < 2 {
		t.Fatalf("the filter selects episodes of %d recordings; the test wants more", len(recs))
	}
	if !reflect.DeepEqual(dd.Recordings(), recs) {
		t.Errorf("copied recordings %v, want %v", dd.Recordings(), recs)
	}
	got := rep.Targets[0]
	if got.Episodes != eps || got.Steps != steps || got.Recordings != int64(len(recs)) {
		t.Errorf("report %+v, want %d recordings, %d episodes, %d steps", got, len(recs), eps, steps)
	}
}

func TestCopySessionEnv(t *testing.T) {
	src := source(t, hive.LayoutEpisode)
	ds := open(t, src)
	recs := ds.Find("cartpole", "")
	if len(recs) != 2 {
		t.Fatalf("session cartpole names %d recordings", len(recs))
	}
	dst := filepath.Join(t.TempDir(), "one")
	if _, err := curate.Copy(context.Background(), src, dst, curate.WithSession("cartpole"), curate.WithEnv(recs[1].EnvID)); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, dst)
	dd := open(t, dst)
	if got := dd.Recordings(); len(got) != 1 || got[0] != recs[1] {
		t.Fatalf("copied %v, want %v", got, recs[1])
	}
	sameEpisodes(t, ds, dd, recs[1], nil)

	both := filepath.Join(t.TempDir(), "both")
	if _, err := curate.Copy(context.Background(), src, both, curate.WithSession("cartpole")); err != nil {
		t.Fatal(err)
	}
	if got := open(t, both).Recordings(); !reflect.DeepEqual(got, recs) {
		t.Fatalf("copied %v, want %v", got, recs)
	}
}

func TestCopySplit(t *testing.T) {
	src := source(t, hive.LayoutEpisode)
	splits, err := curate.ParseSplits("train=0.7,val=0.2,test=0.1")
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	f, _ := where.Parse("status = 'completed'")
	rep, err := curate.Copy(context.Background(), src, dst, curate.WithSplits(splits), curate.WithSeed(7), curate.WithWhere(f), curate.WithLayout(hive.LayoutSession))
	if err != nil {
		t.Fatal(err)
	}
	ds := open(t, src)
	per := make([]map[dataset.Recording]map[string]bool, len(splits))
	for i := range per {
		per[i] = map[dataset.Recording]map[string]bool{}
	}
	total := 0
	for _, rec := range ds.Recordings() {
		eps, _ := ds.Episodes(rec)
		for i := range eps {
			if !f.Match(&eps[i]) {
				continue
			}
			total++
			k := splits.Assign(7, rec, eps[i].EpisodeRecordID)
			if per[k][rec] == nil {
				per[k][rec] = map[string]bool{}
			}
			per[k][rec][eps[i].EpisodeRecordID] = true
		}
	}
	copied := 0
	for i, s := range splits {
		root := filepath.Join(dst, s.Name)
		if rep.Targets[i].Root != root || rep.Targets[i].Split != s.Name {
			t.Errorf("target %d is %+v, want %s", i, rep.Targets[i], root)
		}
		mustVerify(t, root)
		dd := open(t, root)
		if len(dd.Recordings()) != len(per[i]) {
			t.Errorf("split %s: %d recordings, want %d", s.Name, len(dd.Recordings()), len(per[i]))
		}
		for rec, want := range per[i] {
			sameEpisodes(t, ds, dd, rec, want)
			copied += len(want)
		}
		if int(rep.Targets[i].Episodes) != countAll(per[i]) {
			t.Errorf("split %s: report says %d episodes, want %d", s.Name, rep.Targets[i].Episodes, countAll(per[i]))
		}
		if countAll(per[i]) == 0 {
			t.Errorf("split %s got no episode; the test wants every split used", s.Name)
		}
	}
	if copied != total {
		t.Errorf("%d episodes copied across the splits, %d selected", copied, total)
	}
}

func countAll(m map[dataset.Recording]map[string]bool) int {
	n := 0
	for _, s := range m {
		n += len(s)
	}
	return n
}

func TestCopyRefuses(t *testing.T) {
	src := source(t, hive.LayoutEpisode)
	nonEmpty := t.TempDir()
	if err := os.WriteFile(filepath.Join(nonEmpty, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	none, _ := where.Parse("step_count > 1000000")
	for _, tc := range []struct {
		name string
		dst  string
		opts []curate.Option
		want string
	}{
		{"non-empty destination", nonEmpty, nil, "is not empty"},
		{"destination inside the source", filepath.Join(src, "copy"), nil, "inside the source"},
		{"the source itself", src, nil, "inside the source"},
		{"unknown session", filepath.Join(t.TempDir(), "d"), []curate.Option{curate.WithSession("nope")}, "not found"},
		{"env without session", filepath.Join(t.TempDir(), "d"), []curate.Option{curate.WithEnv("x")}, "needs its session"},
		{"nothing selected", filepath.Join(t.TempDir(), "d"), []curate.Option{curate.WithWhere(none)}, "matches the filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := curate.Copy(context.Background(), src, tc.dst, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Copy: %v, want an error saying %q", err, tc.want)
			}
			if tc.name == "nothing selected" {
				if !errors.Is(err, curate.ErrNothing) {
					t.Errorf("%v does not wrap ErrNothing", err)
				}
				if _, err := os.Stat(tc.dst); err == nil {
					t.Errorf("%s was created", tc.dst)
				}
			}
		})
	}
	// Nothing was written into the source.
	if strays := open(t, src).Strays(); len(strays) > 0 {
		t.Errorf("strays in the source: %v", strays)
	}
}

func TestSplitDeterminism(t *testing.T) {
	splits, err := curate.ParseSplits("train=0.9,val=0.1")
	if err != nil {
		t.Fatal(err)
	}
	rec := dataset.Recording{SessionID: "s", EnvID: "e"}
	counts := make([]int, 2)
	var first, again, other bytes.Buffer
	const n = 20000
	for i := range n {
		rid := fmt.Sprintf("ep-%06d", i)
		k := splits.Assign(42, rec, rid)
		counts[k]++
		fmt.Fprint(&first, k)
		fmt.Fprint(&again, splits.Assign(42, rec, rid))
		fmt.Fprint(&other, splits.Assign(43, rec, rid))
		u := curate.SplitPoint(42, rec, rid)
		if u < 0 || u >= 1 {
			t.Fatalf("SplitPoint %v outside [0, 1)", u)
		}
	}
	if first.String() != again.String() {
		t.Error("the same seed assigns differently")
	}
	if first.String() == other.String() {
		t.Error("another seed assigns the same")
	}
	// 10% of 20,000 is 2,000 with a standard deviation of about 42.
	if counts[1] < 1800 || counts[1] > 2200 {
		t.Errorf("val got %d of %d episodes, want about 10%%", counts[1], n)
	}
	// The point depends on the whole identity, with no ambiguity between
	// its parts.
	a := curate.SplitPoint(1, dataset.Recording{SessionID: "ab", EnvID: "c"}, "d")
	b := curate.SplitPoint(1, dataset.Recording{SessionID: "a", EnvID: "bc"}, "d")
	if a == b {
		t.Error("ids split differently give the same point")
	}
	// A golden value: the rule is documented, so other tools can
	// reproduce it.
	if got := curate.SplitPoint(42, rec, "ep-000000"); fmt.Sprintf("%.12f", got) != goldenPoint {
		t.Errorf("SplitPoint(42, s, e, ep-000000) = %.12f, want %s", got, goldenPoint)
	}
}

// goldenPoint is SplitPoint(42, session "s", env "e", "ep-000000"),
// computed by hand from the documented rule:
//
//	python3 -c 'import hashlib,struct; h=hashlib.sha256(b"rlrec.split.v1"+struct.pack(">Q",42)+b"\x01s\x01e\x09ep-000000").digest(); print("%.12f" % ((int.from_bytes(h[:8],"big")>>11)/2**53))'
const goldenPoint = "0.648894472332"

func TestParseSplits(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // String() of the result, or "" for an error
	}{
		{"two", "train=0.9,val=0.1", "train=0.9,val=0.1"},
		{"three with blanks", "train=0.8, val=0.1, test=0.1", "train=0.8,val=0.1,test=0.1"},
		{"one", "all=1", "all=1"},
		{"names with - and _", "a-1=0.5,b_2=0.5", "a-1=0.5,b_2=0.5"},
		{"sum below 1", "train=0.8,val=0.1", ""},
		{"sum above 1", "train=0.9,val=0.2", ""},
		{"zero fraction", "train=1,val=0", ""},
		{"negative", "train=1.1,val=-0.1", ""},
		{"not a number", "train=most", ""},
		{"no fraction", "train", ""},
		{"empty name", "=1", ""},
		{"dot name", ".hidden=1", ""},
		{"underscore first", "_x=1", ""},
		{"slash", "a/b=1", ""},
		{"duplicate", "a=0.5,a=0.5", ""},
		{"table name", "steps=1", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := curate.ParseSplits(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("ParseSplits(%q) = %v, want an error", tc.in, got)
				}
				if !errors.Is(err, curate.ErrSplit) {
					t.Errorf("%v does not wrap ErrSplit", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// openHooks records into a recorder but drops the end of every session,
// so the recordings are still open when the recorder closes.
type openHooks struct{ *recorder.Recorder }

func (h openHooks) OnSessionEnded(context.Context, *events.SessionEnded) error   { return nil }
func (h openHooks) OnSessionFailed(context.Context, *events.SessionFailed) error { return nil }

// RecordAt is the path the simulator hands timed events to: the closing
// events are left out there too.
func (h openHooks) RecordAt(ctx context.Context, ev events.Event, at time.Time) error {
	switch ev.(type) {
	case *events.SessionEnded, *events.SessionFailed:
		return nil
	}
	return h.Recorder.RecordAt(ctx, ev, at)
}

func TestCopyOpenRecording(t *testing.T) {
	root := filepath.Join(t.TempDir(), "open")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{SessionID: "open", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, TimeLimit: 8, Seed: 1,
		Clock: sim.StepClock(roottest.Epoch, time.Millisecond)}
	if _, err := sim.Run(context.Background(), openHooks{rec}, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	rep, err := curate.Copy(context.Background(), root, dst)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, dst)
	if len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, "\n"), "closing event") {
		t.Errorf("notes %q do not say the recording was copied without its end", rep.Notes)
	}
	ds, dd := open(t, root), open(t, dst)
	for _, r := range ds.Recordings() {
		sameEpisodes(t, ds, dd, r, nil)
		s, _ := dd.Session(r)
		if row := s.Row(); row == nil || row.Status != schema.SessionOpen {
			t.Errorf("copied session row %+v, want status open", s.Rows)
		}
	}
}

func TestCopyCancelled(t *testing.T) {
	src := source(t, hive.LayoutEpisode)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dst := filepath.Join(t.TempDir(), "dst")
	_, err := curate.Copy(ctx, src, dst)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "remove it and copy again") {
		t.Fatalf("Copy: %v, want the cancellation and what to do", err)
	}
}

// methodHooks hands events to the recorder through its hook methods only,
// so the recorder stamps them with its own clock.
type methodHooks struct{ events.Hooks }

// TestCopyKeepsClock: a recording whose times are its recorder's clock is
// copied with clock "recorder" again, not as if its events had times.
func TestCopyKeepsClock(t *testing.T) {
	root := filepath.Join(t.TempDir(), "src")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{SessionID: "stamped", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 3, TimeLimit: 8, Seed: 1}
	if _, err := sim.Run(context.Background(), methodHooks{rec}, cfg); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "dst")
	if _, err := curate.Copy(context.Background(), root, dst); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{root, dst} {
		d := open(t, r)
		for _, rc := range d.Recordings() {
			s, err := d.Session(rc)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Row().Clock; got != schema.ClockRecorder {
				t.Errorf("%s: clock %q, want %q", r, got, schema.ClockRecorder)
			}
		}
	}
}

// TestCopyStepsProgress: the steps progress moves row by row as the copy
// goes (by at most one batch of lanes at a time, so it counts the rows the
// recorders get exactly, never jumping a recording at once), never goes
// back, and ends at the steps copied, in a plain copy, a filtered one and
// a split.
func TestCopyStepsProgress(t *testing.T) {
	src := source(t, hive.LayoutSession)
	const widest = 3 // the most lanes of any recording of source
	completed, _ := where.Parse("status = 'completed' AND step_count > 5")
	splits, err := curate.ParseSplits("train=0.5,val=0.5")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opts []curate.Option
	}{
		{"everything", nil},
		{"filtered", []curate.Option{curate.WithWhere(completed), curate.WithLayout(hive.LayoutEpisode)}},
		{"split", []curate.Option{curate.WithSplits(splits), curate.WithSeed(3)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var progress [][2]int64
			var recordings []int
			opts := append(tc.opts,
				curate.WithStepsProgress(func(done, total int64) { progress = append(progress, [2]int64{done, total}) }),
				curate.WithProgress(func(done, _ int) { recordings = append(recordings, len(progress)) }))
			rep, err := curate.Copy(context.Background(), src, filepath.Join(t.TempDir(), "dst"), opts...)
			if err != nil {
				t.Fatal(err)
			}
			var steps, recs int64
			for _, tg := range rep.Targets {
				steps += tg.Steps
				recs += tg.Recordings
			}
			if len(progress) == 0 || progress[len(progress)-1] != [2]int64{steps, steps} {
				t.Fatalf("steps progress ends at %v, want [%d %d]", progress[len(progress)-1:], steps, steps)
			}
			prev := int64(0)
			for i, p := range progress {
				if p[1] != steps {
					t.Fatalf("call %d: total %d, want %d", i, p[1], steps)
				}
				if p[0] < prev {
					t.Fatalf("call %d: progress went back from %d to %d", i, prev, p[0])
				}
				if p[0]-prev > widest {
					t.Fatalf("call %d: progress jumped from %d to %d rows, more than one batch of %d lanes: not row by row", i, prev, p[0], widest)
				}
				prev = p[0]
			}
			// Far more calls than recordings: the first recording alone
			// reports several times before it ends.
			if len(recordings) == 0 || recordings[0] < 2 || int64(len(progress)) < steps/widest {
				t.Errorf("%d progress calls for %d steps of %d recordings, %v before the first recording ended: want calls row by row",
					len(progress), steps, recs, recordings[:min(1, len(recordings))])
			}
		})
	}
}
