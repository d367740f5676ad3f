package events

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Step copies
//
// A recorder that logs an event (AppendMarshal) and folds it into its state
// on another goroutine must copy it, since the caller may reuse the event
// once its hook returns. Decoding the logged bytes is such a copy, at the
// price of parsing them again; a StepCopier copies the three step kinds
// (ActionReceived, StepCompleted, ObservationEmitted: all but a few events
// of a session) directly, into recycled buffers.
//
// A copy equals what Decode returns for the bytes AppendMarshal writes of
// the event, field for field, nil and empty alike (a property test checks
// every generated event): strings are shared with the caller's event
// (strings are immutable), an id list equal to the one copied before is
// that same read-only []string (as a Decoder hands them out; a changed
// list is allocated), an empty id list or reward vector is nil, a
// leaf list is nil when the event's is, and else every leaf is a non-nil
// slice of one buffer with its capacity capped at its length; a space spec
// is a clone made once per spec pointer the caller passes (the runtime
// passes one per route), so that, as with a Decoder, an unchanged spec is
// the same pointer from one copy to the next; its time is the time the
// wire form holds (nanoseconds, UTC, the zero time for 0). A raw payload
// (RawAction, RawObservation) is copied like the payload, into the same
// buffer; the per-lane flags share one recycled []bool; an Infos map is a
// deep copy equal to a proto.Clone (cloneMetaMap), which a recycled copy
// overwrites in place when the next map has the same keys, kinds and list
// lengths (refillMetaMap: the runtime sends one shape of infos per route),
// so that a warm copy allocates only when the shape changes.

// StepCopy is a copy of one step event, with the buffers it lives in.
// Return it to its StepCopier with Recycle once nothing refers to the
// event or any slice reachable from it (its strings may be kept).
type StepCopy struct {
	// Event is the copy; At is its time as the wire form holds it.
	Event Event
	At    time.Time

	act     ActionReceived
	step    StepCompleted
	obs     ObservationEmitted
	leaves  [][]byte
	buf     []byte
	rewards []float64
	flags   []bool
	// stepInfos and obsInfos are the Infos clones of the last
	// StepCompleted and ObservationEmitted copied into this copy, kept
	// for the next to overwrite (refillMetaMap), with estimates of
	// their memory.
	stepInfos, obsInfos *spacesv1.MetaMap
	stepMem, obsMem     int
}

// StepCopier makes StepCopies. It is safe for concurrent use. The zero
// StepCopier is ready to use.
type StepCopier struct {
	specs [specCacheSize]atomic.Pointer[specClone]
	next  atomic.Uint32
	// lists holds the last episode id list and record id list copied,
	// shared read-only by every copy that carries them.
	lists [2]atomic.Pointer[idList]

	mu        sync.Mutex
	free      []*StepCopy
	freeBytes int64
	// MaxIdle bounds the idle copies' bytes (their Footprint); zero
	// keeps at most maxFreeCopies of them. Set it before any Recycle.
	MaxIdle int64
}

type idList struct{ ids []string }

// specClone is the clone made of one spec the caller passed.
type specClone struct{ src, clone *spacesv1.SpaceSpec }

// maxFreeCopies bounds the idle copies a StepCopier without MaxIdle
// keeps, and maxCopyBuf the payload buffer of a copy it keeps: an image
// batch's buffer is left to the garbage collector.
const (
	maxFreeCopies = 1024
	maxCopyBuf    = 64 << 10
)

// Copy returns a copy of ev observed at t, or nil when ev is not one of the
// step kinds (decode the logged bytes of those instead). Call it only for
// an event AppendMarshal accepted with t.
func (c *StepCopier) Copy(ev Event, t time.Time) *StepCopy {
	switch ev.(type) {
	case *ActionReceived, *StepCompleted, *ObservationEmitted:
	default:
		return nil
	}
	x := c.get()
	x.At = wireTime(t)
	switch e := ev.(type) {
	case *ActionReceived:
		x.act = ActionReceived{SessionID: e.SessionID, Route: e.Route, EpisodeID: e.EpisodeID,
			EpisodeRecordID: e.EpisodeRecordID, Step: e.Step, EnvIndex: e.EnvIndex}
		x.act.EpisodeIDs, x.act.EpisodeRecordIDs = c.list(0, e.EpisodeIDs), c.list(1, e.EpisodeRecordIDs)
		x.act.ActionSpace = c.spec(e.ActionSpace)
		x.act.Action, x.act.RawAction = x.copyLeaves(e.Action, e.RawAction)
		x.Event = &x.act
	case *StepCompleted:
		x.step = StepCompleted{SessionID: e.SessionID, Route: e.Route, EpisodeID: e.EpisodeID,
			EpisodeRecordID: e.EpisodeRecordID, Step: e.Step, EnvIndex: e.EnvIndex}
		if len(e.Rewards) > 0 {
			x.rewards = append(x.rewards[:0], e.Rewards...)
			x.step.Rewards = x.rewards[:len(x.rewards):len(x.rewards)]
		}
		x.step.Infos = cloneInfos(&x.stepInfos, &x.stepMem, e.Infos)
		x.step.Terminated, x.step.Truncated, x.step.AutoresetRoll = x.copyFlags(e.Terminated, e.Truncated, e.AutoresetRoll)
		x.step.PredictMs, x.step.StepMs = e.PredictMs, e.StepMs
		x.Event = &x.step
	case *ObservationEmitted:
		x.obs = ObservationEmitted{SessionID: e.SessionID, Route: e.Route, EpisodeID: e.EpisodeID,
			EpisodeRecordID: e.EpisodeRecordID, Step: e.Step, EnvIndex: e.EnvIndex, IsReset: e.IsReset,
			NumEnvs: e.NumEnvs}
		x.obs.EpisodeIDs, x.obs.EpisodeRecordIDs = c.list(0, e.EpisodeIDs), c.list(1, e.EpisodeRecordIDs)
		x.obs.ObservationSpace = c.spec(e.ObservationSpace)
		x.obs.Observation, x.obs.RawObservation = x.copyLeaves(e.Observation, e.RawObservation)
		x.obs.Infos = cloneInfos(&x.obsInfos, &x.obsMem, e.Infos)
		x.Event = &x.obs
	}
	return x
}

// Recycle takes back a copy; neither it nor its event may be used after.
// The copy is not cleared (the next Copy overwrites all of it): an idle
// copy keeps its last strings, spec and infos alive, within MaxIdle
// bytes, and the assembly goroutine that recycles writes nothing the next
// hook to take the copy would have to fetch from its core.
func (c *StepCopier) Recycle(x *StepCopy) {
	if cap(x.buf) > maxCopyBuf {
		x.buf, x.leaves = nil, nil
	}
	n := int64(x.Footprint())
	c.mu.Lock()
	if c.MaxIdle > 0 && c.freeBytes+n <= c.MaxIdle || c.MaxIdle <= 0 && len(c.free) < maxFreeCopies {
		c.free = append(c.free, x)
		c.freeBytes += n
	}
	c.mu.Unlock()
}

func (c *StepCopier) get() *StepCopy {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.free); n > 0 {
		x := c.free[n-1]
		c.free[n-1] = nil
		c.free = c.free[:n-1]
		c.freeBytes -= int64(x.Footprint())
		return x
	}
	return &StepCopy{}
}

// list returns id list k (0 episode ids, 1 record ids) of a copy, nil
// when empty: the list copied before when every id is the same, else a
// new exact-size list that then is.
func (c *StepCopier) list(k int, ids []string) []string {
	if len(ids) == 0 {
		return nil
	}
	if m := c.lists[k].Load(); m != nil && slices.Equal(m.ids, ids) {
		return m.ids
	}
	m := &idList{ids: slices.Clone(ids)}
	m.ids = m.ids[:len(ids):len(ids)]
	c.lists[k].Store(m)
	return m.ids
}

// copyLeaves copies a payload's leaf list and its raw one, as
// Decoder.leafList lays each out, into one buffer: each result is nil
// when its list is.
func (x *StepCopy) copyLeaves(leaves, raw [][]byte) ([][]byte, [][]byte) {
	if leaves == nil && raw == nil {
		return nil, nil
	}
	total := 0
	for _, l := range leaves {
		total += len(l)
	}
	for _, l := range raw {
		total += len(l)
	}
	// Non-nil even when empty: a present value's leaves are never nil.
	if x.buf == nil || cap(x.buf) < total {
		x.buf = make([]byte, total)
	}
	buf := x.buf[:total]
	if x.leaves == nil {
		x.leaves = make([][]byte, 0, len(leaves)+len(raw))
	}
	x.leaves = x.leaves[:0]
	off := 0
	for _, l := range leaves {
		end := off + copy(buf[off:], l)
		x.leaves = append(x.leaves, buf[off:end:end])
		off = end
	}
	n := len(x.leaves)
	for _, l := range raw {
		end := off + copy(buf[off:], l)
		x.leaves = append(x.leaves, buf[off:end:end])
		off = end
	}
	var a, b [][]byte
	if leaves != nil {
		a = x.leaves[:n:n]
	}
	if raw != nil {
		b = x.leaves[n:len(x.leaves):len(x.leaves)]
	}
	return a, b
}

// copyFlags copies the three per-lane flag lists into the copy's flag
// buffer, each nil when empty, as Decoder.flagLists lays them out.
func (x *StepCopy) copyFlags(t, u, r []bool) ([]bool, []bool, []bool) {
	if len(t)+len(u)+len(r) == 0 {
		return nil, nil, nil
	}
	x.flags = append(append(append(x.flags[:0], t...), u...), r...)
	part := func(lo, n int) []bool {
		if n == 0 {
			return nil
		}
		return x.flags[lo : lo+n : lo+n]
	}
	return part(0, len(t)), part(len(t), len(u)), part(len(t)+len(u), len(r))
}

// cloneInfos returns a copy of an infos map, nil for nil: *kept
// overwritten in place when m has its shape, else a new clone, which
// becomes *kept (of *mem bytes) when cloneMetaMap made it.
func cloneInfos(kept **spacesv1.MetaMap, mem *int, m *spacesv1.MetaMap) *spacesv1.MetaMap {
	if m == nil {
		return nil
	}
	if *kept != nil && refillMetaMap(*kept, m) {
		return *kept
	}
	c, n, ok := cloneMetaMap(m)
	if !ok {
		return proto.Clone(m).(*spacesv1.MetaMap)
	}
	*kept, *mem = c, n
	return c
}

// Footprint estimates the bytes the copy holds: the struct and the
// buffers its event lives in (strings and id lists, which copies share,
// apart). A queue of copies charges it.
func (x *StepCopy) Footprint() int {
	return int(unsafe.Sizeof(*x)) + cap(x.buf) + cap(x.leaves)*int(unsafe.Sizeof([]byte(nil))) +
		cap(x.rewards)*8 + cap(x.flags) + x.stepMem + x.obsMem
}

// spec returns the clone of s, made on the first copy that carries s.
func (c *StepCopier) spec(s *spacesv1.SpaceSpec) *spacesv1.SpaceSpec {
	if s == nil {
		return nil
	}
	for i := range c.specs {
		if e := c.specs[i].Load(); e != nil && e.src == s {
			return e.clone
		}
	}
	clone := proto.Clone(s).(*spacesv1.SpaceSpec)
	i := c.next.Add(1) % specCacheSize
	c.specs[i].Store(&specClone{src: s, clone: clone})
	return clone
}

// wireTime is t as its wire form holds it, and Decode returns it.
func wireTime(t time.Time) time.Time {
	ns, err := timeToNanos(t)
	if err != nil {
		return time.Time{}
	}
	return nanosToTime(ns)
}
