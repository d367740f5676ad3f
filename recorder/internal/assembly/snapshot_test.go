package assembly

import (
	"bytes"
	"fmt"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"google.golang.org/protobuf/proto"
)

// snapshotScript is a session in the middle of everything a snapshot must
// hold: an open episode with rows and a pending reward, a completed one
// awaiting its terminal observation... (stopped where a snapshot may be
// taken), counted problems, logs with and without a source, telemetry, a
// lane observation not yet consumed and spaces.
func snapshotScript() *script {
	src := "env"
	s := &script{sid: "s/1 ü"}
	s.start().
		add(&events.Log{SessionID: s.sid, Level: events.LogWarn, Message: "hello", Source: &src}).
		add(&events.Log{SessionID: s.sid, Level: events.LogInfo, Message: "no source"}).
		add(&events.TelemetrySnapshot{SessionID: s.sid, Snapshot: events.Snapshot{Horizon: events.HorizonWindow,
			Rows: []events.TelemetryRow{{Op: "step", Component: "env", Metric: "latency", Kind: events.MetricKind(2), Count: 7, Avg: 1.5, P50: 1, P95: 2, P99: 3}}}}).
		episode("ep-000001", 0, false).episode("ep-000002", 1, false).
		obs(0, true, []string{"ep-000001", "ep-000002"}, 0.5, -1).
		act(0, []string{"ep-000001", "ep-000002"}, 1, 0).reward(0, 1, 0.25).
		obs(1, false, []string{"ep-000001", "ep-000002"}, 1.5, 2).
		act(1, []string{"ep-000001", "ep-000002"}, 0, 1).reward(1, 1, 2).
		complete("ep-000002", 1, 2, 2.25, true).
		obs(2, false, []string{"ep-000001", "ep-000002"}, 2.5, 9).
		act(2, []string{"ep-000001", "ep-nope"}, 1, 1).reward(2, 0.5, 0).
		episode("ep-000003", 1, true).
		obs(3, false, []string{"ep-000001", "ep-000003"}, 3.5, 0).
		act(3, []string{"ep-000001", "ep-000003"}, 0, 0)
	return s
}

// normalize keeps what a snapshot carries of a session (not its scratch,
// queue, log positions, compiled layouts or arena offsets), so that two
// sessions compare by what they record.
func normalize(s *session) map[string]any {
	type row struct {
		stepRow
		obs, act                        []byte
		infos, rawObs, rawAct, obsInfos []byte
	}
	eps := map[string]any{}
	for rid, ep := range s.episodes {
		c := *ep
		rows := make([]row, len(ep.rows))
		for i, r := range ep.rows {
			rows[i] = row{stepRow: r, obs: r.obs.bytes(ep.arena), act: r.act.bytes(ep.arena),
				infos: r.infos.bytes(ep.arena), rawObs: r.rawObs.bytes(ep.arena), rawAct: r.rawAct.bytes(ep.arena),
				obsInfos: r.obsInfos.bytes(ep.arena)}
			for _, ref := range []*arenaRef{&rows[i].stepRow.obs, &rows[i].stepRow.act, &rows[i].stepRow.infos,
				&rows[i].stepRow.rawObs, &rows[i].stepRow.rawAct, &rows[i].stepRow.obsInfos} {
				ref.off = 0
			}
		}
		c.rows, c.arena, c.firstPos = nil, nil, 0
		eps[rid] = []any{c, rows}
	}
	lanes := make([]lane, len(s.lanes))
	for i, l := range s.lanes {
		lanes[i] = l
		if !l.hasObs {
			lanes[i].obs = nil
		}
		if !l.hasObs || !l.hasRawObs {
			lanes[i].rawObs, lanes[i].hasRawObs = nil, false
		}
		// obsInfos keeps its last bytes as a buffer once consumed.
		if !l.hasObs || !l.hasObsInfos {
			lanes[i].obsInfos, lanes[i].hasObsInfos = nil, false
		}
		// A cache of the episodes map.
		lanes[i].ep, lanes[i].epRecord = nil, ""
	}
	// A group's pending lanes are meaningful only while a reward is
	// awaited.
	group := func(g *stepGroup) []any {
		if !g.have {
			return nil
		}
		pending := make([]string, len(g.pending))
		for i, ep := range g.pending {
			if ep != nil {
				pending[i] = ep.recordID
			}
		}
		rolled := make([]bool, len(g.pending))
		copy(rolled, g.rolled)
		return []any{pending, rolled}
	}
	pending := group(&s.whole)
	var byLane [][]any
	for i := range s.byLane {
		byLane = append(byLane, group(&s.byLane[i]))
	}
	fields := []any{s.id, s.route, s.envID, s.status, s.reason, s.started, s.startedAt, s.endedAt, s.lastAt,
		s.totalSteps, s.totalEpisodes, s.hasTotals, s.ended, s.finalTelemetry, s.sawFinalTelemetry, s.done,
		s.whole.have, s.obsSpecJSON, s.actSpecJSON, s.episodesRecorded, s.stepsRecorded, s.droppedSteps,
		s.problems, s.logs, s.telemetry, s.writes, s.numEnvs,
		s.v01, s.heldProblems, s.heldSteps, s.surplusSteps}
	return map[string]any{"session": fields, "episodes": eps, "lanes": lanes, "pending": pending, "byLane": byLane}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := snapshotScript()
	for cut := 1; cut <= len(s.evs); cut++ {
		t.Run(fmt.Sprintf("after-%d-%s", cut, s.evs[cut-1].Kind()), func(t *testing.T) {
			a := newCaptured()
			at := time.Unix(1700000000, 0).UTC()
			for i, ev := range s.evs[:cut] {
				a.apply(ev, at.Add(time.Duration(i)*time.Millisecond), uint64(i+1))
			}
			if _, ok := a.snapshotable(); !ok {
				return // an episode awaits finalisation: no snapshot here
			}
			rec, err := a.appendSnapshot(nil, uint64(cut))
			if err != nil {
				t.Fatal(err)
			}
			if logrec.Of(rec) != logrec.TypeSnapshot {
				t.Fatalf("record type %d", rec[0])
			}
			asOf, got, err := parseSnapshot(rec[1:])
			if err != nil {
				t.Fatal(err)
			}
			if asOf != uint64(cut) || len(got) != 1 {
				t.Fatalf("as_of %d with %d sessions, want %d with 1", asOf, len(got), cut)
			}
			want := a.sessions[hive.Recording{SessionID: s.sid}]
			if !reflect.DeepEqual(normalize(got[0]), normalize(want)) {
				t.Errorf("restored session differs:\n got %+v\nwant %+v", normalize(got[0]), normalize(want))
			}
			if got[0].clocks != want.clocks || got[0].clocks == 0 {
				t.Errorf("clocks %d restored, want %d (not 0)", got[0].clocks, want.clocks)
			}
			if !proto.Equal(got[0].obsSpec, want.obsSpec) || !proto.Equal(got[0].actSpec, want.actSpec) {
				t.Errorf("spaces differ")
			}
			if (got[0].obsLayout == nil) != (want.obsLayout == nil) || (got[0].actLayout == nil) != (want.actLayout == nil) {
				t.Errorf("layouts not compiled as the original's")
			}
			// Encoding the restored state gives the same bytes, but for
			// map order: compare the lengths.
			b := newCaptured()
			b.restore(got, uint64(cut)+1)
			again, err := b.appendSnapshot(nil, uint64(cut))
			if err != nil {
				t.Fatal(err)
			}
			if len(again) != len(rec) {
				t.Errorf("re-encoded snapshot has %d bytes, the original %d", len(again), len(rec))
			}
			if cut == len(s.evs) {
				writeSnapshotSeed(t, rec[1:])
			}
		})
	}
}

// writeSnapshotSeed keeps a snapshot body in testdata as the fuzz seed,
// when run with -update-snapshot-seed.
func writeSnapshotSeed(t *testing.T, body []byte) {
	path := filepath.Join("testdata", "snapshot.bin")
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, body) {
		return
	}
	if os.Getenv("RLREC_UPDATE_SNAPSHOT_SEED") == "" {
		if err != nil {
			t.Fatalf("%s: %v (run with RLREC_UPDATE_SNAPSHOT_SEED=1 to write it)", path, err)
		}
		// Map order makes the bytes vary; the seed need not match.
		return
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
}

// FuzzParseSnapshot: the snapshot decoder never panics, and what it
// accepts it encodes again into a record it accepts.
func FuzzParseSnapshot(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("testdata", "snapshot.bin")); err == nil {
		f.Add(seed)
	}
	f.Add([]byte{})
	f.Add([]byte{8, 1, 18, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		asOf, sessions, err := parseSnapshot(b)
		if err != nil {
			return
		}
		a := newCaptured()
		a.restore(sessions, asOf+1)
		if _, ok := a.snapshotable(); !ok {
			return
		}
		rec, err := a.appendSnapshot(nil, asOf)
		if err != nil {
			return // e.g. a completion that does not encode
		}
		if _, again, err := parseSnapshot(rec[1:]); err != nil || len(again) != len(a.sessions) {
			t.Fatalf("re-encoded snapshot does not parse: %v (%d sessions of %d)", err, len(again), len(a.sessions))
		}
	})
}

// TestSnapshotExternalEpisode: an episode that streamed rows to its steps
// file is in a snapshot without its rows, named by the log position of its
// first event, and restore keeps that position for the catch-up.
func TestSnapshotExternalEpisode(t *testing.T) {
	s := snapshotScript()
	a := newCaptured()
	at := time.Unix(1700000000, 0).UTC()
	for i, ev := range s.evs {
		a.apply(ev, at.Add(time.Duration(i)*time.Millisecond), uint64(i+1))
	}
	ep := a.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000001"]
	ep.flushedRows = 1 // as if it had streamed a row
	if a.oldestOpen() != ep.firstPos || ep.firstPos == 0 {
		t.Fatalf("oldestOpen %d, want the first episode's first position %d", a.oldestOpen(), ep.firstPos)
	}
	rec, err := a.appendSnapshot(nil, 99)
	if err != nil {
		t.Fatal(err)
	}
	_, got, err := parseSnapshot(rec[1:])
	if err != nil {
		t.Fatal(err)
	}
	g := got[0].episodes["ep-000001"]
	if g == nil || g.replayFrom != ep.firstPos || len(g.rows) != 0 || g.stepsRecorded != ep.stepsRecorded || g.nextStep != ep.nextStep {
		t.Fatalf("external episode restored as %+v, want no rows, replayFrom %d, %d steps", g, ep.firstPos, ep.stepsRecorded)
	}
	if inline := got[0].episodes["ep-000003"]; inline == nil || len(inline.rows) != len(a.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000003"].rows) || inline.replayFrom != 0 {
		t.Fatalf("inline episode restored as %+v", inline)
	}
	b := newCaptured()
	b.restore(got, 100)
	if b.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000001"].firstPos != ep.firstPos || b.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000003"].firstPos != 100 {
		t.Errorf("restored first positions %d and %d, want %d and 100", b.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000001"].firstPos,
			b.sessions[hive.Recording{SessionID: s.sid}].episodes["ep-000003"].firstPos, ep.firstPos)
	}
}

// TestSnapshotRoundTrip01 restores, after every event where a snapshot
// may be taken, sessions in rlmesh 0.1's order: a lockstep vector whose
// lane 1 ends, rolls and restarts (a roll step pending, a terminal
// observation before the completion), a surplus lane, raw payloads,
// infos and step times in the buffered rows, seeds and trial indices,
// and a lane-served env with two actions outstanding at once (and a log
// on one lane).
func TestSnapshotRoundTrip01(t *testing.T) {
	two := []string{"ep-000001", "ep-000002"}
	scripts := map[string]func() *v01{
		"vector roll": func() *v01 {
			s := newV01("s").start()
			s.started("ep-000001", 0, false, events.Some(int64(7)), events.Some(uint64(0))).started("ep-000002", 1, false, events.Some(int64(8)), events.Some(uint64(1)))
			s.add(&events.ObservationEmitted{SessionID: s.sid, Route: s.route(), EpisodeRecordIDs: two, NumEnvs: 2, IsReset: true,
				ObservationSpace: testObsSpec, Observation: obsSlab(10, 20), RawObservation: obsSlab(10, 29)})
			s.add(&events.ActionReceived{SessionID: s.sid, Route: s.route(), EpisodeRecordIDs: two, Step: 1,
				ActionSpace: testActSpec, Action: actSlab(1, 0), RawAction: actSlab(5, 0)})
			s.stepped(1, []float64{1, 5}, "", "term")
			s.observe(1, false, two, 11, 21)
			s.action(2, two, 0, 1).stepped(2, []float64{1, 99}, "", "roll")
			s.completed("ep-000002", 1, 1, 5, true, events.Some(true))
			s.started("ep-000003", 1, true, none64, noneTrial)
			s.observe(2, false, []string{"ep-000001", "ep-000003"}, 12, 30)
			s.action(3, []string{"ep-000001", "ep-000003"}, 1, 1).stepped(3, []float64{1, 2}, "trunc", "term")
			s.completed("ep-000001", 0, 3, 3, false, noneBool).completed("ep-000003", 1, 1, 2, true, events.Some(false))
			return s.finish()
		},
		"surplus lane": func() *v01 {
			s := newV01("s").start()
			s.started("ep-000001", 0, false, none64, noneTrial)
			s.observe(0, true, two, 1, 2)
			s.action(1, two, 0, 0).stepped(1, []float64{1, 1}, "", "")
			s.observe(1, false, two, 1, 2)
			s.action(2, two, 0, 0).stepped(2, []float64{1, 1}, "term", "")
			s.completed("ep-000001", 0, 2, 2, true, noneBool)
			return s.finish()
		},
		"lane-served": func() *v01 {
			s := newV01("s").start()
			s.on(0).started("ep-000001", 0, false, none64, events.Some(uint64(0)))
			s.on(1).started("ep-000002", 1, false, none64, events.Some(uint64(1)))
			s.on(1).observe(0, true, []string{"ep-000002"}, 20)
			s.on(0).observe(0, true, []string{"ep-000001"}, 10)
			s.on(0).action(1, []string{"ep-000001"}, 0)
			s.on(1).action(1, []string{"ep-000002"}, 1)
			s.on(1).stepped(1, []float64{2}, "")
			s.add(&events.Log{SessionID: s.sid, Route: s.on(1).route(), Level: events.LogInfo, Message: "a lane's log"})
			s.on(1).observe(1, false, []string{"ep-000002"}, 21)
			s.on(1).action(2, []string{"ep-000002"}, 1)
			s.on(0).stepped(1, []float64{1}, "term")
			s.on(0).completed("ep-000001", 0, 1, 1, true, noneBool)
			s.on(1).stepped(2, []float64{3}, "trunc")
			s.on(1).completed("ep-000002", 1, 2, 5, false, noneBool)
			return s.finish()
		},
	}
	for name, build := range scripts {
		s := build()
		taken := 0
		for cut := 1; cut <= len(s.evs); cut++ {
			t.Run(fmt.Sprintf("%s/after-%d-%s", name, cut, s.evs[cut-1].Kind()), func(t *testing.T) {
				a := newCaptured()
				at := time.Unix(1700000000, 0).UTC()
				for i, ev := range s.evs[:cut] {
					a.apply(ev, at.Add(time.Duration(i)*time.Millisecond), uint64(i+1))
				}
				if _, ok := a.snapshotable(); !ok {
					return // an episode awaits finalisation: no snapshot here
				}
				taken++
				rec, err := a.appendSnapshot(nil, uint64(cut))
				if err != nil {
					t.Fatal(err)
				}
				_, got, err := parseSnapshot(rec[1:])
				if err != nil {
					t.Fatal(err)
				}
				want := a.sessions[hive.Recording{SessionID: s.sid, EnvID: "env"}]
				if len(got) != 1 || want == nil {
					t.Fatalf("%d sessions restored; the original found: %v", len(got), want != nil)
				}
				if !reflect.DeepEqual(normalize(got[0]), normalize(want)) {
					t.Errorf("restored session differs:\n got %+v\nwant %+v", normalize(got[0]), normalize(want))
				}
				if cut == len(s.evs) {
					return
				}
				// Going on from the restored state records what going on
				// from the original does.
				b := newCaptured()
				b.restore(got, uint64(cut)+1)
				for i, ev := range s.evs[cut:] {
					a.apply(ev, at.Add(time.Duration(cut+i)*time.Millisecond), uint64(cut+i+1))
					b.apply(ev, at.Add(time.Duration(cut+i)*time.Millisecond), uint64(cut+i+1))
				}
				ca, cb := a.out.(*capture), b.out.(*capture)
				if len(ca.sessions) == 0 || len(cb.sessions) == 0 {
					t.Fatalf("sessions finished: original %d, restored %d", len(ca.sessions), len(cb.sessions))
				}
				sa, sb := ca.sessions[len(ca.sessions)-1], cb.sessions[len(cb.sessions)-1]
				if sa.problemSummary() != sb.problemSummary() || sa.surplusSteps != sb.surplusSteps || sa.droppedSteps != sb.droppedSteps || sa.stepsRecorded != sb.stepsRecorded {
					t.Errorf("restored run: problems %q surplus %d dropped %d steps %d; original %q %d %d %d",
						sb.problemSummary(), sb.surplusSteps, sb.droppedSteps, sb.stepsRecorded, sa.problemSummary(), sa.surplusSteps, sa.droppedSteps, sa.stepsRecorded)
				}
			})
		}
		if taken == 0 {
			t.Errorf("%s: no snapshot taken", name)
		}
	}
}
