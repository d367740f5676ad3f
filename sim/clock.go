package sim

import (
	"sync"
	"time"
)

// StepClock returns a clock for Config.Clock that starts at start and
// advances by tick on every call. Runs that use it are reproducible byte for
// byte. It is safe for concurrent use; sessions sharing one clock still
// interleave their calls nondeterministically, so give each session its own
// when the streams must be reproducible.
func StepClock(start time.Time, tick time.Duration) func() time.Time {
	var mu sync.Mutex
	next := start
	return func() time.Time {
		mu.Lock()
		t := next
		next = next.Add(tick)
		mu.Unlock()
		return t
	}
}
