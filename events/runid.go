package events

import "google.golang.org/protobuf/encoding/protowire"

// Content hashes
//
// Besides the run nonce (sequence.go), a recorder's log record of an event may also carry content_hash (field
// 7, fixed64): the hash of the event's message as its producer sent it
// (ContentHash), so that after a restart a server can tell a resent event
// (the same bytes) from different content under a used sequence number.
// Field 7 is never sent on the wire; only rlrec's log writes it.

// contentHashField is the field number of a log record's content_hash.
// It is part of the on-disk format: do not change it.
const contentHashField = 7

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
