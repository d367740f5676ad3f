package events

import "google.golang.org/protobuf/encoding/protowire"

// Run nonces and content hashes
//
// An eventsv1.Event may carry run_nonce (field 6): bytes its producer
// drew at random when the run began (16 of them from rlrec's clients and
// captures), the same on every event of the run, so that a recorder can
// tell a resend of a run's events from another run that reuses its
// session and env ids. Like the sequence number it travels beside the Go
// event types: AppendRunNonce adds it to an encoded message, and
// Decoder.RunNonce reads it back.
//
// A recorder's log record of an event may also carry content_hash (field
// 7, fixed64): the hash of the event's message as its producer sent it
// (ContentHash), so that after a restart a server can tell a resent event
// (the same bytes) from different content under a used sequence number.
// Field 7 is never sent on the wire; only rlrec's log writes it.

// The field numbers of eventsv1.Event.run_nonce and of a log record's
// content_hash. They are part of the wire and on-disk formats: do not
// change them.
const (
	runNonceField    = 6
	contentHashField = 7
)

// AppendRunNonce appends the run_nonce field to the encoded
// eventsv1.Event message that ends dst and returns the extended slice. An
// empty nonce appends nothing.
func AppendRunNonce(dst, nonce []byte) []byte {
	if len(nonce) == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, runNonceField, protowire.BytesType)
	return protowire.AppendBytes(dst, nonce)
}

// RunNonce returns the run_nonce field of the message the last
// successful Decode decoded, nil when it had none. It aliases the decoded
// message: copy it to keep it past the message's life.
func (d *Decoder) RunNonce() []byte { return d.nonce }

// AppendContentHash appends a log record's content_hash field (h, not
// 0) to the encoded message that ends dst and returns the extended slice.
// A hash of 0 appends nothing: 0 means none.
func AppendContentHash(dst []byte, h uint64) []byte {
	if h == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, contentHashField, protowire.Fixed64Type)
	return protowire.AppendFixed64(dst, h)
}

// ContentHash returns the content_hash field of the log record the last
// successful Decode decoded, 0 when it had none.
func (d *Decoder) ContentHash() uint64 { return d.hash }
