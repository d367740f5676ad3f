package recorder

import (
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
)

// ownRecordings is a set of recordings, safe for concurrent use: those
// whose files this recorder was the first to write, so that a
// SessionStarted after their files (a stream whose events came out of
// order) is not refused as a recording ROOT already held.
type ownRecordings struct {
	mu sync.Mutex
	m  map[hive.Recording]struct{}
}

func (o *ownRecordings) add(rec hive.Recording) {
	o.mu.Lock()
	if o.m == nil {
		o.m = make(map[hive.Recording]struct{})
	}
	o.m[rec] = struct{}{}
	o.mu.Unlock()
}

func (o *ownRecordings) has(rec hive.Recording) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.m[rec]
	return ok
}
