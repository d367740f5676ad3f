package runid

import (
	"bytes"
	"encoding/hex"

	"github.com/zeebo/xxh3"
)

// NonceBytes is the length of a nonce a run draws (the Go client, the
// Python capture and the Rust forwarder draw 16 random bytes).
const NonceBytes = 16

// derivedPrefix begins every derived nonce, so that one is never taken
// for a drawn one. It is part of the on-disk format (a derived nonce is
// kept in the log and in published files): do not change it.
const derivedPrefix = "rlrec-derived:"

// ContentHash is the hash of an event's message as its producer sent it:
// 64-bit XXH3, never 0 (0 means none in a log record).
func ContentHash(msg []byte) uint64 {
	if h := xxh3.Hash(msg); h != 0 {
		return h
	}
	return 1
}

// Derive returns the nonce of a run that sent none, derived from the
// message of its recording's first event (numbered 1): a prefix that no
// drawn nonce of NonceBytes has, and the message's 128-bit XXH3.
func Derive(first []byte) []byte {
	h := xxh3.Hash128(first).Bytes()
	return append([]byte(derivedPrefix), h[:]...)
}

// Derived reports whether nonce was derived (Derive), not drawn by a
// producer.
func Derived(nonce []byte) bool { return bytes.HasPrefix(nonce, []byte(derivedPrefix)) }

// Describe names the run of nonce for a message: "run 0123...ef" for a
// drawn nonce, "a run without a nonce (first event's hash 0123...)" for a
// derived one, "a run without a nonce" for none.
func Describe(nonce []byte) string {
	switch {
	case len(nonce) == 0:
		return "a run without a nonce"
	case Derived(nonce):
		return "a run without a nonce (its first event's hash " + hex.EncodeToString(nonce[len(derivedPrefix):]) + ")"
	}
	return "run " + hex.EncodeToString(nonce)
}

// Format is nonce as a published file keeps it (rlrec.run_nonce): hex,
// with a derived nonce's prefix kept as text.
func Format(nonce []byte) string {
	if Derived(nonce) {
		return derivedPrefix + hex.EncodeToString(nonce[len(derivedPrefix):])
	}
	return hex.EncodeToString(nonce)
}

// Parse reads a nonce as Format wrote it.
func Parse(s string) ([]byte, error) {
	if rest, ok := bytes.CutPrefix([]byte(s), []byte(derivedPrefix)); ok {
		h, err := hex.DecodeString(string(rest))
		if err != nil {
			return nil, err
		}
		return append([]byte(derivedPrefix), h...), nil
	}
	return hex.DecodeString(s)
}
