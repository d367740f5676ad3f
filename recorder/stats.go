package recorder

import "github.com/rlrec/rlrec/internal/store"

// Stats are running totals of a Recorder, for monitoring (rlrec serve's
// /metrics).
type Stats struct {
	// EpisodesWritten counts the episodes whose files are durable since
	// Open, completed or incomplete, those recovery wrote included.
	EpisodesWritten int64
	// Problems counts the input problems counted since Open (the
	// sessions table's problems column, summed over recordings).
	Problems int64
	// Repeated counts, among those problems, the events dropped because
	// they repeat what their recording has: steps whose step counter
	// goes back within their episode (repeated_step), a second
	// SessionStarted, events after the session's end.
	Repeated int64
	// Failed is set once a write or sync error stopped the recorder.
	Failed bool
	// StoreRequests counts the requests an object store ROOT (WithStore
	// with an s3:// ROOT) sent since Open, by kind ("put",
	// "upload_part", "list", ...: store.Op), each once however often it
	// was retried; StoreAttempts counts the HTTP requests, retries
	// included. Both are zero for a directory ROOT.
	StoreRequests map[string]int64
	StoreAttempts int64
	// Recordings counts the recordings whose SessionStarted this
	// recorder accepted since Open.
	Recordings int64
}

// Stats returns the recorder's running totals. It is safe to call
// concurrently with anything else.
func (r *Recorder) Stats() Stats {
	completed, incomplete, _ := r.w.counts()
	st := Stats{EpisodesWritten: int64(completed + incomplete), Failed: r.err() != nil}
	if a := r.asm; a != nil {
		st.Problems = a.Problems()
		st.Repeated = a.Repeats()
	}
	r.admitMu.Lock()
	st.Recordings = int64(len(r.admitted))
	r.admitMu.Unlock()
	if c, ok := r.st.(interface{ Requests() store.Requests }); ok {
		req := c.Requests()
		st.StoreRequests, st.StoreAttempts = req.ByOp(), req.Attempts
	}
	return st
}
