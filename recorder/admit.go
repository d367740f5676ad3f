package recorder

import (
	"errors"
	"fmt"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
)

// admit refuses a SessionStarted for a recording that ROOT already holds
// (a stream ingested twice, or a prefix of it), and every later event of a
// refused recording, before anything is logged: nothing recorded changes
// and nothing is duplicated. A second SessionStarted for a recording this
// recorder is still recording is not refused; the assembler counts it as
// a duplicate.
func (r *Recorder) admit(ev events.Event) error {
	sid, route := ev.Header()
	rec := hive.Recording{SessionID: sid, EnvID: route.EnvID}
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	if _, ok := r.refused[rec]; ok {
		return fmt.Errorf("%s of %s: %w in %s (its SessionStarted was refused)", ev.Kind(), rec, ErrRecordingExists, r.root)
	}
	if ev.Kind() != events.KindSessionStarted {
		return nil
	}
	// A recording whose files this recorder wrote itself, from events
	// that came before their SessionStarted (a stream out of order), is
	// not one that ROOT already held: the assembler counts it.
	var refusal error
	if _, ok := r.admitted[rec]; ok || !r.holds(rec) || r.w.own.has(rec) {
		// On a shared ROOT, another writer's claim refuses it (store.Claim).
		err := store.Claim(r.fs, r.state, r.st, rec, ok)
		if err == nil {
			r.admitted[rec] = struct{}{}
			return nil
		}
		if !errors.Is(err, store.ErrExists) {
			return fmt.Errorf("SessionStarted of %s in %s: %w", rec, r.root, err)
		}
		refusal = fmt.Errorf("SessionStarted of %s in %s: %w: %w", rec, r.root, ErrRecordingExists, err)
	} else {
		refusal = fmt.Errorf("SessionStarted of %s: %w in %s; nothing of it is recorded again (record into another ROOT to keep both)", rec, ErrRecordingExists, r.root)
	}
	r.refused[rec] = struct{}{}
	r.refusedN.Add(1)
	return refusal
}

// isRefused reports whether rec's SessionStarted was refused (admit).
func (r *Recorder) isRefused(rec hive.Recording) bool {
	if r.refusedN.Load() == 0 {
		return false
	}
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	_, ok := r.refused[rec]
	return ok
}

// holds reports whether any table of ROOT has a published file of rec.
func (r *Recorder) holds(rec hive.Recording) bool {
	for _, t := range hive.Tables {
		if ok, _ := r.st.HasPart(hive.RecordingPartition(t.Name, rec).Rel(), 1); ok {
			return true
		}
	}
	return false
}
