package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
	streamLate    = 2 << 32 // where Config.LateWindow's snapshot lands
	streamTiming  = 5       // the simulated durations of calls (pace)
)

// Summary is what a finished session did.
type Summary struct {
	SessionID string
	// EnvID is the route's env id: with SessionID it names the recording.
	EnvID string
	// Steps is the number of batch steps (env.step calls) taken.
	Steps int64
	// LaneSteps is the lane steps taken: Steps × NumEnvs, or with a
	// lane-served env the sum of the groups' steps.
	LaneSteps int64
	// SurplusLaneSteps (rlmesh 0.1) is the part of LaneSteps whose lane
	// held a surplus episode (beyond the max_episodes budget: it never
	// starts or completes), its roll step included.
	SurplusLaneSteps int64
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
		if err := cfgs[i].Validate(); err != nil {
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
	complete bool // scratch: the env ended the episode on this step
	capped   bool // scratch: the runtime truncated it at a cap on this step
	reported bool // scratch: the env server reported an interrupted episode of the lane on this step
	term     bool
	trunc    bool
}

// interrupted is an episode that rlmesh's env server still held when the
// runtime reset its lane (a capped episode under disabled autoreset, and
// after it each episode the next report's reset cuts short): the server
// completes it as truncated and reports it on the next step
// (drain_interrupted), with its own accounting.
type interrupted struct {
	lane            int
	epID, recID     string
	index, steps    int64
	reward          float64
	started, ending time.Time
}

type session struct {
	ctx   context.Context
	hooks events.Hooks
	cfg   Config
	id    string
	route events.RuntimeEnvContext
	// origin is Config.Clock's reading at the start; at the simulated
	// time since (see pace): every event time is origin + at.
	origin  time.Time
	at      atomic.Int64 // nanoseconds; see elapsed
	pace    pace
	timeRNG *rand.Rand
	newEnv  envFactory
	env     env
	obsSp   *spacesv1.SpaceSpec
	actSp   *spacesv1.SpaceSpec
	idRNG   *rand.Rand
	meter   *meter
	lanes   []laneState
	epIDs   []string
	recIDs  []string

	rewards   []float64
	stepCap   int64
	nextIndex int64 // last episode index assigned
	completed int64
	steps     int64
	laneSteps int64
	// surplusSteps counts the lane-steps of surplus episodes (0.1).
	surplusSteps int64

	samples []sample // this round's telemetry, handed to meter at its end
	wire    wireSizes

	// interrupted holds the episodes the env server will report on the
	// next step; drained is the previous step's, being reported.
	interrupted, drained []interrupted

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
	if err := cfg.Validate(); err != nil {
		return Summary{}, err
	}
	factory, _ := lookupEnv(cfg.Env)
	if cfg.testEnv != nil {
		factory = cfg.testEnv
	}
	cfg.mintIDs(index)
	n := cfg.NumEnvs
	s := &session{
		ctx: ctx, hooks: hooks, cfg: cfg, id: cfg.SessionID, route: cfg.Route,
		origin: clockOf(&cfg)(), pace: paceOf(&cfg), newEnv: factory,
		timeRNG: rand.New(rand.NewPCG(cfg.Seed, streamTiming)),
		idRNG:   rand.New(rand.NewPCG(cfg.Seed, streamIDs)),
		meter:   newMeter(cfg.TelemetryInterval > 0 || cfg.LateWindow),
		lanes:   make([]laneState, n),
		epIDs:   make([]string, n),
		recIDs:  make([]string, n),
		rewards: make([]float64, n),
		stepCap: cfg.stepCap(),
		samples: make([]sample, 0, numSeries),
		wire:    newWireSizes(cfg.SessionID, cfg.Route.EnvID),
	}
	var err error
	if cfg.Order == OrderRC5 {
		err = s.loop()
	} else {
		err = s.loop01()
	}
	sum := Summary{SessionID: s.id, EnvID: s.route.EnvID, Steps: s.steps, LaneSteps: s.laneSteps, SurplusLaneSteps: s.surplusSteps, Episodes: s.completed, Failed: err != nil}
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

// Reasons the session ends with, rlmesh's texts.
const (
	reasonCompleted = "completed requested episodes"
	// envRPCHint ends the text of rlmesh's env RPC errors.
	envRPCHint = ". If the source is 'transport error: connection closed', the environment server exited, crashed, or received SIGTERM before replying; inspect the environment container logs immediately before the runtime error timestamp"
)

// record adds one telemetry sample to the current round.
func (s *session) record(sr series, v float64) {
	s.samples = append(s.samples, sample{sr, v})
}

// recordCall adds the samples of one call to the env timed from t0 to t1:
// the env server's endpoint time is the call's.
func (s *session) recordCall(first series, t0, t1 time.Time, reqBytes, respBytes int) {
	d := ms(t1.Sub(t0))
	// Each env op's series are in the order endpoint.total,
	// request.bytes, response.bytes, rpc.total.
	s.record(first, d)
	s.record(first+1, float64(reqBytes))
	s.record(first+2, float64(respBytes))
	s.record(first+3, d)
}

// recordPredict adds the samples of one predict of the in-process model
// (rlmesh's local runner): no endpoint time, no group size.
func (s *session) recordPredict(t0, t1 time.Time, reqBytes, respBytes int) {
	s.record(predictRequest, float64(reqBytes))
	s.record(predictResponse, float64(respBytes))
	s.record(predictRPC, ms(t1.Sub(t0)))
}

// flushSamples hands the round's samples to the meter.
func (s *session) flushSamples() {
	s.meter.add(s.samples)
	s.samples = s.samples[:0]
}

// loop runs the session in rlmesh rc.5's order (OrderRC5); a non-nil error
// means it ended with SessionFailed.
func (s *session) loop() error {
	ctx := s.ctx
	hctx := context.WithoutCancel(ctx)
	s.emit(hctx, &events.SessionStarted{SessionID: s.id, Route: s.route, EnvID: s.route.EnvID})

	stopTelemetry := s.startTelemetry(hctx)

	// env.reset: the env attaches and resets every lane.
	n := s.cfg.NumEnvs
	t0 := s.now()
	s.env = s.newEnv(n, rand.New(rand.NewPCG(s.cfg.Seed, streamEnv)), rand.New(rand.NewPCG(s.cfg.Seed, streamPolicy)))
	s.obsSp, s.actSp = s.env.spaces()
	obs := s.env.observe()
	t1 := s.spend(s.pace.reset)
	s.recordCall(resetEndpoint, t0, t1, s.wire.resetRequest(n, false), s.wire.resetResponse(obs))
	src := "runtime"
	s.emit(hctx, &events.Log{SessionID: s.id, Route: s.route, Level: events.LogInfo,
		Message: "env reset complete in " + strconv.FormatFloat(ms(t1.Sub(t0)), 'f', 0, 64) + "ms (" +
			strconv.Itoa(n) + " episode(s) ready)", Source: &src})
	for i := range s.lanes {
		s.startEpisode(hctx, i, false)
	}
	s.emitObservation(hctx, obs, true)
	s.flushSamples()

	roundStart := s.now()
	for {
		if err := ctx.Err(); err != nil {
			return s.fail(hctx, stopTelemetry, fmt.Sprintf("route %s cancelled at runtime step %d: %v",
				s.route.EnvID, s.lanes[0].steps, context.Cause(ctx)), err)
		}
		// model.predict, then the action transform.
		action := s.env.act()
		s.recordPredict(roundStart, s.spend(s.pace.predict), s.wire.predictRequest(s.evObs.Observation, n), s.wire.predictResponse(action))
		s.record(transformActRPC, 0)

		l0 := &s.lanes[0]
		stepNo := l0.steps + 1
		a := &s.evAct
		*a = events.ActionReceived{SessionID: s.id, Route: s.route,
			EpisodeID: s.epIDs[0], EpisodeRecordID: s.recIDs[0],
			EpisodeIDs: s.epIDs, EpisodeRecordIDs: s.recIDs,
			Step: stepNo, ActionSpace: s.actSp, Action: action}
		s.emit(hctx, a)

		if s.cfg.FailAfterSteps > 0 && s.steps >= s.cfg.FailAfterSteps {
			// rlmesh's local env adapter (EnvClientRuntimeEnv) reports
			// its errors at runtime step 0, whatever the step.
			return s.fail(hctx, stopTelemetry, fmt.Sprintf("environment env.step failed at runtime step 0: injected fault after %d steps%s",
				s.steps, envRPCHint), errInjected)
		}

		// env.step.
		t0 := s.now()
		s.steps++
		s.laneSteps += int64(n)
		allZero := true
		// The env server reports the episodes the last reset interrupted
		// first (drain_interrupted), then the env's completions.
		s.drained, s.interrupted = s.interrupted, s.drained[:0]
		for i := range s.lanes {
			l := &s.lanes[i]
			l.complete, l.capped, l.reported = false, false, false
			for _, d := range s.drained {
				l.reported = l.reported || d.lane == i
			}
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
			allZero = allZero && r == 0
			if term || trunc {
				l.complete, l.term, l.trunc = true, term, !term
			}
		}
		rewards := s.rewards
		if s.cfg.EmptyRewards && allZero {
			rewards = s.rewards[:0]
		}
		obs = s.env.observe()
		t1 := s.spend(s.pace.step)
		s.recordCall(stepEndpoint, t0, t1, s.wire.stepRequest(action, n), s.wire.stepResponse(obs, len(rewards), n))

		st := &s.evStep
		*st = events.StepCompleted{SessionID: s.id, Route: s.route,
			EpisodeID: a.EpisodeID, EpisodeRecordID: a.EpisodeRecordID,
			Step: stepNo, Rewards: rewards}
		s.emit(hctx, st)

		for i := range s.lanes {
			if s.lanes[i].pending {
				s.lanes[i].pending = false
				s.startEpisode(hctx, i, true)
			}
		}
		// The runtime's caps: lanes the env server reported no
		// completion of on this step (an interrupted episode's report
		// counts, as in rlmesh's driver).
		if s.stepCap > 0 || s.cfg.MaxEpisodeTime > 0 {
			for i := range s.lanes {
				l := &s.lanes[i]
				if !l.complete && !l.reported && (s.stepCap > 0 && l.steps >= s.stepCap ||
					s.cfg.MaxEpisodeTime > 0 && t1.Sub(l.started) >= s.cfg.MaxEpisodeTime) {
					l.capped, l.term, l.trunc = true, false, true
				}
			}
		}
		// The interrupted episodes the env server reports, the env's
		// completions, then the runtime's.
		anyDone := len(s.drained) > 0
		for _, d := range s.drained {
			s.reportInterrupted(hctx, d)
		}
		for i := range s.lanes {
			if s.lanes[i].complete {
				s.completeEpisode(hctx, i, s.env.finalInfo(i))
				anyDone = true
			}
		}
		for i := range s.lanes {
			if s.lanes[i].capped {
				s.completeEpisode(hctx, i, nil)
				anyDone = true
			}
		}
		if s.completed >= s.cfg.MaxEpisodes {
			s.record(roundRPC, ms(s.now().Sub(roundStart)))
			s.flushSamples()
			stopTelemetry()
			late := s.lateWindowAfter()
			s.emit(hctx, &events.SessionEnded{SessionID: s.id, Route: s.route,
				Reason: reasonCompleted, TotalSteps: s.steps, TotalEpisodes: s.completed})
			if late == 1 {
				s.lateWindow(hctx)
			}
			s.finalTelemetry(hctx)
			if late == 2 {
				s.lateWindow(hctx)
			}
			return nil
		}
		reset := false
		if anyDone {
			if s.cfg.Autoreset == AutoresetDisabled {
				// env.reset of the lanes that completed.
				t0 := s.now()
				k := 0
				for i := range s.lanes {
					if l := &s.lanes[i]; l.complete || l.capped || l.reported {
						if !l.complete && !s.cfg.CapsCompleteOnce {
							// The env server still holds the lane's
							// episode: the reset interrupts it.
							s.interrupted = append(s.interrupted, interrupted{lane: i, epID: s.epIDs[i], recID: s.recIDs[i],
								index: l.index, steps: l.steps, reward: l.reward, started: l.started, ending: t0})
						}
						s.env.reset(i)
						k++
					}
				}
				obs = s.env.observe()
				t1 := s.spend(s.pace.reset)
				s.recordCall(resetEndpoint, t0, t1, s.wire.resetRequest(k, k < n), s.wire.resetResponse(obs))
				for i := range s.lanes {
					if l := &s.lanes[i]; l.complete || l.capped || l.reported {
						s.startEpisode(hctx, i, true)
					}
				}
				reset = true
			} else {
				for i := range s.lanes {
					if l := &s.lanes[i]; l.complete || l.capped {
						l.pending = true
					}
				}
			}
		}
		s.emitObservation(hctx, obs, reset)
		next := s.nextRound(roundStart)
		s.record(roundRPC, ms(next.Sub(roundStart)))
		s.flushSamples()
		roundStart = next
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// fail ends the session on a failure: final telemetry, then SessionFailed
// with the runtime's error text.
func (s *session) fail(hctx context.Context, stopTelemetry func(), reason string, err error) error {
	s.flushSamples()
	stopTelemetry()
	late := s.lateWindowAfter()
	s.finalTelemetry(hctx)
	if late == 1 {
		s.lateWindow(hctx)
	}
	s.emit(hctx, &events.SessionFailed{SessionID: s.id, Route: s.route, Reason: reason})
	if late == 2 {
		s.lateWindow(hctx)
	}
	return err
}

// lateWindowAfter draws, under Config.LateWindow, how many of the
// session's two closing events its late window snapshot follows: 1 or 2
// (0 without the option).
func (s *session) lateWindowAfter() int {
	if !s.cfg.LateWindow {
		return 0
	}
	return 1 + rand.New(rand.NewPCG(s.cfg.Seed, streamLate)).IntN(2)
}

// lateWindow delivers the window snapshot that rlmesh's aborted ticker had
// in flight (Config.LateWindow): the window since the last one, skipped
// when it is empty.
func (s *session) lateWindow(hctx context.Context) {
	snap := s.meter.snapshot(events.HorizonWindow)
	if len(snap.Rows) == 0 {
		return
	}
	s.emit(hctx, &events.TelemetrySnapshot{SessionID: s.id, Route: s.route, Snapshot: snap})
}

func (s *session) finalTelemetry(hctx context.Context) {
	s.emit(hctx, &events.TelemetrySnapshot{SessionID: s.id, Route: s.route,
		Snapshot: s.meter.snapshot(events.HorizonSession)})
}

// startTelemetry starts the window telemetry goroutine, if configured, and
// returns a function that stops it and waits until it has returned, so no
// window snapshot follows the session's closing events. A window in which
// nothing was recorded is skipped.
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
				snap := s.meter.snapshot(events.HorizonWindow)
				if len(snap.Rows) == 0 {
					continue
				}
				s.emit(hctx, &events.TelemetrySnapshot{SessionID: s.id, Route: s.route,
					Snapshot: snap})
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
	now := s.now()
	s.nextIndex++
	l := &s.lanes[lane]
	*l = laneState{started: now, index: s.nextIndex}
	s.epIDs[lane] = newUUIDv7(now, s.idRNG)
	s.recIDs[lane] = recordID(s.nextIndex)
	ev := &s.evStart
	*ev = events.EpisodeStarted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[lane], EpisodeRecordID: s.recIDs[lane], EpisodeIndex: s.nextIndex,
		EnvIndex: int32(lane), StartedFromAutoReset: auto}
	s.emit(hctx, ev)
}

func (s *session) completeEpisode(hctx context.Context, lane int, finalInfo *spacesv1.MetaMap) {
	l := &s.lanes[lane]
	s.completed++
	ev := &s.evDone
	*ev = events.EpisodeCompleted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[lane], EpisodeRecordID: s.recIDs[lane], EpisodeIndex: l.index,
		EnvIndex: int32(lane), StepCount: l.steps, CumulativeReward: l.reward,
		Terminated: l.term, Truncated: l.trunc,
		DurationMs: s.now().Sub(l.started).Milliseconds(),
		FinalInfo:  finalInfo}
	s.emit(hctx, ev)
}

// reportInterrupted emits the env server's report of an episode a reset
// interrupted: a second EpisodeCompleted for its record id (the runtime
// keeps the record), truncated, without final_info, with the server's
// step count, reward and times. rlmesh counts it as a completed episode.
func (s *session) reportInterrupted(hctx context.Context, d interrupted) {
	s.completed++
	ev := &s.evDone
	*ev = events.EpisodeCompleted{SessionID: s.id, Route: s.route,
		EpisodeID: d.epID, EpisodeRecordID: d.recID, EpisodeIndex: d.index,
		EnvIndex: int32(d.lane), StepCount: d.steps, CumulativeReward: d.reward,
		Terminated: false, Truncated: true,
		DurationMs: d.ending.Sub(d.started).Milliseconds()}
	s.emit(hctx, ev)
}

// emitObservation runs the observation transform and emits obs.
func (s *session) emitObservation(hctx context.Context, obs [][]byte, isReset bool) {
	ev := &s.evObs
	*ev = events.ObservationEmitted{SessionID: s.id, Route: s.route,
		EpisodeID: s.epIDs[0], EpisodeRecordID: s.recIDs[0],
		EpisodeIDs: s.epIDs, EpisodeRecordIDs: s.recIDs,
		Step: s.lanes[0].steps, IsReset: isReset, NumEnvs: uint32(len(s.lanes)),
		ObservationSpace: s.obsSp, Observation: obs}
	s.record(transformObsRPC, 0)
	s.emit(hctx, ev)
}

// recordID formats the session-global episode record id, ep-NNNNNN.
func recordID(index int64) string {
	return fmt.Sprintf("ep-%06d", index)
}

// emit delivers ev with the time of its hook call, read from the session's
// clock: rlmesh's events carry no time, so whoever receives a hook call
// stamps it, and the simulated runtime's clock is the one that knows when
// the call happened (a StepClock makes those times reproducible). Hooks
// that take the time (events.TimedHooks: the recorder, the serve client,
// StreamHooks) get it through RecordAt; any other gets the method call.
func (s *session) emit(hctx context.Context, ev events.Event) {
	s.hookDone(events.DispatchAt(hctx, s.hooks, ev, s.now()))
}

// now is the simulated time: the session's origin plus the simulated
// time spent since.
func (s *session) now() time.Time { return s.origin.Add(s.elapsed()) }

// elapsed is the simulated time since the session's start. It is read
// by the window telemetry goroutine too, so it is kept atomically.
func (s *session) elapsed() time.Duration { return time.Duration(s.at.Load()) }

// setElapsed sets the simulated time since the session's start.
func (s *session) setElapsed(d time.Duration) { s.at.Store(int64(d)) }

// spend advances the simulated time by a duration drawn from sp and
// returns the time after it.
func (s *session) spend(sp span) time.Time {
	s.setElapsed(s.elapsed() + sp.draw(s.timeRNG))
	return s.now()
}

// nextRound advances the simulated time to the start of the round after
// the one that started at roundStart: one control period later, or now
// when the round overran its period. It returns that start.
func (s *session) nextRound(roundStart time.Time) time.Time {
	if due := roundStart.Add(s.pace.period); due.After(s.now()) {
		s.setElapsed(due.Sub(s.origin))
	}
	return s.now()
}
