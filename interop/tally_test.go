package interop

import (
	"context"
	"sync"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// tally forwards every event to the recorder it wraps and keeps its own
// account of what the runtime emitted, so the output can be checked against
// what was handed over rather than against the recorder's own counters. An
// event is counted after the recorder's hook returned, so a snapshot taken
// before a Flush covers only events that Flush makes durable. It keys what
// it counts by recording, (session_id, env_id) as every event names it, so
// that runs sharing a session id are counted apart.
//
// It understands both event orders of the simulator. In rlmesh rc.5's an
// episode ends at its EpisodeCompleted. In rlmesh 0.1's a StepCompleted's
// per-lane terminated/truncated flags end the lane's episode; the next
// action on that lane (before the EpisodeCompleted that 0.1 defers to it
// under NEXT_STEP autoreset) is the lane's roll step, which belongs to no
// episode (a dropped step, no row), and an observation in between is the
// episode's terminal observation. Lanes naming an episode that never
// started are 0.1's surplus episodes: their lane-steps are dropped and
// counted as surplus, not recorded. The tally keeps the simulator's
// sessions to a single lane group per recording (no lane-served envs).
type tally struct {
	next events.Hooks

	mu       sync.Mutex
	sessions map[hive.Recording]*sessionTally
}

// sessionTally is what was handed over for one recording.
type sessionTally struct {
	rec      hive.Recording
	route    events.RuntimeEnvContext
	status   string // "open", "ended" or "failed"
	reason   string
	ended    *events.SessionEnded
	episodes map[string]*episodeTally // by episode record id
	order    []string                 // record ids in start order
	// lastAction is the record id each lane's latest ActionReceived
	// named, for mapping StepCompleted rewards.
	lastAction []string
	dropped    int64 // lane actions that are no episode's step (roll steps, surplus and completed episodes)
	surplus    int64 // lane actions naming an episode that never started (rlmesh 0.1's surplus episodes)
	// pending is set between an ActionReceived and its StepCompleted,
	// with the episodes it named in pendingEps; unanswered counts actions
	// the session failed without a StepCompleted for: no steps, a logs
	// row per episode they named (the recorder's unfinished actions).
	pending    bool
	pendingEps []*episodeTally
	unanswered int64
	logs       int64
	telemetry  int64 // telemetry rows
}

type episodeTally struct {
	recordID     string
	episodeID    string
	index        int64
	envIndex     int32
	autoReset    bool
	completed    *events.EpisodeCompleted
	flagEnded    bool    // a StepCompleted's flags ended it (rlmesh 0.1): no further step is its
	finalInfo    bool    // EpisodeCompleted carried a final_info
	actions      int64   // lane actions while the episode was open that a StepCompleted followed: its step rows
	rewardSum    float64 // rewards of those actions
	finalObsSeen bool    // an observation arrived for it after it ended (flags or completion)
}

func newTally(next events.Hooks) *tally {
	return &tally{next: next, sessions: make(map[hive.Recording]*sessionTally)}
}

// session returns the tally of the recording an event names.
func (t *tally) session(sid string, route events.RuntimeEnvContext) *sessionTally {
	rec := hive.Recording{SessionID: sid, EnvID: route.EnvID}
	s := t.sessions[rec]
	if s == nil {
		s = &sessionTally{rec: rec, route: route, status: "open", episodes: make(map[string]*episodeTally)}
		t.sessions[rec] = s
	}
	return s
}

// snapshot returns a deep enough copy of the tally to compare against
// while the recording goes on.
func (t *tally) snapshot() map[hive.Recording]*sessionTally {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[hive.Recording]*sessionTally, len(t.sessions))
	for rec, s := range t.sessions {
		c := *s
		c.episodes = make(map[string]*episodeTally, len(s.episodes))
		for rid, e := range s.episodes {
			ec := *e
			c.episodes[rid] = &ec
		}
		c.order = append([]string(nil), s.order...)
		c.lastAction = nil
		out[rec] = &c
	}
	return out
}

func (t *tally) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	err := t.next.OnEnvConnected(ctx, ev)
	t.mu.Lock()
	t.session(ev.SessionID, ev.Route).logs++ // kept as a logs row
	t.mu.Unlock()
	return err
}

func (t *tally) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	err := t.next.OnModelConnected(ctx, ev)
	t.mu.Lock()
	t.session(ev.SessionID, ev.Route).logs++ // kept as a logs row
	t.mu.Unlock()
	return err
}

func (t *tally) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	err := t.next.OnSessionStarted(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.route = ev.Route
	t.mu.Unlock()
	return err
}

func (t *tally) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	err := t.next.OnSessionEnded(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.status, s.reason = "ended", ev.Reason
	c := *ev
	s.ended = &c
	t.mu.Unlock()
	return err
}

func (t *tally) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	err := t.next.OnSessionFailed(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.status, s.reason = "failed", ev.Reason
	if s.pending {
		s.unanswered++
		s.logs += int64(len(s.pendingEps))
		s.pending = false
	}
	t.mu.Unlock()
	return err
}

func (t *tally) OnLog(ctx context.Context, ev *events.Log) error {
	err := t.next.OnLog(ctx, ev)
	t.mu.Lock()
	t.session(ev.SessionID, ev.Route).logs++
	t.mu.Unlock()
	return err
}

func (t *tally) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	err := t.next.OnEpisodeStarted(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.episodes[ev.EpisodeRecordID] = &episodeTally{
		recordID: ev.EpisodeRecordID, episodeID: ev.EpisodeID, index: ev.EpisodeIndex,
		envIndex: ev.EnvIndex, autoReset: ev.StartedFromAutoReset,
	}
	s.order = append(s.order, ev.EpisodeRecordID)
	t.mu.Unlock()
	return err
}

func (t *tally) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	err := t.next.OnEpisodeCompleted(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	if e := s.episodes[ev.EpisodeRecordID]; e != nil && e.completed != nil && schema.RepeatedCompletion(ev) {
		// rlmesh's env server reporting a capped episode again: the
		// recorder keeps it as a logs row.
		s.logs++
	} else if e != nil {
		c := *ev
		e.finalInfo = ev.FinalInfo != nil
		c.FinalInfo = nil
		e.completed = &c
	}
	t.mu.Unlock()
	return err
}

func (t *tally) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	err := t.next.OnActionReceived(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.lastAction = append(s.lastAction[:0], ev.EpisodeRecordIDs...)
	s.pending = true
	s.pendingEps = s.pendingEps[:0]
	for i, rid := range ev.EpisodeRecordIDs {
		e := s.episodes[rid]
		switch {
		case e == nil:
			// No episode's step: 0.1's surplus episode (or an empty id).
			s.dropped++
			if rid != "" {
				s.surplus++
			}
			s.lastAction[i] = ""
		case e.completed != nil || e.flagEnded:
			// The roll step of an episode ended by the step before
			// (0.1), or a completed episode's lane (rc.5, NEXT_STEP).
			s.dropped++
			s.lastAction[i] = ""
		default:
			s.pendingEps = append(s.pendingEps, e)
		}
	}
	t.mu.Unlock()
	return err
}

func (t *tally) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	err := t.next.OnStepCompleted(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	s.pending = false
	for _, e := range s.pendingEps {
		e.actions++
	}
	s.pendingEps = s.pendingEps[:0]
	for i, r := range ev.Rewards {
		if i < len(s.lastAction) {
			if e := s.episodes[s.lastAction[i]]; e != nil {
				e.rewardSum += r
			}
		}
	}
	for i := range s.lastAction {
		ended := i < len(ev.Terminated) && ev.Terminated[i] || i < len(ev.Truncated) && ev.Truncated[i]
		if e := s.episodes[s.lastAction[i]]; e != nil && ended {
			e.flagEnded = true
		}
	}
	t.mu.Unlock()
	return err
}

func (t *tally) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	err := t.next.OnObservationEmitted(ctx, ev)
	t.mu.Lock()
	s := t.session(ev.SessionID, ev.Route)
	for _, rid := range ev.EpisodeRecordIDs {
		if e := s.episodes[rid]; e != nil && (e.completed != nil || e.flagEnded) {
			e.finalObsSeen = true
		}
	}
	t.mu.Unlock()
	return err
}

func (t *tally) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	err := t.next.OnTelemetrySnapshot(ctx, ev)
	t.mu.Lock()
	t.session(ev.SessionID, ev.Route).telemetry += int64(len(ev.Snapshot.Rows))
	t.mu.Unlock()
	return err
}

func (t *tally) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return t.next.OnRelayAdvisory(ctx, ev)
}
