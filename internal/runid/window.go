package runid

// WindowEvents is how many of a recording's last numbered events a
// Window keeps the hashes of: 8 bytes each, at most 1 MiB per
// recording.
const WindowEvents = 1 << 16

// Window holds the content hashes of a recording's events numbered
// first, first+1, ..., keeping at least the last WindowEvents of them (and at most twice as many). The zero
// Window is empty.
type Window struct {
	first  uint64
	hashes []uint64
}

// Add notes the hash h of the event numbered seq. A number after the last
// one kept continues the window (a gap starts it again at seq); a number
// already kept or before the window changes nothing.
func (w *Window) Add(seq, h uint64) {
	if seq == 0 || h == 0 {
		return
	}
	next := w.first + uint64(len(w.hashes))
	switch {
	case len(w.hashes) > 0 && seq < next:
		return
	case len(w.hashes) == 0 || seq > next:
		w.first, w.hashes = seq, w.hashes[:0]
	}
	if len(w.hashes) == 2*WindowEvents {
		// Drop the older half in one copy: amortised O(1) per event.
		n := copy(w.hashes, w.hashes[WindowEvents:])
		w.hashes = w.hashes[:n]
		w.first += WindowEvents
	}
	w.hashes = append(w.hashes, h)
}

// Get returns the hash kept for the event numbered seq, and false when
// the window does not hold it.
func (w *Window) Get(seq uint64) (uint64, bool) {
	if seq < w.first || seq-w.first >= uint64(len(w.hashes)) {
		return 0, false
	}
	return w.hashes[seq-w.first], true
}

// Len returns how many hashes the window holds.
func (w *Window) Len() int { return len(w.hashes) }
