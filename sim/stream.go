package sim

import (
	"context"
	"sync"
	"time"

	"github.com/rlrec/rlrec/events"
)

// StreamHooks is a Hooks that writes every event it receives to an event
// stream (see events.StreamWriter) with the time of its hook call: it is
// an events.TimedHooks, so a simulated session hands it each event with
// its simulated clock's reading, and a reproducible run (StepClock) gives
// a reproducible stream, times included, that records the same tables
// however often it is ingested. Its Hooks methods, called by a producer
// without a clock, write no time (the recorder ingesting the stream then
// stamps its own). It is safe for concurrent use: one stream can take
// several concurrent sessions. A write error is returned by that call and
// every later one (the stream writer's error is sticky).
type StreamHooks struct {
	mu sync.Mutex
	w  *events.StreamWriter
}

// NewStreamHooks returns hooks writing to w. The caller flushes and closes
// what w writes to.
func NewStreamHooks(w *events.StreamWriter) *StreamHooks { return &StreamHooks{w: w} }

var _ events.TimedHooks = (*StreamHooks)(nil)

func (h *StreamHooks) write(ev events.Event) error {
	return h.RecordAt(context.Background(), ev, time.Time{})
}

// RecordAt writes ev observed at t (the zero t: no time).
func (h *StreamHooks) RecordAt(_ context.Context, ev events.Event, t time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.w.WriteAt(ev, t)
}

func (h *StreamHooks) OnEnvConnected(_ context.Context, ev *events.EnvConnected) error {
	return h.write(ev)
}
func (h *StreamHooks) OnModelConnected(_ context.Context, ev *events.ModelConnected) error {
	return h.write(ev)
}
func (h *StreamHooks) OnSessionStarted(_ context.Context, ev *events.SessionStarted) error {
	return h.write(ev)
}
func (h *StreamHooks) OnSessionEnded(_ context.Context, ev *events.SessionEnded) error {
	return h.write(ev)
}
func (h *StreamHooks) OnSessionFailed(_ context.Context, ev *events.SessionFailed) error {
	return h.write(ev)
}
func (h *StreamHooks) OnLog(_ context.Context, ev *events.Log) error { return h.write(ev) }
func (h *StreamHooks) OnEpisodeStarted(_ context.Context, ev *events.EpisodeStarted) error {
	return h.write(ev)
}
func (h *StreamHooks) OnEpisodeCompleted(_ context.Context, ev *events.EpisodeCompleted) error {
	return h.write(ev)
}
func (h *StreamHooks) OnActionReceived(_ context.Context, ev *events.ActionReceived) error {
	return h.write(ev)
}
func (h *StreamHooks) OnStepCompleted(_ context.Context, ev *events.StepCompleted) error {
	return h.write(ev)
}
func (h *StreamHooks) OnObservationEmitted(_ context.Context, ev *events.ObservationEmitted) error {
	return h.write(ev)
}
func (h *StreamHooks) OnTelemetrySnapshot(_ context.Context, ev *events.TelemetrySnapshot) error {
	return h.write(ev)
}

func (h *StreamHooks) OnRelayAdvisory(_ context.Context, ev *events.RelayAdvisory) error {
	return h.write(ev)
}
