package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// RNG streams derived from Config.Seed; part of what makes a seed
// reproduce a run, do not change.
const (
	streamEnv     = 1
	streamPolicy  = 2
	streamIDs     = 3
	streamSession = 4       // + session index in RunSessions
	streamRoute   = 1 << 32 // + session index in RunSessions
)

// Summary is what a finished session did.
type Summary struct {
	SessionID string
	// EnvID is the route's env id: with SessionID it names the recording.
	EnvID string
	// Steps is the number of batch steps (env.step calls) taken.
	Steps int64
	// LaneSteps is Steps × NumEnvs.
	LaneSteps int64
	// Episodes is the number of completed episodes.
	Episodes int64
	// Failed reports that the session ended with SessionFailed.
	Failed bool
}

// Run drives one simulated session into hooks and returns when its last
// event has been delivered. A hook error does not stop the session (as in
// the runtime); Run returns the first one wrapped in ErrHook at the end. A
// cancelled ctx fails the session (final telemetry, SessionFailed) and Run
// returns ctx's error. An injected failure (FailAfterSteps) is a simulated
// outcome, not an error: Run returns nil and Summary.Failed. Hooks are
// called with ctx stripped of its cancellation, so that the closing events
// of a cancelled session are still delivered.
func Run(ctx context.Context, hooks events.Hooks, cfg Config) (Summary, error) {
	return run(ctx, hooks, cfg, 0)
}

// RunSessions runs every config as its own session, concurrently, each on
// its own goroutine, into one shared hooks (which must be safe for
// concurrent use, as the runtime's hooks are). Sessions without a
// SessionID get one minted from their Seed and position in cfgs, so equal
// configs still get distinct ids. It returns the summaries in cfgs order
// and the errors of all sessions joined.
func RunSessions(ctx context.Context, hooks events.Hooks, cfgs []Config) ([]Summary, error) {
	seen := make(map[string]int, len(cfgs)) // session id NUL env id -> index
	cfgs = slices.Clone(cfgs)
	for i := range cfgs {
		if err := cfgs[i].validate(); err != nil {
			return nil, fmt.Errorf("session %d: %w", i, err)
		}
		cfgs[i].mintIDs(i)
		key := cfgs[i].SessionID + "\x00" + cfgs[i].Route.EnvID
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("sessions %d and %d: session id %s env id %s: %w", j, i, cfgs[i].SessionID, cfgs[i].Route.EnvID, ErrDuplicateSession)
		}
		seen[key] = i
	}
	sums := make([]Summary, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Go(func() { sums[i], errs[i] = run(ctx, hooks, cfgs[i], i) })
	}
	wg.Wait()
	return sums, errors.Join(errs...)
}

func clockOf(cfg *Config) func() time.Time {
	if cfg.Clock != nil {
		return cfg.Clock
	}
	return time.Now
}

// mintIDs fills in a session id and a route left empty: like rlmesh, a
// UUIDv7 env id per run (the routing key), minted from the config's Seed
// and Clock and the session's index.
func (cfg *Config) mintIDs(index int) {
	if cfg.SessionID == "" {
		rng := rand.New(rand.NewPCG(cfg.Seed, streamSession+uint64(index)))
		cfg.SessionID = newUUIDv7(clockOf(cfg)(), rng)
	}
	if cfg.Route == (events.RuntimeEnvContext{}) {
		rng := rand.New(rand.NewPCG(cfg.Seed, streamRoute+uint64(index)))
		cfg.Route = events.RuntimeEnvContext{EnvID: newUUIDv7(clockOf(cfg)(), rng),
			EnvComponentID: "env/" + cfg.Env, ModelComponentID: "model/" + cfg.Env + "-policy"}
	}
}

// laneState is one lane's current (or, under next-step autoreset, just
// completed) episode.
type laneState struct {
	started  time.Time
	steps    int64
	reward   float64
	index    int64
	pending  bool // next-step: completed, resets on the next step
	complete bool // scratch: completed on this step
	term     bool
	trunc    bool
}

type session struct {
	ctx    context.Context
	hooks  events.Hooks
	cfg    Config
	id     string
	route  events.RuntimeEnvContext
	clock  func() time.Time
	env    env
	obsSp  *spacesv1.SpaceSpec
	actSp  *spacesv1.SpaceSpec
	idRNG  *rand.Rand
	meter  *meter
	lanes  []laneState
	epIDs  []string
	recIDs []string

	rewards   []float64
	nextIndex int64 // last episode index assigned
	completed int64
	steps     int64

	hookMu   sync.Mutex
	hookErr  error
	hookErrs int

	// reused events
	evStart events.EpisodeStarted
	evDone  events.EpisodeCompleted
	evAct   events.ActionReceived
	evStep  events.StepCompleted
	evObs   events.ObservationEmitted
}

func run(ctx context.Context, hooks events.Hooks, cfg Config, index int) (Summary, error) {
	if err := cfg.validate(); err != nil {
		return Summary{}, err
	}
	factory, _ := lookupEnv(cfg.Env)
	cfg.mintIDs(index)
	n := cfg.NumEnvs
	e := factory(n, rand.New(rand.NewPCG(cfg.Seed, streamEnv)), rand.New(rand.NewPCG(cfg.Seed, streamPolicy)))
	s := &session{
		ctx: ctx, hooks: hooks, cfg: cfg, id: cfg.SessionID, route: cfg.Route,
		clock: clockOf(&cfg), env: e,
		idRNG:   rand.New(rand.NewPCG(cfg.Seed, streamIDs)),
		meter:   newMeter(cfg.Route),
		lanes:   make([]laneState, n),
		epIDs:   make([]string, n),
		recIDs:  make([]string, n),
		rewards: make([]float64, n),
	}
	s.obsSp, s.actSp = e.spaces()
	err := s.loop()
	sum := Summary{SessionID: s.id, EnvID: s.route.EnvID, Steps: s.steps, LaneSteps: s.steps * int64(n), Episodes: s.completed, Failed: err != nil}
	if errors.Is(err, errInjected) {
		err = nil
	}
	if s.hookErr != nil {
		err = errors.Join(err, fmt.Errorf("session %s: %d hook calls failed, first: %w: %w", s.id, s.hookErrs, ErrHook, s.hookErr))
	}
	return sum, err
}

var errInjected = errors.New("injected failure")

func (s *session) hookDone(err error) {
	if err == nil {
		return
	}
	s.hookMu.Lock()
	if s.hookErr == nil {
		s.hookErr = err
	}
	s.hookErrs++
	s.hookMu.Unlock()
}

// loop runs the session; a non-nil error means it ended with SessionFailed.
func (s *session) loop() error {
	ctx := s.ctx
	hctx := context.WithoutCancel(ctx)
	s.hookDone(s.hooks.OnSessionStarted(hctx, &events.SessionStarted{SessionID: s.id, Route: s.route, EnvID: s.route.EnvID}))

	stopTelemetry := s.startTelemetry(hctx)

	src := "sim/" + s.cfg.Env
	s.hookDone(s.hooks.OnLog(hctx, &events.Log{SessionID: s.id, Route: s.route, Level: events.LogInfo,
		Message: "env reset complete: num_envs=" + strconv.Itoa(s.cfg.NumEnvs) + " autoreset=" + s.cfg.Autoreset.String(), Source: &src}))
	for i := range s.lanes {
		s.startEpisode(hctx, i, false)
	}
	s.emitObservation(hctx, true)

	for {
		if err := ctx.Err(); err != nil {
			return s.fail(hctx, stopTelemetry, fmt.Sprintf("session cancelled: %v", err), err)
		}
		t0 := s.clock()
		action := s.env.act()
		t1 := s.clock()

		l0 := &s.lanes[0]
		stepNo := l0.steps + 1
		a := &s.evAct
		*a = events.ActionReceived{SessionID: s.id, Route: s.route,
			EpisodeID: s.epIDs[0], EpisodeRecordID: s.recIDs[0],
			EpisodeIDs: s.epIDs, EpisodeRecordIDs: s.recIDs,
			Step: stepNo, ActionSpace: s.actSp, Action: action}
		s.hookDone(s.hooks.OnActionReceived(hctx, a))

		if s.cfg.FailAfterSteps > 0 && s.steps >= s.cfg.FailAfterSteps {
			return s.fail(hctx, stopTelemetry,
				fmt.Sprintf("env step failed: injected fault after %d steps", s.steps), errInjected)
		}
		s.steps++
		anyDone := false
		for i := range s.lanes {
			l := &s.lanes[i]
			l.complete = false
			if l.pending {
				// next-step autoreset: the action is ignored, the lane
				// resets; this step belongs to no episode.
				s.env.reset(i)
				s.rewards[i] = 0
				l.steps = 0
				continue
			}
			r, term, trunc := s.env.step(i, action)
			l.steps++
			if !term && !trunc && s.cfg.TimeLimit > 0 && l.steps >= s.cfg.TimeLimit {
				trunc = true
			}
			l.reward += r
			s.rewards[i] = r
			if !term && !trunc && s.cfg.MaxEpisodeSteps > 0 && l.steps >= s.cfg.MaxEpisodeSteps {
				trunc = true
			}
			if term || trunc {
				l.complete, l.term, l.trunc = true, term, trunc && !term
				anyDone = true
			}
		}
		t2 := s.clock()

		st := &s.evStep
		*st = events.StepCompleted{SessionID: s.id, Route: s.route,
			EpisodeID: a.EpisodeID, EpisodeRecordID: a.EpisodeRecordID,
			Step: stepNo, Rewards: s.rewards}
		s.hookDone(s.hooks.OnStepCompleted(hctx, st))

		for i := range s.lanes {
			if s.lanes[i].pending {
				s.lanes[i].pending = false
				s.startEpisode(hctx, i, true)
			}
		}
		for i := range s.lanes {
			if s.lanes[i].complete {
				s.completeEpisode(hctx, i)
			}
		}
		if s.completed >= s.cfg.MaxEpisodes {
			stopTelemetry()
			s.hookDone(s.hooks.OnSessionEnded(hctx, &events.SessionEnded{SessionID: s.id, Route: s.route,
				Reason: "max_episodes reached", TotalSteps: s.steps, TotalEpisodes: s.completed}))
			s.meterStep(t0, t1, t2, action)
			s.finalTelemetry(hctx)
			return nil
		}
		reset := false
		if anyDone {
			for i := range s.lanes {
				l := &s.lanes[i]
				if !l.complete {
					continue
				}
				if s.cfg.Autoreset == AutoresetDisabled {
					s.env.reset(i)
					l.steps = 0
					s.startEpisode(hctx, i, true)
					reset = true
				} else {
					l.pending = true
				}
			}
		}
		s.meterStep(t0, t1, t2, action)
		s.emitObservation(hctx, reset)
	}
}

func (s *session) meterStep(t0, t1, t2 time.Time, action [][]byte) {
	actBytes := 0
	for _, b := range action {
		actBytes += len(b)
	}
	obsBytes := 0
	for _, b := range s.evObs.Observation {
		obsBytes += len(b)
	}
	s.meter.record(ms(t1.Sub(t0)), ms(t2.Sub(t1)), obsBytes, actBytes, len(s.lanes))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fail ends the session on a failure: final telemetry, then SessionFailed.
func (s *session) fail(hctx context.Context, stopTelemetry func(), reason string, err error) error {
	stopTelemetry()
	s.finalTelemetry(hctx)
	s.hookDone(s.hooks.OnSessionFailed(hctx, &events.SessionFailed{SessionID: s.id, Route: s.route, Reason: reason}))
	return err
}

func (s *session) finalTelemetry(hctx context.Context) {
	s.hookDone(s.hooks.OnTelemetrySnapshot(hctx, &events.TelemetrySnapshot{SessionID: s.id, Route: s.route,
		Snapshot: s.meter.snapshot(events.HorizonSession)}))
}

// startTelemetry starts the window telemetry goroutine, if configured, and
// returns a function that stops it and waits until it has returned, so no
// window snapshot follows the session's closing events.
func (s *session) startTelemetry(hctx context.Context) func() {
	if s.cfg.TelemetryInterval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(s.cfg.TelemetryInterval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				s.hookDone(s.hooks.OnTelemetrySnapshot(hctx, &events.TelemetrySnapshot{SessionID: s.id, Route: s.route,
					Snapshot: s.meter.snapshot(events.HorizonWindow)}))
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}

// startEpisode gives lane a new episode: the next session-global record id
// and index, a fresh UUIDv7, and emits EpisodeStarted.
func (s *session) startEpisode(hctx context.Context, lane int, auto bool) {
	now := s.clock()
	s.nextIndex++
	l := &s.lanes[lane]
	*l = laneState{started: now, index: s.nextIndex}
	s.epIDs[lane] = newUUIDv7(now, s.idRNG)
	s.recIDs[lane] = recordID(s.nextIndex)
	ev := &s.evStart
	*ev = events.EpisodeStarted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[lane], EpisodeRecordID: s.recIDs[lane], EpisodeIndex: s.nextIndex,
		EnvIndex: int32(lane), StartedFromAutoReset: auto}
	s.hookDone(s.hooks.OnEpisodeStarted(hctx, ev))
}

func (s *session) completeEpisode(hctx context.Context, lane int) {
	l := &s.lanes[lane]
	s.completed++
	ev := &s.evDone
	*ev = events.EpisodeCompleted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[lane], EpisodeRecordID: s.recIDs[lane], EpisodeIndex: l.index,
		EnvIndex: int32(lane), StepCount: l.steps, CumulativeReward: l.reward,
		Terminated: l.term, Truncated: l.trunc,
		DurationMs: s.clock().Sub(l.started).Milliseconds(),
		FinalInfo:  s.env.finalInfo(lane)}
	s.hookDone(s.hooks.OnEpisodeCompleted(hctx, ev))
}

func (s *session) emitObservation(hctx context.Context, isReset bool) {
	ev := &s.evObs
	*ev = events.ObservationEmitted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[0], EpisodeRecordID: s.recIDs[0],
		EpisodeIDs: s.epIDs, EpisodeRecordIDs: s.recIDs,
		Step: s.lanes[0].steps, IsReset: isReset, NumEnvs: uint32(len(s.lanes)),
		ObservationSpace: s.obsSp, Observation: s.env.observe()}
	s.hookDone(s.hooks.OnObservationEmitted(hctx, ev))
}

// recordID formats the session-global episode record id, ep-NNNNNN.
func recordID(index int64) string {
	return fmt.Sprintf("ep-%06d", index)
}
