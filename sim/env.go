package sim

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// env is a vectorized built-in environment together with its built-in
// policy. All payloads are N-lane batch slabs, one per leaf in canonical
// pre-order; the slices returned by observe and act are owned by the env
// and overwritten by the next call.
type env interface {
	// spaces returns the observation and action specs; the same pointers
	// on every call.
	spaces() (obs, act *spacesv1.SpaceSpec)
	// reset starts a new episode on lane.
	reset(lane int)
	// step applies lane's part of the action slabs to lane and returns the
	// reward and whether the env ended the episode (terminated) or cut it
	// (truncated, an env-side time limit).
	step(lane int, action [][]byte) (reward float64, terminated, truncated bool)
	// observe returns the current N-lane observation slabs.
	observe() [][]byte
	// act returns the built-in policy's N-lane action slabs for the
	// current observation.
	act() [][]byte
	// finalInfo returns the info map reported when lane's episode ends, or
	// nil.
	finalInfo(lane int) *spacesv1.MetaMap
}

// laneObserver is an env that can observe one lane alone, for a
// lane-served env's groups: observeLane returns the n-lane slabs with
// lane's part current (the others may be stale).
type laneObserver interface {
	observeLane(lane int) [][]byte
}

// envFactory builds an env with n lanes. envRNG drives the dynamics and
// resets, policyRNG the built-in policy.
type envFactory func(n int, envRNG, policyRNG *rand.Rand) env

var envFactories = map[string]envFactory{
	"cartpole":   newCartPole,
	"pick-place": newPickPlace,
	"all-leaves": newAllLeaves,
}

// Envs returns the names of the built-in environments, sorted.
func Envs() []string {
	names := make([]string, 0, len(envFactories))
	for name := range envFactories {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func lookupEnv(name string) (envFactory, error) {
	f, ok := envFactories[name]
	if !ok {
		return nil, fmt.Errorf("env %q (want one of %v): %w", name, Envs(), ErrUnknownEnv)
	}
	return f, nil
}
