package runid

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/zeebo/xxh3"
)

// # Content chain
//
// A recording's content chain proves which events of its producer's
// stream a ROOT holds: the number of its events numbered 1, 2, ... n
// without a gap, and a hash chained over their content hashes
// (ContentHash of each message as the producer sent it):
//
//	chain(0) = 0
//	chain(k) = XXH3-64(chain(k-1) as 8 bytes little endian ‖ ContentHash(event k) as 8 bytes little endian)
//
// The recorder keeps it in its assembly state and snapshots, and the
// recording's published sessions, logs and telemetry files keep it under
// rlrec.content_chain as "n:hash" (n decimal, the hash 16 hex digits).
// 'rlrec ingest' of a stream whose recording a ROOT holds in part
// recomputes the chain of the stream's first n events of the recording
// and resumes only when it is the same. The scheme and the text form are
// part of the on-disk format: do not change them.

// Chain is a recording's content chain: Events events numbered 1 to
// Events, chained into Hash.
type Chain struct {
	Events uint64
	Hash   uint64
}

// Add returns the chain extended by the event numbered seq with content
// hash hash. Only the next number extends it: a number already chained
// (a resend), one after a gap, an unnumbered event (0) or an event
// without a hash (0) leave it as it is, so a chain always covers events
// 1 to Events and nothing else.
func (c Chain) Add(seq, hash uint64) Chain {
	if seq != c.Events+1 || hash == 0 {
		return c
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], c.Hash)
	binary.LittleEndian.PutUint64(b[8:], hash)
	return Chain{Events: seq, Hash: xxh3.Hash(b[:])}
}

// String is the chain as published files keep it: "n:hash".
func (c Chain) String() string {
	return strconv.FormatUint(c.Events, 10) + ":" + fmt.Sprintf("%016x", c.Hash)
}

// ParseChain reads a chain as String wrote it.
func ParseChain(s string) (Chain, error) {
	n, h, ok := strings.Cut(s, ":")
	if !ok || len(h) != 16 {
		return Chain{}, fmt.Errorf("content chain %q is not n:hash (hash 16 hex digits)", s)
	}
	events, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return Chain{}, fmt.Errorf("content chain %q: its event count is not a number", s)
	}
	hash, err := strconv.ParseUint(h, 16, 64)
	if err != nil {
		return Chain{}, fmt.Errorf("content chain %q: its hash is not hex", s)
	}
	return Chain{Events: events, Hash: hash}, nil
}
