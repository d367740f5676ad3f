package events

import (
	"context"
	"fmt"
	"time"
)

// Hooks observes a runtime's events: one method per event type. One Hooks
// value serves every concurrent route; within one session, events arrive in
// order, one at a time, except OnTelemetrySnapshot, which may run
// concurrently with the session's other events.
//
// A method must not retain its event, or any slice reachable from it, after
// it returns. A returned error is reported by the caller; it does not stop
// the runtime.
type Hooks interface {
	OnEnvConnected(ctx context.Context, ev *EnvConnected) error
	OnModelConnected(ctx context.Context, ev *ModelConnected) error
	OnSessionStarted(ctx context.Context, ev *SessionStarted) error
	OnSessionEnded(ctx context.Context, ev *SessionEnded) error
	OnSessionFailed(ctx context.Context, ev *SessionFailed) error
	OnLog(ctx context.Context, ev *Log) error
	OnEpisodeStarted(ctx context.Context, ev *EpisodeStarted) error
	OnEpisodeCompleted(ctx context.Context, ev *EpisodeCompleted) error
	OnActionReceived(ctx context.Context, ev *ActionReceived) error
	OnStepCompleted(ctx context.Context, ev *StepCompleted) error
	OnObservationEmitted(ctx context.Context, ev *ObservationEmitted) error
	OnTelemetrySnapshot(ctx context.Context, ev *TelemetrySnapshot) error
	// OnRelayAdvisory (rlmesh 0.1's relay_advisory hook).
	OnRelayAdvisory(ctx context.Context, ev *RelayAdvisory) error
}

// TimedHooks is a Hooks that also takes each event with the time of its
// hook call. rlmesh's events carry no time: whoever receives the hook call
// stamps it. A producer that knows that time better than the receiver's
// clock (a simulated runtime reading its simulated clock, a stream being
// replayed) hands events over with DispatchAt, which calls RecordAt on a
// TimedHooks, so that the time travels with the event instead of being
// stamped again. The recorder (recorder.Recorder), the serve client
// (client.Client) and stream writers (sim.StreamHooks) implement it.
//
// RecordAt takes the event observed at t (a non-zero time). It is bound
// by the rules of the Hooks methods: it must not retain ev. A type that
// embeds a TimedHooks to override some of its methods must override
// RecordAt too, or timed events bypass the overrides.
type TimedHooks interface {
	Hooks
	RecordAt(ctx context.Context, ev Event, t time.Time) error
}

// DispatchAt hands ev, observed at t, to h: through RecordAt when h is a
// TimedHooks and t is not the zero time, else through the method that
// handles ev's type (Dispatch), which stamps it with h's own clock.
func DispatchAt(ctx context.Context, h Hooks, ev Event, t time.Time) error {
	if th, ok := h.(TimedHooks); ok && !t.IsZero() {
		if ev == nil {
			return fmt.Errorf("dispatch: %w", ErrNilEvent)
		}
		return th.RecordAt(ctx, ev, t)
	}
	return Dispatch(ctx, h, ev)
}

// NoopHooks implements Hooks by doing nothing. Embed it to implement only
// the methods you need.
type NoopHooks struct{}

var _ Hooks = NoopHooks{}

func (NoopHooks) OnEnvConnected(context.Context, *EnvConnected) error             { return nil }
func (NoopHooks) OnModelConnected(context.Context, *ModelConnected) error         { return nil }
func (NoopHooks) OnSessionStarted(context.Context, *SessionStarted) error         { return nil }
func (NoopHooks) OnSessionEnded(context.Context, *SessionEnded) error             { return nil }
func (NoopHooks) OnSessionFailed(context.Context, *SessionFailed) error           { return nil }
func (NoopHooks) OnLog(context.Context, *Log) error                               { return nil }
func (NoopHooks) OnEpisodeStarted(context.Context, *EpisodeStarted) error         { return nil }
func (NoopHooks) OnEpisodeCompleted(context.Context, *EpisodeCompleted) error     { return nil }
func (NoopHooks) OnActionReceived(context.Context, *ActionReceived) error         { return nil }
func (NoopHooks) OnStepCompleted(context.Context, *StepCompleted) error           { return nil }
func (NoopHooks) OnObservationEmitted(context.Context, *ObservationEmitted) error { return nil }
func (NoopHooks) OnTelemetrySnapshot(context.Context, *TelemetrySnapshot) error   { return nil }
func (NoopHooks) OnRelayAdvisory(context.Context, *RelayAdvisory) error           { return nil }

// Dispatch calls the method of h that handles ev's type.
func Dispatch(ctx context.Context, h Hooks, ev Event) error {
	switch e := ev.(type) {
	case *EnvConnected:
		return h.OnEnvConnected(ctx, e)
	case *ModelConnected:
		return h.OnModelConnected(ctx, e)
	case *SessionStarted:
		return h.OnSessionStarted(ctx, e)
	case *SessionEnded:
		return h.OnSessionEnded(ctx, e)
	case *SessionFailed:
		return h.OnSessionFailed(ctx, e)
	case *Log:
		return h.OnLog(ctx, e)
	case *EpisodeStarted:
		return h.OnEpisodeStarted(ctx, e)
	case *EpisodeCompleted:
		return h.OnEpisodeCompleted(ctx, e)
	case *ActionReceived:
		return h.OnActionReceived(ctx, e)
	case *StepCompleted:
		return h.OnStepCompleted(ctx, e)
	case *ObservationEmitted:
		return h.OnObservationEmitted(ctx, e)
	case *TelemetrySnapshot:
		return h.OnTelemetrySnapshot(ctx, e)
	case *RelayAdvisory:
		return h.OnRelayAdvisory(ctx, e)
	case nil:
		return fmt.Errorf("dispatch: %w", ErrNilEvent)
	}
	return fmt.Errorf("dispatch %T: %w", ev, ErrUnknownKind)
}
