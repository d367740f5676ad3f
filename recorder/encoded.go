package recorder

import (
	"context"
	"fmt"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/logrec"
)

// Events that come encoded
//
// A server that takes events from producers in other processes (rlrec
// serve) receives each one as an eventsv1.Event message and has to decode
// it to learn its recording and sequence number. RecordEncoded takes that
// message together with what was decoded from it: the log record is the
// message as it came (a logrec.TypeEvent record is exactly one eventsv1.Event
// message, time and sequence fields included), and the pipeline applies
// the decoded event instead of decoding the record again. The event is
// then encoded once (by the producer) and decoded once (by the server),
// instead of being decoded, encoded again for the log and decoded again by
// the pipeline. The caller's decode is what validates the message: one
// that does not decode never reaches the log.

// RecordEncoded hands over an event that a producer encoded, like
// RecordSequenced: msg is one eventsv1.Event message (without a length
// prefix), and ev, t and seq are what an events.Decoder made of it (Decode
// and Sequence): the event, its time and its sequence number (0 when it
// has none). The recorder logs msg as it is and records ev at t; it relies
// on ev being msg's decoding, since recovery decodes the logged msg again.
// t must not be the zero time (a message without a time field is recorded
// with RecordSequenced at a time of the caller's choosing). msg is copied;
// the caller keeps it. ev passes to the recorder.
func (r *Recorder) RecordEncoded(ctx context.Context, msg []byte, ev events.Event, t time.Time, seq uint64) error {
	return r.RecordEncodedRun(ctx, msg, ev, t, seq, Run{})
}

// RecordEncodedRun is RecordEncoded of an event of the run run (see
// Run): its log record is msg with, appended, the run's nonce when the
// nonce was derived (run.Derived: msg has none of its own) and the
// event's content hash.
func (r *Recorder) RecordEncodedRun(ctx context.Context, msg []byte, ev events.Event, t time.Time, seq uint64, run Run) error {
	if ev == nil {
		return fmt.Errorf("record encoded event: %w", events.ErrNilEvent)
	}
	sid, _ := ev.Header()
	if t.IsZero() {
		return fmt.Errorf("record encoded %s of session %q: the message has no time: record it with RecordSequenced", ev.Kind(), sid)
	}
	if err := r.checkSize(ev, len(msg)+1+run.recordBytes()); err != nil {
		return err
	}
	if ev.Kind() == events.KindSessionStarted || r.refusedN.Load() > 0 {
		if err := r.admit(ev); err != nil {
			return err
		}
	}
	bp := r.bufs.Get(len(msg) + run.recordBytes())
	*bp = append(append((*bp)[:0], byte(logrec.TypeEvent)), msg...)
	if run.Derived {
		*bp = events.AppendRunNonce(*bp, run.Nonce)
	}
	*bp = events.AppendContentHash(*bp, run.Hash)
	// The decoded event waits in the queue, its record only in the log:
	// the queue's budget is charged its payload and the record's length
	// (handOverDecoded).
	payload := logrec.PayloadBytes(ev)
	if seq != 0 || !run.empty() {
		ev = &logrec.Sequenced{Event: ev, Seq: seq, Nonce: run.Nonce, Hash: run.Hash}
	}
	return r.handOverDecoded(ctx, bp, nil, ev, t, payload, false)
}
