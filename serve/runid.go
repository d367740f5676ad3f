package serve

import (
	"bytes"
	"fmt"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/recorder"
)

// Run identity and content binding (internal/runid has the scheme).
//
// Every recording the server has seen has a run: the nonce of the run
// whose events it handed over (carried by the events, or derived from a
// run's first event when they carry none), known from the log or the
// published files after a restart. An event of another run under the
// recording's ids is refused, and so is every later event of that
// recording on the same stream, with a message naming both runs: a resend
// is the same run, another run is never spliced into the recording.
//
// A resent event (a number the recording already has) must be the event
// that number was given to: its content hash is compared with the one
// kept for the number, and an event whose content differs is refused and
// counted (rlrec_serve_content_mismatches_total). When the run was not
// told by a drawn nonce (its events carry none), the rest of that
// recording's events on the stream are refused with it: it is another
// run. A resend older than the kept hashes is dropped unchecked and
// counted (rlrec_serve_unverified_resends_total).

// checkRun refuses an event of another run than the recording's.
func (st *stream) checkRun(rs *recordingState, key events.Recording, ev events.Event, seq uint64, run recorder.Run) *ingestv1.Refusal {
	if !rs.nonceKnown {
		return nil
	}
	other := false
	switch {
	case len(run.Nonce) > 0:
		other = !bytes.Equal(run.Nonce, rs.nonce)
	default:
		// No nonce and not the first event: only a recording of a run
		// without one may be continued without one.
		other = !runid.Derived(rs.nonce)
	}
	if !other {
		return nil
	}
	return st.refuseRun(key, ev, seq, fmt.Sprintf("%s of session %q (env_id %q) is of %s, but the recording belongs to %s: another run reuses the recording's ids; nothing of this run is recorded under them (give it another session id)",
		ev.Kind(), key.SessionID, key.EnvID, runid.Describe(run.Nonce), runid.Describe(rs.nonce)))
}

// checkResend refuses a resent event (seq at most the recording's last)
// whose content differs from the event seq was given to.
func (st *stream) checkResend(rs *recordingState, key events.Recording, ev events.Event, seq uint64, run recorder.Run) *ingestv1.Refusal {
	s := st.s
	h, ok := rs.hashes.Get(seq)
	if !ok {
		s.m.unverified.Add(1)
		return nil
	}
	if h == run.Hash {
		return nil
	}
	s.m.contentMismatch.Add(1)
	msg := fmt.Sprintf("%s of session %q (env_id %q) has sequence %d, which the recording already has with other content (%s): a resent event must be the same event; not recorded",
		ev.Kind(), key.SessionID, key.EnvID, seq, runid.Describe(rs.nonce))
	if len(run.Nonce) > 0 && !runid.Derived(run.Nonce) && rs.nonceKnown {
		// The same run (checkRun passed) resending other content: this
		// event alone is refused.
		return &ingestv1.Refusal{SessionId: key.SessionID, EnvId: key.EnvID, Sequence: seq,
			Reason: ingestv1.RefusalReason_REFUSAL_REASON_RECORDER, Message: msg}
	}
	// A run without a nonce of its own that differs: another run.
	return st.refuseRun(key, ev, seq, msg+"; it is another run than "+runid.Describe(rs.nonce)+", so nothing more of it is recorded under these ids (give it another session id)")
}

// refuseRun refuses the event and every later event of the recording key
// on this stream.
func (st *stream) refuseRun(key events.Recording, ev events.Event, seq uint64, msg string) *ingestv1.Refusal {
	if st.refused == nil {
		st.refused = make(map[events.Recording]string)
	}
	st.refused[key] = msg
	st.s.m.refusedRuns.Add(1)
	st.s.log.Warn("another run reuses a recording's ids: refused", "session", key.SessionID, "env", key.EnvID, "kind", ev.Kind().String(), "sequence", seq, "detail", msg)
	return &ingestv1.Refusal{SessionId: key.SessionID, EnvId: key.EnvID, Sequence: seq,
		Reason: ingestv1.RefusalReason_REFUSAL_REASON_RECORDER, Message: msg}
}
