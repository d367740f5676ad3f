package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// recordDotted records a session whose observation Dict has the keys
// "pos.x", "50%" and "a.b.c": one episode of two steps.
func recordDotted(t *testing.T) string {
	t.Helper()
	obsSpec := &spacesv1.SpaceSpec{Spec: &spacesv1.SpaceSpec_Dict{Dict: &spacesv1.DictSpec{
		Keys: []string{"pos.x", "50%", "a.b.c"},
		Spaces: []*spacesv1.SpaceSpec{
			{Shape: []int64{2}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32, Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{}}},
			{Dtype: spacesv1.DataType_DATA_TYPE_INT64, Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 3}}},
			{Spec: &spacesv1.SpaceSpec_Text{Text: &spacesv1.TextSpec{MaxLength: 8}}},
		},
	}}}
	actSpec := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}
	le := binary.LittleEndian
	const sid, rid = "dotted", "ep-000001"
	ids, rids := []string{"e1"}, []string{rid}
	obs := func(step int64) events.Event {
		slabs, err := blob.JoinLanes(obsSpec, [][][]byte{{
			le.AppendUint32(le.AppendUint32(nil, math.Float32bits(float32(step))), math.Float32bits(1.5)),
			le.AppendUint64(nil, uint64(step)),
			[]byte("hi"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		return &events.ObservationEmitted{SessionID: sid, EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: step, NumEnvs: 1,
			ObservationSpace: obsSpec, Observation: slabs}
	}
	act := func(step int64) events.Event {
		return &events.ActionReceived{SessionID: sid, EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: step, ActionSpace: actSpec,
			Action: [][]byte{le.AppendUint64(nil, 1)}}
	}
	evs := []events.Event{
		&events.SessionStarted{SessionID: sid, EnvID: "env"},
		&events.EpisodeStarted{SessionID: sid, EpisodeID: "e1", EpisodeRecordID: rid, EpisodeIndex: 1},
		obs(0), act(1), &events.StepCompleted{SessionID: sid, Step: 1, Rewards: []float64{1}},
		obs(1), act(2), &events.StepCompleted{SessionID: sid, Step: 2, Rewards: []float64{1}},
		&events.EpisodeCompleted{SessionID: sid, EpisodeID: "e1", EpisodeRecordID: rid, EpisodeIndex: 1, StepCount: 2, CumulativeReward: 2, Terminated: true},
		obs(2),
		&events.SessionEnded{SessionID: sid, Reason: "completed requested episodes", TotalSteps: 2, TotalEpisodes: 1},
	}
	root := filepath.Join(t.TempDir(), "root")
	rec, err := recorder.Open(root)
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
	return root
}

// TestDottedKeys runs the read commands over a ROOT whose Dict keys hold
// "." and "%": verify finds the typed columns equal to the blobs, replay
// renders the real keys, and inspect lists them.
func TestDottedKeys(t *testing.T) {
	root := recordDotted(t)
	t.Run("verify", func(t *testing.T) {
		if code, out, errOut := runReadCmd(t, "verify", root); code != 0 {
			t.Fatalf("exit %d:\n%s%s", code, out, errOut)
		}
	})
	t.Run("replay jsonl", func(t *testing.T) {
		code, out, errOut := runReadCmd(t, "replay", root, "--session", "dotted")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		n := 0
		for sc.Scan() {
			var line struct {
				Observation map[string]json.RawMessage `json:"observation"`
			}
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %d: %v", n, err)
			}
			var keys []string
			for k := range line.Observation {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if want := []string{"50%", "a.b.c", "pos.x"}; !slices.Equal(keys, want) {
				t.Errorf("line %d: observation keys %q, want %q", n, keys, want)
			}
			if !strings.Contains(sc.Text(), `"observation":{"pos.x":[`) {
				t.Errorf("line %d: keys not in declared order: %s", n, sc.Text())
			}
			n++
		}
		if n != 2 {
			t.Fatalf("%d lines, want 2:\n%s", n, out)
		}
	})
	t.Run("inspect", func(t *testing.T) {
		code, out, errOut := runReadCmd(t, "inspect", root, "--session", "dotted")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		for _, want := range []string{"    pos.x: Box(2) float32\n", "    50%: Discrete(3) int64\n", "    a.b.c: Text\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("inspect json", func(t *testing.T) {
		code, out, errOut := runReadCmd(t, "inspect", root, "--session", "dotted", "--json")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var rep inspectReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Sessions) != 1 || rep.Sessions[0].Spaces == nil {
			t.Fatalf("sessions %+v", rep.Sessions)
		}
		var paths []string
		for _, l := range rep.Sessions[0].Spaces.Observation {
			paths = append(paths, l.Path)
		}
		if want := []string{"pos%2Ex", "50%25", "a%2Eb%2Ec"}; !slices.Equal(paths, want) {
			t.Errorf("observation paths %q, want %q (the typed column suffixes)", paths, want)
		}
	})
}
