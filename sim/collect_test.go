package sim

import (
	"context"
	"slices"
	"sync"

	"github.com/rlrec/rlrec/events"
)

// collector records deep copies of every event it receives, in arrival
// order, per session.
type collector struct {
	mu  sync.Mutex
	all []events.Event
}

func (c *collector) add(ev events.Event) error {
	c.mu.Lock()
	c.all = append(c.all, ev)
	c.mu.Unlock()
	return nil
}

func (c *collector) bySession() map[string][]events.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := map[string][]events.Event{}
	for _, ev := range c.all {
		id, _ := ev.Header()
		m[id] = append(m[id], ev)
	}
	return m
}

func cloneSlabs(b [][]byte) [][]byte {
	if b == nil {
		return nil
	}
	out := make([][]byte, len(b))
	for i := range b {
		out[i] = slices.Clone(b[i])
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out
}

func (c *collector) OnEnvConnected(_ context.Context, ev *events.EnvConnected) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnModelConnected(_ context.Context, ev *events.ModelConnected) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnSessionStarted(_ context.Context, ev *events.SessionStarted) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnSessionEnded(_ context.Context, ev *events.SessionEnded) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnSessionFailed(_ context.Context, ev *events.SessionFailed) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnLog(_ context.Context, ev *events.Log) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnEpisodeStarted(_ context.Context, ev *events.EpisodeStarted) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnEpisodeCompleted(_ context.Context, ev *events.EpisodeCompleted) error {
	e := *ev
	return c.add(&e)
}
func (c *collector) OnActionReceived(_ context.Context, ev *events.ActionReceived) error {
	e := *ev
	e.EpisodeIDs = slices.Clone(ev.EpisodeIDs)
	e.EpisodeRecordIDs = slices.Clone(ev.EpisodeRecordIDs)
	e.Action = cloneSlabs(ev.Action)
	e.RawAction = cloneSlabs(ev.RawAction)
	return c.add(&e)
}
func (c *collector) OnStepCompleted(_ context.Context, ev *events.StepCompleted) error {
	e := *ev
	e.Rewards = slices.Clone(ev.Rewards)
	e.Terminated = slices.Clone(ev.Terminated)
	e.Truncated = slices.Clone(ev.Truncated)
	e.AutoresetRoll = slices.Clone(ev.AutoresetRoll)
	return c.add(&e)
}
func (c *collector) OnObservationEmitted(_ context.Context, ev *events.ObservationEmitted) error {
	e := *ev
	e.EpisodeIDs = slices.Clone(ev.EpisodeIDs)
	e.EpisodeRecordIDs = slices.Clone(ev.EpisodeRecordIDs)
	e.Observation = cloneSlabs(ev.Observation)
	e.RawObservation = cloneSlabs(ev.RawObservation)
	return c.add(&e)
}
func (c *collector) OnTelemetrySnapshot(_ context.Context, ev *events.TelemetrySnapshot) error {
	e := *ev
	e.Snapshot.Rows = slices.Clone(ev.Snapshot.Rows)
	return c.add(&e)
}

func (c *collector) OnRelayAdvisory(_ context.Context, ev *events.RelayAdvisory) error {
	e := *ev
	return c.add(&e)
}
