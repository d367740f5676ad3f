package events

import "google.golang.org/protobuf/encoding/protowire"

// Sequence numbers
//
// An eventsv1.Event may carry a sequence field (number 4): the event's
// number within its recording, set by a producer that resends events
// after a lost connection (package client), so that a server can drop
// what it already has. The Go event types do not hold it, since it is no
// part of the runtime's event: it travels beside them. AppendMarshal never
// writes it; AppendSequence adds it to an encoded message, and
// Decoder.Sequence reads it back.

// sequenceField is the field number of eventsv1.Event.sequence. It is part
// of the wire format: do not change it.
const sequenceField = 4

// AppendSequence appends the sequence field seq to the encoded
// eventsv1.Event message that ends dst (as AppendMarshal wrote it) and
// returns the extended slice. Protobuf lets fields come in any order, so
// the result decodes to the same event, with Sequence seq. A seq of 0
// appends nothing: 0 means unnumbered.
func AppendSequence(dst []byte, seq uint64) []byte {
	if seq == 0 {
		return dst
	}
	dst = append(dst, byte(sequenceField<<3|protowire.VarintType))
	return protowire.AppendVarint(dst, seq)
}

// Sequence returns the sequence field of the message the last successful
// Decode decoded (the last one when the field is repeated), 0 when it had
// none.
func (d *Decoder) Sequence() uint64 { return d.seq }

// Recorder clocks
//
// An eventsv1.Event may also carry recorder_clock (field 5): its
// time_unix_nano is a recorder's own clock reading, because the event
// reached the recorder without a time. A recorder sets it in its log, so
// that recovery knows whose clock each recording time is (the sessions
// table's clock column), and rlrec replay sets it on the events of a
// recording whose clock was the recorder's. Producers never set it.
// AppendMarshal never writes it; AppendRecorderClock adds it, and
// Decoder.RecorderClock and StreamReader.RecorderClock read it back.

// recorderClockField is the field number of eventsv1.Event.recorder_clock.
// It is part of the wire format: do not change it.
const recorderClockField = 5

// AppendRecorderClock appends the recorder_clock field, set, to the
// encoded eventsv1.Event message that ends dst, and returns the extended
// slice.
func AppendRecorderClock(dst []byte) []byte {
	return append(dst, byte(recorderClockField<<3|protowire.VarintType), 1)
}

// RecorderClock reports whether the message the last successful Decode
// decoded had recorder_clock set: its time is a recorder's clock reading.
func (d *Decoder) RecorderClock() bool { return d.recClk }

// Run nonces
//
// An eventsv1.Event may carry run_nonce (field 6): a nonce the producing
// run minted at its start (16 random bytes), the run's identity, set on
// every event of the run. Like the sequence number it is no part of the
// runtime's event and travels beside it: AppendMarshal never writes it,
// AppendRunNonce adds it, and Decoder.RunNonce and StreamReader.RunNonce
// read it back. What a recorder does with it is the recorder's business.

// runNonceField is the field number of eventsv1.Event.run_nonce. It is
// part of the wire format: do not change it.
const runNonceField = 6

// AppendRunNonce appends the run_nonce field to the encoded eventsv1.Event
// message that ends dst and returns the extended slice. An empty nonce
// appends nothing: empty means the producer has none.
func AppendRunNonce(dst []byte, nonce []byte) []byte {
	if len(nonce) == 0 {
		return dst
	}
	return appendBytesField(dst, runNonceField, nonce)
}

// RunNonce returns the run_nonce field of the message the last successful
// Decode decoded (the last one when the field is repeated), nil when it
// had none. The slice is shared with later calls while the nonce stays the
// same (a run's events all carry one): treat it as read-only.
func (d *Decoder) RunNonce() []byte { return d.lastNonce }
