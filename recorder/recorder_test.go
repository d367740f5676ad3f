package recorder_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/rlrec/rlrec/internal/parquetout"
	"io"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"github.com/rlrec/rlrec/sim"
)

// This file holds the end-to-end tests of the recorder on the operating
// system's file system and the helpers the recovery, crash and fault tests
// share: a reference tally of what was handed to the recorder, and a reader
// of the tables it wrote.

// ---- reference tally ----

// epTally is what the events acknowledged so far say about one episode.
type epTally struct {
	sid, rid  string
	lane      int32
	auto      bool
	steps     int64 // lane-steps an ActionReceived gave it while open
	rewards   float64
	completed bool
	// flagEnded: (rlmesh 0.1) a StepCompleted's terminated or truncated
	// flag ended it; its lane's next action is its roll step, a step of
	// no episode, before its completion (which 0.1 defers to that step).
	flagEnded bool
	comp      events.EpisodeCompleted
	finalObs  bool // an observation was emitted for it after its end
}

// sessTally is what the acknowledged events say about one session.
type sessTally struct {
	id            string
	started       bool
	ended, failed bool
	totalSteps    int64
	totalEpisodes int64
	episodes      []*epTally
	dropped       int64
	logs          int
	// repeats counts the repeated completions of rlmesh's env server
	// (kept as logs rows, not episodes).
	repeats           int64
	teleRows          int
	finalTele         bool // the session-horizon snapshot was acknowledged
	actions           int  // ActionReceived events
	pending           []*epTally
	havePending       bool
	laneStepsRecorded int64
	emptyRewards      int // StepCompleted events with an empty rewards vector
}

// unfinished is the number of lanes of the last action, if no
// StepCompleted followed it, that named an open episode: each is kept as
// a logs row, not as a step.
func (s *sessTally) unfinished() int {
	if !s.havePending {
		return 0
	}
	n := 0
	for _, ep := range s.pending {
		if ep != nil {
			n++
		}
	}
	return n
}

// tally is a reference model of the recording semantics (the
// recording semantics of internal/assembly) for well-formed input: it counts, per episode, the
// steps and rewards the tables must hold. It reads both rlmesh orders:
// rc.5's autoreset step names a completed episode, 0.1's roll step an
// episode its step flags ended, whose completion follows; neither is a
// step of it.
type tally struct {
	mu       sync.Mutex
	sessions map[string]*sessTally
	eps      map[[2]string]*epTally
	events   int
}

func newTally() *tally {
	return &tally{sessions: make(map[string]*sessTally), eps: make(map[[2]string]*epTally)}
}

func (t *tally) session(id string) *sessTally {
	s := t.sessions[id]
	if s == nil {
		s = &sessTally{id: id}
		t.sessions[id] = s
	}
	return s
}

// add folds one acknowledged event into the tally.
func (t *tally) add(ev events.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events++
	sid, _ := ev.Header()
	s := t.session(sid)
	switch e := ev.(type) {
	case *events.SessionStarted:
		s.started = true
	case *events.SessionEnded:
		s.ended, s.totalSteps, s.totalEpisodes = true, e.TotalSteps, e.TotalEpisodes
	case *events.SessionFailed:
		s.failed = true
	case *events.Log, *events.EnvConnected, *events.ModelConnected:
		s.logs++ // connections are kept as logs rows
	case *events.TelemetrySnapshot:
		s.teleRows += len(e.Snapshot.Rows)
		if e.Snapshot.Horizon == events.HorizonSession {
			s.finalTele = true
		}
	case *events.EpisodeStarted:
		ep := &epTally{sid: sid, rid: e.EpisodeRecordID, lane: e.EnvIndex, auto: e.StartedFromAutoReset}
		t.eps[[2]string{sid, ep.rid}] = ep
		s.episodes = append(s.episodes, ep)
	case *events.ActionReceived:
		s.actions++
		// An action that no StepCompleted followed is no step: a logs
		// row per lane it named an open episode on.
		s.logs += s.unfinished()
		s.pending = s.pending[:0]
		s.havePending = true
		for _, rid := range e.EpisodeRecordIDs {
			ep := t.eps[[2]string{sid, rid}]
			if ep == nil || ep.completed || ep.flagEnded {
				s.dropped++
				s.pending = append(s.pending, nil)
				continue
			}
			s.pending = append(s.pending, ep)
		}
	case *events.StepCompleted:
		if len(e.Rewards) == 0 {
			s.emptyRewards++ // all zero
		}
		if s.havePending {
			// The step happened: a row for each lane with an episode.
			for i, ep := range s.pending {
				if ep == nil {
					continue
				}
				ep.steps++
				s.laneStepsRecorded++
				if i < len(e.Rewards) {
					ep.rewards += e.Rewards[i]
				}
				if i < len(e.Terminated) && i < len(e.Truncated) && (e.Terminated[i] || e.Truncated[i]) {
					ep.flagEnded = true
				}
			}
		}
		s.havePending = false
	case *events.EpisodeCompleted:
		if ep := t.eps[[2]string{sid, e.EpisodeRecordID}]; ep != nil && ep.completed && schema.RepeatedCompletion(e) {
			// rlmesh's env server reporting the capped episode again:
			// a logs row.
			s.logs++
			s.repeats++
		} else if ep != nil {
			ep.completed = true
			ep.comp = *e
			ep.comp.FinalInfo = nil
		}
	case *events.ObservationEmitted:
		for _, rid := range e.EpisodeRecordIDs {
			if ep := t.eps[[2]string{sid, rid}]; ep != nil && (ep.completed || ep.flagEnded) {
				ep.finalObs = true
			}
		}
	}
}

// countingHooks hands every event to the recorder and tallies those whose
// hook call returned nil (acknowledged).
type countingHooks struct {
	inner events.Hooks
	t     *tally
	mu    sync.Mutex
	errs  []error
}

func (c *countingHooks) do(ctx context.Context, ev events.Event) error {
	err := events.Dispatch(ctx, c.inner, ev)
	if err == nil {
		c.t.add(ev)
	} else {
		c.mu.Lock()
		c.errs = append(c.errs, err)
		c.mu.Unlock()
	}
	return err
}

func (c *countingHooks) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnLog(ctx context.Context, ev *events.Log) error { return c.do(ctx, ev) }
func (c *countingHooks) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return c.do(ctx, ev)
}
func (c *countingHooks) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	return c.do(ctx, ev)
}

func (c *countingHooks) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return c.do(ctx, ev)
}

// collector keeps a deep copy of every event it is handed, in order.
type collector struct {
	events.NoopHooks
	mu  sync.Mutex
	evs []events.Event
}

func (c *collector) keep(ev events.Event) error {
	b, err := events.AppendMarshal(nil, ev, time.Unix(0, 0))
	if err != nil {
		return err
	}
	cp, _, err := events.Unmarshal(b)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.evs = append(c.evs, cp)
	c.mu.Unlock()
	return nil
}

func (c *collector) OnSessionStarted(_ context.Context, ev *events.SessionStarted) error {
	return c.keep(ev)
}
func (c *collector) OnSessionEnded(_ context.Context, ev *events.SessionEnded) error {
	return c.keep(ev)
}
func (c *collector) OnSessionFailed(_ context.Context, ev *events.SessionFailed) error {
	return c.keep(ev)
}
func (c *collector) OnLog(_ context.Context, ev *events.Log) error { return c.keep(ev) }
func (c *collector) OnEpisodeStarted(_ context.Context, ev *events.EpisodeStarted) error {
	return c.keep(ev)
}
func (c *collector) OnEpisodeCompleted(_ context.Context, ev *events.EpisodeCompleted) error {
	return c.keep(ev)
}
func (c *collector) OnActionReceived(_ context.Context, ev *events.ActionReceived) error {
	return c.keep(ev)
}
func (c *collector) OnStepCompleted(_ context.Context, ev *events.StepCompleted) error {
	return c.keep(ev)
}
func (c *collector) OnObservationEmitted(_ context.Context, ev *events.ObservationEmitted) error {
	return c.keep(ev)
}
func (c *collector) OnTelemetrySnapshot(_ context.Context, ev *events.TelemetrySnapshot) error {
	return c.keep(ev)
}

func (c *collector) OnRelayAdvisory(_ context.Context, ev *events.RelayAdvisory) error {
	return c.keep(ev)
}

// simEvents runs simulated sessions and returns their events in the order
// they were delivered.
func simEvents(t testing.TB, cfgs []sim.Config) []events.Event {
	t.Helper()
	c := &collector{}
	if _, err := sim.RunSessions(context.Background(), c, cfgs); err != nil {
		t.Fatalf("simulate: %v", err)
	}
	return c.evs
}

// ---- reading the tables back ----

// stepCheck is the part of a steps row the tests look at.
// packedStepCheck is a row of a packed steps file (layout session).
type packedStepCheck struct {
	stepCheck
	EpisodeRecordID string `parquet:"episode_record_id"`
}

type stepCheck struct {
	EpisodeID  string  `parquet:"episode_id"`
	Step       int64   `parquet:"step"`
	SessionStp int64   `parquet:"session_step"`
	Reward     float64 `parquet:"reward"`
	IsFirst    bool    `parquet:"is_first"`
	IsLast     bool    `parquet:"is_last"`
	Terminated bool    `parquet:"terminated"`
	Truncated  bool    `parquet:"truncated"`
	ActionBlob []byte  `parquet:"action_blob"`
}

// tables is what a ROOT holds, read back with parquet-go.
type tables struct {
	// files lists every path under ROOT outside _rlrec, relative to ROOT.
	files     []string
	steps     map[[2]string][]stepCheck
	episodes  map[[2]string][]schema.EpisodeRow
	sessions  map[string][]schema.SessionRow
	logs      map[string][]schema.LogRow
	telemetry map[string][]schema.TelemetryRow
	// parts lists the part numbers per table and session.
	parts map[[2]string][]int
}

// walkFiles lists the regular files under dir, relative to base.
func walkFiles(t testing.TB, fsys vfs.FS, base, dir string) []string {
	t.Helper()
	ents, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("list %s: %v", dir, err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		if e.IsDir() {
			out = append(out, walkFiles(t, fsys, base, p)...)
			continue
		}
		rel, _ := filepath.Rel(base, p)
		out = append(out, rel)
	}
	return out
}

func readRows[T any](t testing.TB, fsys vfs.FS, path string) []T {
	t.Helper()
	f, err := fsys.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatalf("stat %s: %v", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatalf("%s is not a complete Parquet file: %v", path, err)
	}
	if err := parquetout.CheckFooter(f, st.Size()); err != nil {
		t.Errorf("%s: %v", path, err)
	}
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	rows := make([]T, pf.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read %s: %v", path, err)
	}
	if int64(n) != pf.NumRows() {
		t.Fatalf("read %s: %d of %d rows", path, n, pf.NumRows())
	}
	return rows
}

// partValue returns the unescaped value of a key=value path segment.
func partValue(t testing.TB, seg, key string) string {
	t.Helper()
	v, ok := strings.CutPrefix(seg, key+"=")
	if !ok {
		t.Fatalf("path segment %q is not %s=...", seg, key)
	}
	u, err := hive.Unescape(v)
	if err != nil {
		t.Fatalf("path segment %q: %v", seg, err)
	}
	return u
}

// readTables reads every table under root. It fails the test on a file
// under a final name that is not a complete Parquet file, and on a file
// that is neither a part file nor a temp file.
func readTables(t testing.TB, fsys vfs.FS, root string) *tables {
	t.Helper()
	tb := &tables{
		steps:     make(map[[2]string][]stepCheck),
		episodes:  make(map[[2]string][]schema.EpisodeRow),
		sessions:  make(map[string][]schema.SessionRow),
		logs:      make(map[string][]schema.LogRow),
		telemetry: make(map[string][]schema.TelemetryRow),
		parts:     make(map[[2]string][]int),
	}
	ents, err := fsys.ReadDir(root)
	if err != nil {
		t.Fatalf("list %s: %v", root, err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "_") {
			continue
		}
		tb.files = append(tb.files, walkFiles(t, fsys, root, filepath.Join(root, e.Name()))...)
	}
	sort.Strings(tb.files)
	for _, rel := range tb.files {
		segs := strings.Split(rel, string(filepath.Separator))
		n, temp, ok := hive.ParsePartName(segs[len(segs)-1])
		if !ok {
			t.Fatalf("unexpected file %s under ROOT", rel)
		}
		if temp {
			continue
		}
		path := filepath.Join(root, rel)
		table := segs[0]
		// These tests give every recording its own session id, so the
		// tables are keyed by session id; the env id partition is checked.
		if len(segs) < 4 {
			t.Fatalf("unexpected file %s", rel)
		}
		partValue(t, segs[2], schema.ColEnvID)
		switch {
		case table == schema.TableSteps && len(segs) == 5:
			key := [2]string{partValue(t, segs[1], schema.ColSessionID), partValue(t, segs[3], schema.ColEpisodeRecordID)}
			if n != 0 {
				t.Errorf("%s: an episode's steps file is part 0", rel)
			}
			tb.steps[key] = append(tb.steps[key], readRows[stepCheck](t, fsys, path)...)
		case table == schema.TableSteps && len(segs) == 4:
			// A packed steps file (layout session): its rows name their
			// episodes.
			sid := partValue(t, segs[1], schema.ColSessionID)
			for _, row := range readRows[packedStepCheck](t, fsys, path) {
				key := [2]string{sid, row.EpisodeRecordID}
				tb.steps[key] = append(tb.steps[key], row.stepCheck)
			}
		case table == schema.TableEpisodes && len(segs) == 4:
			sid := partValue(t, segs[1], schema.ColSessionID)
			for _, row := range readRows[schema.EpisodeRow](t, fsys, path) {
				key := [2]string{sid, row.EpisodeRecordID}
				tb.episodes[key] = append(tb.episodes[key], row)
			}
		case len(segs) == 4:
			sid := partValue(t, segs[1], schema.ColSessionID)
			tb.parts[[2]string{table, sid}] = append(tb.parts[[2]string{table, sid}], n)
			switch table {
			case schema.TableSessions:
				tb.sessions[sid] = append(tb.sessions[sid], readRows[schema.SessionRow](t, fsys, path)...)
			case schema.TableLogs:
				tb.logs[sid] = append(tb.logs[sid], readRows[schema.LogRow](t, fsys, path)...)
			case schema.TableTelemetry:
				tb.telemetry[sid] = append(tb.telemetry[sid], readRows[schema.TelemetryRow](t, fsys, path)...)
			default:
				t.Fatalf("unexpected file %s", rel)
			}
		default:
			t.Fatalf("unexpected file %s", rel)
		}
	}
	return tb
}

// tempFiles lists the temp part files under root.
func (tb *tables) tempFiles() []string {
	var out []string
	for _, rel := range tb.files {
		if _, temp, _ := hive.ParsePartName(filepath.Base(rel)); temp {
			out = append(out, rel)
		}
	}
	return out
}

// expect says how strictly tables must match a tally.
type expect struct {
	// atLeast allows more steps than the tally (events that reached the
	// log but whose acknowledgement was lost in a crash); otherwise counts
	// match exactly.
	atLeast bool
	// crashed: sessions that did not end are "crashed" (else "open").
	crashed bool
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(a)+math.Abs(b)) }

// checkTables asserts that the tables hold everything ta says was
// acknowledged.
func checkTables(t testing.TB, tb *tables, ta *tally, want expect) {
	t.Helper()
	if tmp := tb.tempFiles(); len(tmp) > 0 {
		t.Errorf("temp files left after a clean open/close: %v", tmp)
	}
	for sid, s := range ta.sessions {
		if !s.started && len(s.episodes) == 0 && s.logs == 0 && s.teleRows == 0 && !s.ended && !s.failed {
			continue
		}
		var steps, completed int64
		for _, ep := range s.episodes {
			key := [2]string{sid, ep.rid}
			erows := tb.episodes[key]
			if len(erows) != 1 {
				t.Errorf("session %s episode %s: %d episodes rows, want 1", sid, ep.rid, len(erows))
				continue
			}
			er := erows[0]
			rows := tb.steps[key]
			if ep.steps > 0 && len(rows) == 0 {
				t.Errorf("session %s episode %s: no steps file for %d acknowledged steps", sid, ep.rid, ep.steps)
			}
			n := int64(len(rows))
			if n != er.StepsRecorded {
				t.Errorf("session %s episode %s: %d steps rows, steps_recorded %d", sid, ep.rid, n, er.StepsRecorded)
			}
			if (want.atLeast && n < ep.steps) || (!want.atLeast && n != ep.steps) {
				t.Errorf("session %s episode %s: %d steps rows, %d acknowledged", sid, ep.rid, n, ep.steps)
			}
			steps += n
			var sum float64
			for i, r := range rows {
				sum += r.Reward
				if r.Step != int64(i) || r.IsFirst != (i == 0) {
					t.Errorf("session %s episode %s row %d: step %d is_first %v", sid, ep.rid, i, r.Step, r.IsFirst)
				}
				if r.IsLast && i != len(rows)-1 {
					t.Errorf("session %s episode %s row %d: is_last before the last row", sid, ep.rid, i)
				}
				if len(r.ActionBlob) == 0 {
					t.Errorf("session %s episode %s row %d: empty action_blob", sid, ep.rid, i)
				}
			}
			if !near(sum, er.RewardSum) {
				t.Errorf("session %s episode %s: rewards of the rows sum to %v, reward_sum %v", sid, ep.rid, sum, er.RewardSum)
			}
			if !want.atLeast && !near(ep.rewards, er.RewardSum) {
				t.Errorf("session %s episode %s: reward_sum %v, acknowledged rewards %v", sid, ep.rid, er.RewardSum, ep.rewards)
			}
			if er.EnvIndex != ep.lane || er.StartedFromAutoReset != ep.auto {
				t.Errorf("session %s episode %s: env_index %d auto %v, want %d %v", sid, ep.rid, er.EnvIndex, er.StartedFromAutoReset, ep.lane, ep.auto)
			}
			if !ep.completed {
				if !want.atLeast && er.Status != schema.EpisodeIncomplete {
					t.Errorf("session %s episode %s: status %s, want incomplete", sid, ep.rid, er.Status)
				}
				// An incomplete episode's last row has is_last only if
				// (rlmesh 0.1) the step's flags ended it, its completion
				// deferred to a roll step that never came; and then it
				// must have. With atLeast, recovery may also hold a
				// flagging StepCompleted whose hook failed (its record
				// was logged, its sync was not acknowledged), which the
				// tally of acknowledged events does not see.
				if er.Status == schema.EpisodeIncomplete && n > 0 && rows[n-1].IsLast != ep.flagEnded && !(want.atLeast && rows[n-1].IsLast) {
					t.Errorf("session %s episode %s: incomplete episode's last row has is_last %v, its step flags ended it %v", sid, ep.rid, rows[n-1].IsLast, ep.flagEnded)
				}
				continue
			}
			completed++
			c := ep.comp
			if er.Status != schema.EpisodeCompleted {
				t.Errorf("session %s episode %s: status %s, want completed", sid, ep.rid, er.Status)
				continue
			}
			// The simulator's own count: every step of a completed
			// episode was recorded.
			if n != c.StepCount || er.StepCount == nil || *er.StepCount != c.StepCount {
				t.Errorf("session %s episode %s: %d rows, step_count %v, runtime counted %d", sid, ep.rid, n, er.StepCount, c.StepCount)
			}
			if !near(er.RewardSum, c.CumulativeReward) || er.CumulativeReward == nil || !near(*er.CumulativeReward, c.CumulativeReward) {
				t.Errorf("session %s episode %s: reward_sum %v cumulative_reward %v, runtime %v", sid, ep.rid, er.RewardSum, er.CumulativeReward, c.CumulativeReward)
			}
			if er.Terminated != c.Terminated || er.Truncated != c.Truncated {
				t.Errorf("session %s episode %s: terminated/truncated %v/%v, want %v/%v", sid, ep.rid, er.Terminated, er.Truncated, c.Terminated, c.Truncated)
			}
			if n > 0 {
				last := rows[n-1]
				if !last.IsLast || last.Terminated != c.Terminated || last.Truncated != c.Truncated {
					t.Errorf("session %s episode %s: last row %+v, want is_last terminated=%v truncated=%v", sid, ep.rid, last, c.Terminated, c.Truncated)
				}
			}
			if ep.finalObs != (er.FinalObservationBlob != nil) && !want.atLeast {
				t.Errorf("session %s episode %s: terminal observation emitted %v, final_observation_blob present %v", sid, ep.rid, ep.finalObs, er.FinalObservationBlob != nil)
			}
		}
		// No episode the tally does not know of.
		for key := range tb.episodes {
			if key[0] == sid {
				if _, ok := ta.eps[key]; !ok && !want.atLeast {
					t.Errorf("session %s: unexpected episode %s in the tables", sid, key[1])
				}
			}
		}
		srows := tb.sessions[sid]
		if len(srows) != 1 {
			t.Errorf("session %s: %d sessions rows, want 1", sid, len(srows))
			continue
		}
		sr := srows[0]
		wantStatus := schema.SessionOpen
		switch {
		case s.ended:
			wantStatus = schema.SessionEnded
		case s.failed:
			wantStatus = schema.SessionFailed
		case want.crashed:
			wantStatus = schema.SessionCrashed
		}
		if sr.Status != wantStatus && !(want.atLeast && sr.Status != schema.SessionOpen && wantStatus == schema.SessionCrashed) {
			t.Errorf("session %s: status %s, want %s", sid, sr.Status, wantStatus)
		}
		if sr.StepsRecorded != steps {
			t.Errorf("session %s: steps_recorded %d, steps rows %d", sid, sr.StepsRecorded, steps)
		}
		if want.atLeast {
			if sr.EpisodesRecorded < int64(len(s.episodes)) || sr.DroppedSteps < s.dropped {
				t.Errorf("session %s: episodes_recorded %d dropped %d, acknowledged %d %d", sid, sr.EpisodesRecorded, sr.DroppedSteps, len(s.episodes), s.dropped)
			}
		} else if sr.EpisodesRecorded != int64(len(s.episodes)) || sr.DroppedSteps != s.dropped || sr.StepsRecorded != s.laneStepsRecorded {
			t.Errorf("session %s: episodes_recorded %d dropped %d steps %d, want %d %d %d", sid, sr.EpisodesRecorded, sr.DroppedSteps, sr.StepsRecorded, len(s.episodes), s.dropped, s.laneStepsRecorded)
		}
		// The failing (or crashing) step's action, which never got its
		// StepCompleted, is no problem: rlmesh sends it before the step.
		if sr.Problems != 0 || sr.ProblemSummary != nil {
			t.Errorf("session %s: problems %d %v in well-formed input", sid, sr.Problems, sr.ProblemSummary)
		}
		if s.ended {
			if sr.TotalSteps == nil || *sr.TotalSteps != s.totalSteps || sr.TotalEpisodes == nil || *sr.TotalEpisodes != s.totalEpisodes {
				t.Errorf("session %s: totals %v %v, want %d %d", sid, sr.TotalSteps, sr.TotalEpisodes, s.totalSteps, s.totalEpisodes)
			}
			if completed+s.repeats != s.totalEpisodes {
				t.Errorf("session %s: %d completed episodes, runtime reported %d", sid, completed, s.totalEpisodes)
			}
			if sr.EndedAt == nil {
				t.Errorf("session %s: ended without ended_at", sid)
			}
		}
		// An unfinished action is a logs row, unless (atLeast) its
		// StepCompleted reached the log without being acknowledged.
		if got, logs := len(tb.logs[sid]), s.logs+s.unfinished(); (want.atLeast && got < s.logs) || (!want.atLeast && got != logs) {
			t.Errorf("session %s: %d log rows, %d acknowledged", sid, got, logs)
		}
		if got := len(tb.telemetry[sid]); (want.atLeast && got < s.teleRows) || (!want.atLeast && got != s.teleRows) {
			t.Errorf("session %s: %d telemetry rows, %d acknowledged", sid, got, s.teleRows)
		}
	}
}

// ---- tests ----

func TestEndToEndOS(t *testing.T) {
	type session struct {
		env   string
		lanes int
		auto  sim.Autoreset
		fail  int64
		empty bool // all-zero rewards sent as an empty vector
	}
	cases := []struct {
		name     string
		sessions []session
		opts     []recorder.Option
	}{
		{"cartpole", []session{
			{env: "cartpole", lanes: 3, auto: sim.AutoresetNextStep},
			{env: "cartpole", lanes: 1, auto: sim.AutoresetDisabled},
		}, nil},
		{"pick-place", []session{
			{env: "pick-place", lanes: 1, auto: sim.AutoresetNextStep},
			{env: "pick-place", lanes: 1, auto: sim.AutoresetDisabled},
		}, nil},
		{"all-leaves", []session{
			{env: "all-leaves", lanes: 3, auto: sim.AutoresetNextStep},
			{env: "all-leaves", lanes: 1, auto: sim.AutoresetDisabled},
		}, []recorder.Option{recorder.WithCompression(recorder.CompressionSnappy)}},
		{"failed sessions and sync each", []session{
			{env: "cartpole", lanes: 2, auto: sim.AutoresetNextStep, fail: 30},
			{env: "all-leaves", lanes: 1, auto: sim.AutoresetDisabled, fail: 7},
			{env: "cartpole", lanes: 1, auto: sim.AutoresetDisabled},
		}, []recorder.Option{recorder.WithSyncPolicy(recorder.SyncEach)}},
		{"empty reward vectors", []session{
			{env: "pick-place", lanes: 2, auto: sim.AutoresetNextStep, empty: true},
			{env: "pick-place", lanes: 1, auto: sim.AutoresetDisabled, empty: true},
		}, nil},
		{"small row groups and tiny budget", []session{
			{env: "cartpole", lanes: 4, auto: sim.AutoresetNextStep},
			{env: "all-leaves", lanes: 2, auto: sim.AutoresetNextStep},
		}, []recorder.Option{recorder.WithRowGroupRows(7), recorder.WithMemoryBudget(16 << 20), recorder.WithWriters(1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			rec, err := recorder.Open(root, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ta := newTally()
			hooks := &countingHooks{inner: rec, t: ta}
			var cfgs []sim.Config
			for i, s := range tc.sessions {
				cfg := sim.Config{Env: s.env, NumEnvs: s.lanes, Autoreset: s.auto, MaxEpisodes: 4,
					TimeLimit: 25, Seed: uint64(i + 1), FailAfterSteps: s.fail, TelemetryInterval: 2 * time.Millisecond,
					EmptyRewards: s.empty}
				if s.auto == sim.AutoresetDisabled {
					cfg.TimeLimit, cfg.MaxEpisodeSteps = 0, 25 // the runtime's cap
				}
				cfgs = append(cfgs, cfg)
			}
			sums, err := sim.RunSessions(context.Background(), hooks, cfgs)
			if err != nil {
				t.Fatalf("simulate: %v", err)
			}
			if err := rec.Close(context.Background()); err != nil {
				t.Fatalf("close: %v", err)
			}
			tb := readTables(t, vfs.OS(), root)
			checkTables(t, tb, ta, expect{})
			for _, sum := range sums {
				s := ta.sessions[sum.SessionID]
				if s == nil {
					t.Fatalf("session %s not tallied", sum.SessionID)
				}
				sr := tb.sessions[sum.SessionID]
				if len(sr) != 1 {
					t.Fatalf("session %s: %d rows", sum.SessionID, len(sr))
				}
				want := schema.SessionEnded
				if sum.Failed {
					want = schema.SessionFailed
				}
				if sr[0].Status != want {
					t.Errorf("session %s: status %s, want %s", sum.SessionID, sr[0].Status, want)
				}
				if got := sr[0].StepsRecorded + sr[0].DroppedSteps; !sum.Failed && got != sum.LaneSteps {
					t.Errorf("session %s: steps %d + dropped %d != %d lane steps", sum.SessionID, sr[0].StepsRecorded, sr[0].DroppedSteps, sum.LaneSteps)
				}
				if len(tb.logs[sum.SessionID]) == 0 || len(tb.telemetry[sum.SessionID]) == 0 {
					t.Errorf("session %s: no logs or telemetry rows", sum.SessionID)
				}
				var finals int
				for _, ep := range s.episodes {
					if er := tb.episodes[[2]string{ep.sid, ep.rid}]; len(er) == 1 && er[0].FinalObservationBlob != nil {
						finals++
					}
				}
				if tc.sessions[indexOf(sums, sum.SessionID)].empty && s.emptyRewards == 0 {
					t.Errorf("session %s: no empty rewards vector", sum.SessionID)
				}
				auto := tc.sessions[indexOf(sums, sum.SessionID)].auto
				switch {
				case auto == sim.AutoresetDisabled && finals != 0:
					t.Errorf("session %s: %d final observations under disabled autoreset", sum.SessionID, finals)
				case auto == sim.AutoresetNextStep && !sum.Failed && finals == 0:
					t.Errorf("session %s: no final observations under next-step autoreset", sum.SessionID)
				}
			}
			assertEmptyLog(t, vfs.OS(), root)
		})
	}
}

func indexOf(sums []sim.Summary, id string) int {
	for i, s := range sums {
		if s.SessionID == id {
			return i
		}
	}
	return -1
}

// assertEmptyLog checks that the recorder's log holds no segment.
func assertEmptyLog(t testing.TB, fsys vfs.FS, root string) {
	t.Helper()
	ents, err := fsys.ReadDir(filepath.Join(root, "_rlrec", "log"))
	if err != nil {
		t.Fatalf("list the log: %v", err)
	}
	if len(ents) != 0 {
		names := make([]string, len(ents))
		for i, e := range ents {
			names[i] = e.Name()
		}
		t.Errorf("log not empty after Close: %v", names)
	}
}

func TestLockedRoot(t *testing.T) {
	cases := []struct {
		name string
		fsys func(t *testing.T) (vfs.FS, string)
	}{
		{"os", func(t *testing.T) (vfs.FS, string) { return vfs.OS(), filepath.Join(t.TempDir(), "root") }},
		{"mem", func(t *testing.T) (vfs.FS, string) { return vfs.NewMem(), "/root" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := tc.fsys(t)
			rec, err := recorder.Open(root, recorder.WithFS(fsys))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := recorder.Open(root, recorder.WithFS(fsys)); !errors.Is(err, recorder.ErrLocked) {
				t.Fatalf("second Open: %v, want ErrLocked", err)
			}
			// The first recorder is unaffected.
			if err := rec.OnSessionStarted(context.Background(), &events.SessionStarted{SessionID: "s"}); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := rec.Close(context.Background()); !errors.Is(err, recorder.ErrClosed) {
				t.Fatalf("second Close: %v, want ErrClosed", err)
			}
			if err := rec.OnLog(context.Background(), &events.Log{SessionID: "s", Level: events.LogInfo}); !errors.Is(err, recorder.ErrClosed) {
				t.Fatalf("hook after Close: %v, want ErrClosed", err)
			}
			rec2, err := recorder.Open(root, recorder.WithFS(fsys))
			if err != nil {
				t.Fatalf("Open after Close: %v", err)
			}
			if err := rec2.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sessionOf returns the single sessions row of sid.
func sessionOf(t testing.TB, tb *tables, sid string) schema.SessionRow {
	t.Helper()
	rows := tb.sessions[sid]
	if len(rows) != 1 {
		t.Fatalf("session %q: %d sessions rows, want 1 (sessions: %v)", sid, len(rows), keys(tb.sessions))
	}
	return rows[0]
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

var _ = fmt.Sprintf

// badScript builds the events of one session around one good episode
// (ep-000001, lane 0, two steps) into which bad input is mixed.
func badScript(sid string, bad func(sid string) []events.Event) []events.Event {
	obsSpec := &spacesv1.SpaceSpec{Shape: []int64{1}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	actSpec := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}
	one := []string{"ep-000001"}
	obs := func(step int64) events.Event {
		return &events.ObservationEmitted{SessionID: sid, EpisodeRecordIDs: one, Step: step, NumEnvs: 1,
			ObservationSpace: obsSpec, Observation: [][]byte{{0, 0, 0x80, 0x3f}}}
	}
	act := func(step int64) events.Event {
		return &events.ActionReceived{SessionID: sid, EpisodeRecordIDs: one, Step: step, ActionSpace: actSpec,
			Action: [][]byte{{1, 0, 0, 0, 0, 0, 0, 0}}}
	}
	evs := []events.Event{
		&events.SessionStarted{SessionID: sid, EnvID: "env"},
		&events.EpisodeStarted{SessionID: sid, EpisodeID: "e1", EpisodeRecordID: "ep-000001", EpisodeIndex: 1},
		obs(0), act(1), &events.StepCompleted{SessionID: sid, Step: 1, Rewards: []float64{1}}, obs(1),
	}
	evs = append(evs, bad(sid)...)
	return append(evs, act(2), &events.StepCompleted{SessionID: sid, Step: 2, Rewards: []float64{2}},
		&events.EpisodeCompleted{SessionID: sid, EpisodeRecordID: "ep-000001", StepCount: 2, CumulativeReward: 3, Terminated: true},
		obs(2),
		&events.SessionEnded{SessionID: sid, Reason: "done", TotalSteps: 2, TotalEpisodes: 1},
		&events.TelemetrySnapshot{SessionID: sid, Snapshot: events.Snapshot{Horizon: events.HorizonSession}})
}

func TestBadInputEndToEnd(t *testing.T) {
	actSpec := &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
		Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}}
	none := func(string) []events.Event { return nil }
	cases := []struct {
		name    string
		sid     string
		bad     func(sid string) []events.Event
		problem string // a kind in problem_summary; "" for none
	}{
		{"session id with dot-dot", "../../x", none, ""},
		{"absolute session id", "/etc", none, ""},
		{"session id with slash", "a/b", none, ""},
		{"session id with NUL", "a\x00b", none, ""},
		{"session id with percent and equals", "%2e%2e=..", none, ""},
		{"episode record id that escapes", "s-rid", func(sid string) []events.Event {
			return []events.Event{&events.EpisodeStarted{SessionID: sid, EpisodeRecordID: "../../../../evil", EpisodeIndex: 9, EnvIndex: 0}}
		}, ""},
		{"duplicated completion", "s-dup", func(sid string) []events.Event {
			c := &events.EpisodeCompleted{SessionID: sid, EpisodeRecordID: "ep-000009"}
			return []events.Event{c, c}
		}, "unknown_episode"},
		{"reward before any action", "s-order", func(sid string) []events.Event {
			return []events.Event{&events.StepCompleted{SessionID: sid, Step: 5, Rewards: []float64{1}}}
		}, "step_completed_without_action"},
		{"second SessionStarted", "s-restart", func(sid string) []events.Event {
			return []events.Event{&events.SessionStarted{SessionID: sid}}
		}, "duplicate_session_start"},
		{"wrong lane count", "s-lanes", func(sid string) []events.Event {
			return []events.Event{&events.ObservationEmitted{SessionID: sid, EpisodeRecordIDs: []string{"ep-000001"}, NumEnvs: 3,
				Observation: [][]byte{{1}}}}
		}, "lane_count_mismatch"},
		{"garbage slab", "s-garbage", func(sid string) []events.Event {
			return []events.Event{&events.ActionReceived{SessionID: sid, EpisodeRecordIDs: []string{"ep-000001"}, Step: 9,
				ActionSpace: actSpec, Action: [][]byte{{1, 2, 3}}}}
		}, "bad_slab"},
		{"oversized slab", "s-big", func(sid string) []events.Event {
			return []events.Event{&events.ActionReceived{SessionID: sid, EpisodeRecordIDs: []string{"ep-000001"}, Step: 9,
				ActionSpace: actSpec, Action: [][]byte{make([]byte, 8<<20)}}}
		}, "bad_slab"},
		{"missing spec", "s-nospec", func(sid string) []events.Event {
			return []events.Event{&events.ActionReceived{SessionID: sid, EpisodeRecordIDs: []string{"ep-000001"}, Step: 9,
				Action: [][]byte{make([]byte, 8)}}}
		}, "missing_space_spec"},
	}
	parent := t.TempDir()
	root := filepath.Join(parent, "deep", "root")
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		for i, ev := range badScript(tc.sid, tc.bad) {
			if err := events.Dispatch(context.Background(), rec, ev); err != nil {
				// A clean error is allowed for an event that cannot be
				// encoded; the recorder must not have failed.
				if errors.Is(err, recorder.ErrFailed) {
					t.Fatalf("%s: event %d (%s) failed the recorder: %v", tc.name, i, ev.Kind(), err)
				}
			}
		}
	}
	if err := rec.Close(context.Background()); err != nil {
		t.Fatalf("close: %v", err)
	}
	// Nothing outside ROOT.
	for _, f := range walkFiles(t, vfs.OS(), parent, parent) {
		if !strings.HasPrefix(f, filepath.Join("deep", "root")+string(filepath.Separator)) {
			t.Errorf("file %s written outside ROOT", f)
		}
	}
	tb := readTables(t, vfs.OS(), root)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sr := sessionOf(t, tb, tc.sid)
			if sr.Status != schema.SessionEnded {
				t.Errorf("status %s", sr.Status)
			}
			if tc.problem != "" && (sr.Problems == 0 || sr.ProblemSummary == nil || !strings.Contains(*sr.ProblemSummary, tc.problem+"=")) {
				t.Errorf("problems %d %v, want %s counted", sr.Problems, sr.ProblemSummary, tc.problem)
			}
			rows := tb.steps[[2]string{tc.sid, "ep-000001"}]
			er := tb.episodes[[2]string{tc.sid, "ep-000001"}]
			if len(rows) != 2 || len(er) != 1 || er[0].Status != schema.EpisodeCompleted || er[0].RewardSum != 3 {
				t.Errorf("the good episode: %d rows, episodes %+v", len(rows), er)
			}
		})
	}
}

func TestLateTelemetry(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	const sid = "late"
	window := func(op string) *events.TelemetrySnapshot {
		return &events.TelemetrySnapshot{SessionID: sid, Snapshot: events.Snapshot{Horizon: events.HorizonWindow,
			Rows: []events.TelemetryRow{{Op: op, Metric: "latency", Kind: events.MetricDurationMs, Count: 1}}}}
	}
	rec, err := recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []events.Event{
		&events.SessionStarted{SessionID: sid, EnvID: "env"},
		window("early"),
		&events.SessionEnded{SessionID: sid, Reason: "done"},
		&events.TelemetrySnapshot{SessionID: sid, Snapshot: events.Snapshot{Horizon: events.HorizonSession,
			Rows: []events.TelemetryRow{{Op: "final", Kind: events.MetricCount, Count: 2}}}},
		window("late-1"),
	} {
		if err := events.Dispatch(ctx, rec, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tb := readTables(t, vfs.OS(), root)
	before := sessionOf(t, tb, sid)
	if got := tb.parts[[2]string{schema.TableTelemetry, sid}]; fmt.Sprint(got) != "[0 1]" {
		t.Fatalf("telemetry parts %v, want [0 1]", got)
	}
	if got := len(tb.telemetry[sid]); got != 3 {
		t.Fatalf("%d telemetry rows, want 3", got)
	}

	// A late snapshot after the ROOT was closed and reopened.
	rec, err = recorder.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.OnTelemetrySnapshot(ctx, window("late-2")); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	tb = readTables(t, vfs.OS(), root)
	if got := tb.parts[[2]string{schema.TableTelemetry, sid}]; fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("telemetry parts %v, want [0 1 2]", got)
	}
	if got := tb.parts[[2]string{schema.TableSessions, sid}]; fmt.Sprint(got) != "[0]" {
		t.Fatalf("sessions parts %v, want [0]", got)
	}
	if after := sessionOf(t, tb, sid); js(after) != js(before) {
		t.Fatalf("the sessions row changed:\n%s\n%s", js(before), js(after))
	}
	var ops []string
	for _, r := range tb.telemetry[sid] {
		ops = append(ops, r.Op)
	}
	if fmt.Sprint(ops) != "[early final late-1 late-2]" {
		t.Fatalf("telemetry ops %v", ops)
	}
}
