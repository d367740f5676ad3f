package recorder_test

import (
	"context"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/published"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// TestContentChainAcrossSnapshots: a recording's content chain (numbered
// events with content hashes) survives snapshots that remove the log
// before them and a crash: the crashed recording's published files keep
// the chain of exactly the events recorded before the crash, the same as
// a chain computed over those events, and a run without snapshots gives
// the same.
func TestContentChainAcrossSnapshots(t *testing.T) {
	cfgs := []sim.Config{
		{Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 300, TimeLimit: 12, Seed: 5, SessionID: "chain-a"},
		{Env: "all-leaves", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 30, MaxEpisodeSteps: 9, Seed: 6, SessionID: "chain-b"},
	}
	var each [][]events.Event
	for _, cfg := range cfgs {
		each = append(each, simEvents(t, []sim.Config{cfg}))
	}
	evs := interleave(each...)
	cut := len(evs) * 2 / 3
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, snapshots := range []bool{false, true} {
		mem := vfs.NewMem()
		opts := []recorder.Option{fast, recorder.WithFS(mem), recorder.WithSyncPolicy(recorder.SyncEach), recorder.WithMemoryBudget(16 << 20)}
		if snapshots {
			opts = append(opts, recorder.WithSegmentSize(32<<10), recorder.WithReclaimEvery(64))
		}
		rec, err := recorder.Open(memRoot, opts...)
		if err != nil {
			t.Fatal(err)
		}
		seqs := map[hive.Recording]uint64{}
		want := map[hive.Recording]runid.Chain{}
		for i, ev := range evs[:cut] {
			sid, route := ev.Header()
			r := hive.Recording{SessionID: sid, EnvID: route.EnvID}
			at := t0.Add(time.Duration(i) * time.Microsecond)
			msg, err := events.AppendMarshal(nil, ev, at)
			if err != nil {
				t.Fatal(err)
			}
			seqs[r]++
			hash := runid.ContentHash(msg)
			want[r] = want[r].Add(seqs[r], hash)
			run := recorder.Run{Nonce: []byte("0123456789abcdef"), Hash: hash}
			if err := rec.RecordSequencedRun(context.Background(), ev, at, seqs[r], run); err != nil {
				t.Fatal(err)
			}
			if i%150 == 149 {
				if err := rec.SettleSnapshots(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if snapshots && rec.SealedAsOf() == 0 {
			t.Fatalf("no snapshot sealed")
		}
		crashed := mem.Crash()
		t.Cleanup(func() { rec.Close(context.Background()) })
		rep := openClose(t, crashed)
		if snapshots != rep.Snapshot {
			t.Errorf("snapshots %t: recovery from a snapshot %t", snapshots, rep.Snapshot)
		}
		st := store.NewFS(crashed, memRoot)
		for r, c := range want {
			h, err := published.HeldOf(st, r)
			if err != nil {
				t.Fatal(err)
			}
			if h.Chain != c || c.Events != seqs[r] {
				t.Errorf("snapshots %t: %s holds chain %v, want %v (%d events)", snapshots, r, h.Chain, c, seqs[r])
			}
			if string(h.Nonce) != "0123456789abcdef" {
				t.Errorf("snapshots %t: %s holds nonce %q", snapshots, r, h.Nonce)
			}
		}
	}
}
