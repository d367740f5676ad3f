package recorder

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// Open opens (creating it if needed) the output ROOT, takes its lock, and
// recovers whatever a previous recorder left in the log: completed episodes
// get their files, open ones are written as incomplete and their sessions
// as crashed. It then accepts events.
func Open(root string, opts ...Option) (*Recorder, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	r := &Recorder{root: root, opts: o, fs: o.fs, fatal: &fatal{root: root, log: o.logger},
		refused: map[hive.Recording]struct{}{}, admitted: map[hive.Recording]struct{}{}}
	r.st, r.state = o.st, o.stateDir
	if r.st == nil {
		r.st, r.state = store.NewFS(o.fs, root), filepath.Join(root, stateDir)
	}
	r.budget = memoryBudget(o.memoryBudget)
	r.maxEvent = o.maxEvent
	if r.maxEvent == 0 {
		r.maxEvent = r.budget.maxEvent()
	}
	r.bufs.Max = r.budget.idleBuffers()
	r.copies.MaxIdle = r.budget.idleBuffers()
	state := r.state
	if err := r.fs.MkdirAll(state); err != nil {
		return nil, fmt.Errorf("open %s: create %s: %w", root, state, err)
	}
	lock, err := r.fs.Lock(filepath.Join(state, lockName))
	if err != nil {
		if errors.Is(err, vfs.ErrLocked) {
			return nil, fmt.Errorf("open %s: %w (%v); close the other recorder or choose another directory", root, ErrLocked, err)
		}
		return nil, fmt.Errorf("open %s: lock: %w", root, err)
	}
	r.lock = lock
	if r.layoutFile, err = store.OpenLayout(r.fs, r.state, r.st, o.layout); err != nil {
		lock.Close()
		return nil, err
	}
	r.layout = r.layoutFile.Layout()
	if err := r.start(); err != nil {
		lock.Close()
		return nil, err
	}
	return r, nil
}

func (r *Recorder) start() error {
	o := &r.opts
	dir := filepath.Join(r.state, logDir)
	if err := r.fs.MkdirAll(dir); err != nil {
		return fmt.Errorf("open %s: create %s: %w", r.root, dir, err)
	}
	r.w = newWriter(r)
	r.asm = assembly.New(r.w, r.budget.episodes())
	r.asm.KeepHashes(o.resume)
	if err := r.recover(); err != nil {
		r.w.stop()
		return err
	}
	l, err := wal.Open(r.fs, dir, wal.Options{
		SyncInterval: o.syncInterval,
		MaxPending:   r.budget.logPending(),
		SegmentSize:  o.segmentSize,
		Salvage:      o.salvage,
		Logger:       o.logger,
	})
	if err != nil {
		r.w.stop()
		return fmt.Errorf("open %s: log: %w", r.root, err)
	}
	r.log = l
	r.w.setPhase(live{log: r.appends()})
	if r.resumed > 0 {
		r.startResumed()
	}
	r.queueMax = r.budget.queue()
	r.queueBudget = newQueueRoom(r.queueMax)
	r.queue = newIntake(r.queueMax)
	r.decoded = make(chan decodedItem, decodedQueue)
	r.assemblyDone = make(chan struct{})
	go r.decoding()
	go r.assembly()
	return nil
}

// submit is the hook path: the event carries no time, so the recorder
// stamps it with its own clock (RecordAt with the zero time).
func (r *Recorder) submit(ctx context.Context, ev events.Event) error {
	return r.RecordAt(ctx, ev, time.Time{})
}

// RecordAt hands over an event observed at time t (the recording time its
// rows get): it encodes the event into a log record, queues it for the
// pipeline and, under SyncEach, waits until it is durable. Ingesting a
// recorded stream uses it to keep the stream's times, and a simulated
// runtime (events.DispatchAt) to hand over its clock's. The zero t means
// the event came without a time, as a hook call does: the recorder stamps
// it with its own clock and notes that in the log record, and the
// recording's sessions row says whose clock its times are (clock:
// "event" when every event came with its time, "recorder" when none
// did, "mixed" otherwise). A step event (ActionReceived, StepCompleted,
// ObservationEmitted) is also copied for the assembly goroutine
// (events.StepCopier), so that its record need not be decoded again: the
// copy equals the record's decoded event, as recovery will see it.
func (r *Recorder) RecordAt(ctx context.Context, ev events.Event, t time.Time) error {
	return r.record(ctx, ev, t, 0, t.IsZero(), Run{})
}

// RecordStamped hands over an event like RecordSequenced (seq 0: none)
// whose time t is a recorder's clock reading, not its producer's: a
// stream message with recorder_clock set, which rlrec replay writes for a
// recording whose clock was the recorder's. The log record and the
// sessions row's clock say so, as for an event RecordAt stamps itself.
// The zero t is stamped with this recorder's clock.
func (r *Recorder) RecordStamped(ctx context.Context, ev events.Event, t time.Time, seq uint64) error {
	return r.record(ctx, ev, t, seq, true, Run{})
}

// record is RecordAt, and RecordSequenced when seq is not 0; recClock
// says t is a recorder's clock (the zero t: this recorder's, now).
func (r *Recorder) record(ctx context.Context, ev events.Event, t time.Time, seq uint64, recClock bool, run Run) error {
	if ev == nil {
		return fmt.Errorf("record: %w", events.ErrNilEvent)
	}
	if ev.Kind() == events.KindSessionStarted || r.refusedN.Load() > 0 {
		if err := r.admit(ev); err != nil {
			return err
		}
	}
	if t.IsZero() {
		t, recClock = r.opts.clock(), true
	}
	payload := logrec.PayloadBytes(ev)
	bp := r.bufs.Get(payload)
	b, err := events.AppendMarshal(append((*bp)[:0], byte(logrec.TypeEvent)), ev, t)
	if err != nil {
		r.bufs.Put(bp)
		sid, _ := ev.Header()
		return fmt.Errorf("record %s of session %q: %w", ev.Kind(), sid, err)
	}
	b = events.AppendSequence(b, seq)
	if recClock {
		b = events.AppendRecorderClock(b)
	}
	b = events.AppendContentHash(events.AppendRunNonce(b, run.Nonce), run.Hash)
	*bp = b
	if err := r.checkSize(ev, len(b)); err != nil {
		r.bufs.Put(bp)
		return err
	}
	var cp *events.StepCopy
	if seq == 0 && run.empty() && payload <= maxCopyPayload {
		// (A sequenced event's record is decoded: it carries its number.
		// So is an image batch's: copying it costs what decoding does.)
		cp = r.copies.Copy(ev, t)
	}
	return r.handOverDecoded(ctx, bp, cp, nil, time.Time{}, 0, recClock)
}

// checkSize refuses an event of n bytes encoded beyond the maximum event
// size (WithMaxEventSize).
func (r *Recorder) checkSize(ev events.Event, n int) error {
	if int64(n) <= r.maxEvent {
		return nil
	}
	sid, _ := ev.Header()
	return fmt.Errorf("record %s of session %q: %d bytes encoded, over the %d-byte maximum event size: %w (raise WithMemoryBudget or WithMaxEventSize)",
		ev.Kind(), sid, n, r.maxEvent, ErrEventTooLarge)
}

// handOver queues the log record in *bp (which passes to the pipeline),
// with cp, the copy of its event if one was made, and, under SyncEach,
// waits until it is durable.
func (r *Recorder) handOver(ctx context.Context, bp *[]byte, cp *events.StepCopy) error {
	return r.handOverDecoded(ctx, bp, cp, nil, time.Time{}, 0, false)
}

// handOverDecoded is handOver of a record whose event the pipeline
// applies without decoding the record: cp, a copy the hook made, or ev
// (observed at t, holding evBytes of payload), the caller's decoding of
// it (RecordEncoded). With neither, the record is decoded. recClock says
// the record's time is the recorder's clock.
//
// A record whose event comes with it is needed only in the log: once the
// log holds it (its Append copies it), the hook returns its buffer to the
// pool, and the next hook encodes into the same buffer, still in the
// core's cache. Only a record the pipeline decodes waits in the queue.
// The charge is what waits: the copy's footprint; for the caller's
// decoding, its payload and the record's length (as the event's other
// fields); else the record's buffer. Every item is charged at least
// minCharge.
func (r *Recorder) handOverDecoded(ctx context.Context, bp *[]byte, cp *events.StepCopy, ev events.Event, t time.Time, evBytes int, recClock bool) error {
	b := *bp
	carried := cp != nil || ev != nil
	var held int
	switch {
	case cp != nil:
		held = cp.Footprint()
	case ev != nil:
		held = len(b) + evBytes
	default:
		held = cap(b)
	}
	charge := min(int64(max(held, minCharge)), r.queueMax)
	drop := func() {
		r.bufs.Put(bp)
		if cp != nil {
			r.copies.Recycle(cp)
		}
	}
	if err := r.queueBudget.acquire(ctx, charge); err != nil {
		drop()
		return err
	}
	it := item{copy: cp, charge: charge, ev: ev, at: t, recClock: recClock}
	if !carried {
		it.buf = bp
	}
	pos, err := r.enqueueLogged(ctx, b, it)
	if err != nil {
		r.queueBudget.release(charge)
		drop()
		return err
	}
	if carried {
		r.bufs.Put(bp)
	}
	if r.opts.syncPolicy == SyncEach {
		return r.log.WaitSynced(ctx, pos)
	}
	return nil
}

// minCharge is the least an item is charged against the queue's budget:
// an event costs the pipeline more than its bytes (its queue slot, its
// copy, the work to apply it), and the floor bounds how many events wait
// however small they are, as the hooks' 4 KiB record buffers did when
// every record waited in one.
const minCharge = 4 << 10

// enqueue hands an item to the pipeline.
func (r *Recorder) enqueue(it item) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	if err := r.err(); err != nil {
		return err
	}
	// A waiting hook or Flush cannot wait for the consumer's nap.
	return r.queue.push(it, it.wait != nil)
}

// await waits for the pipeline to process w's item, then until its log
// position is durable.
func (r *Recorder) await(ctx context.Context, w *waiter) error {
	select {
	case <-w.done:
	case <-ctx.Done():
		// The pipeline still owns w; it is not returned to the pool.
		return ctx.Err()
	}
	pos, err := w.pos, w.err
	waiters.Put(w)
	if err != nil {
		return err
	}
	if pos > 0 {
		return r.log.WaitSynced(ctx, pos)
	}
	return nil
}

// decodedQueue is how many decoded events may wait for the assembly
// goroutine. Their bytes stay charged to the queue budget.
const decodedQueue = 256

// maxCopyPayload is the largest payload a step event is copied with (see
// RecordAt); a larger one's record is decoded.
const maxCopyPayload = 64 << 10

// decoding is the pipeline's first goroutine: it hands the event of each
// queued record, which the hook already appended to the log (hooklog.go),
// to the assembly goroutine: the copy the hook made, the caller's
// decoding, or else the record decoded. Splitting the two halves puts the
// hooks' log appends and assembly on both cores.
func (r *Recorder) decoding() {
	defer close(r.decoded)
	var batch []item
	for batch = r.queue.take(batch); batch != nil; batch = r.queue.take(batch) {
		for i := range batch {
			r.decodeItem(batch[i])
		}
		clear(batch)
	}
}

// decodeItem decodes one queued item and hands it on.
func (r *Recorder) decodeItem(it item) {
	if it.wait != nil {
		// A barrier: answered by the assembly goroutine once every
		// event before it is applied.
		r.decoded <- decodedItem{wait: it.wait, pos: r.log.LastPos()}
		return
	}
	d, err := r.decode(it)
	d.recClock = it.recClock
	if it.buf != nil {
		r.bufs.Put(it.buf)
	}
	d.charge = it.charge
	if err != nil {
		// The hook encoded the record a moment ago: a bug, not bad
		// input. The record is durable; the recorder stops.
		r.fail(err)
	}
	if err != nil || d.ev == nil {
		r.queueBudget.release(d.charge)
		if it.copy != nil {
			r.copies.Recycle(it.copy)
		}
		return
	}
	r.decoded <- d
}

// decode returns the event of the item it, logged at it.pos: the hook's
// copy, or the caller's decoding, or else its record decoded.
func (r *Recorder) decode(it item) (decodedItem, error) {
	if it.copy != nil {
		return decodedItem{ev: it.copy.Event, at: it.copy.At, copy: it.copy, pos: it.pos}, nil
	}
	if it.ev != nil {
		return decodedItem{ev: it.ev, at: it.at, pos: it.pos}, nil
	}
	ev, t, err := logrec.DecodeEvent(&r.dec, *it.buf)
	if err != nil {
		return decodedItem{pos: it.pos}, fmt.Errorf("decode logged event at %d: %w", it.pos, err)
	}
	return decodedItem{ev: ev, at: t, pos: it.pos}, nil
}

// assembly is the pipeline's second goroutine: it folds each decoded event
// into the assembly state, and answers barriers. It is the only goroutine
// that touches the assembler while the recorder is open.
func (r *Recorder) assembly() {
	defer close(r.assemblyDone)
	for d := range r.decoded {
		if d.wait != nil {
			// A Flush: a quiet moment to seal a snapshot (before the
			// answer, so that the log does not change under a caller
			// that Flushed to look at it).
			r.sinceReclaim = 0
			r.reclaim()
			d.wait.pos = d.pos
			d.wait.done <- struct{}{}
			continue
		}
		r.w.countFailed(d.ev)
		r.asm.ApplyClocked(d.ev, d.at, uint64(d.pos), d.recClock)
		if d.copy != nil {
			r.copies.Recycle(d.copy)
		}
		r.ckpt.applied = uint64(d.pos)
		r.queueBudget.release(d.charge)
		r.maybeReclaim(len(r.decoded) == 0)
	}
}

// Flush returns once every event handed over before it was called is
// durable in the log. When recordings failed (failure.go), it then returns
// their *RecordingError, joined: their events are durable in the log too,
// but not written (RecordingErrors tells such an error from the others).
func (r *Recorder) Flush(ctx context.Context) error {
	w := waiters.Get().(*waiter)
	if err := r.enqueue(item{wait: w}); err != nil {
		waiters.Put(w)
		return err
	}
	if err := r.await(ctx, w); err != nil {
		return err
	}
	if err := r.err(); err != nil {
		return err
	}
	return joinRecordingErrors(r.w.recordingErrors(false))
}

// Close stops accepting events, makes everything handed over durable,
// writes the files of every episode and session still open (open episodes
// as incomplete, their sessions with status "open"), and releases the lock.
// After a clean Close the log is empty. When recordings failed (failure.go,
// in this recorder or in the recovery Open ran), Close writes every other
// recording, keeps the log for 'rlrec recover', and returns their
// *RecordingError joined (after the error that failed the recorder, if
// one did).
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.closed = true
	r.queue.close()
	r.mu.Unlock()
	<-r.assemblyDone

	errs := []error{r.err()}
	if r.err() == nil {
		now := r.opts.clock()
		// Under WithResume, a recording that has not ended is left in
		// the log for the next Open to resume.
		if _, unended := r.asm.FinishAll(assembly.StatusOpen, now, r.opts.resume); r.opts.resume && unended > 0 {
			r.keepLog = true
		}
	}
	if err := r.w.stop(); err != errs[0] {
		// (The writer's error is the recorder's when it failed first.)
		errs = append(errs, err)
	}
	failed := r.w.recordingErrors(true)
	if err := errors.Join(errs...); err == nil {
		errs = append(errs, r.log.Close())
		if errs[len(errs)-1] == nil && !r.keepLog && len(failed) == 0 {
			errs = append(errs, r.clearLog())
			if errs[len(errs)-1] == nil {
				errs = append(errs, recovery.MarkClosed(r.fs, r.state))
			}
		}
	} else {
		r.log.Close()
	}
	for _, e := range failed {
		errs = append(errs, e)
	}
	errs = append(errs, r.lock.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", r.root, err)
	}
	return nil
}

// The events.Hooks methods: each hands its event to the recorder.

var _ events.Hooks = (*Recorder)(nil)

func (r *Recorder) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnLog(ctx context.Context, ev *events.Log) error { return r.submit(ctx, ev) }

func (r *Recorder) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return r.submit(ctx, ev)
}

func (r *Recorder) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	return r.submit(ctx, ev)
}

// OnRelayAdvisory records a relay advisory as a row of the recording's
// logs table (see the package doc on schema version 3).
func (r *Recorder) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return r.submit(ctx, ev)
}

// Layout returns the ROOT's steps layout: the one its layout file names,
// or for a new ROOT the one WithLayout asked for (LayoutEpisode without).
func (r *Recorder) Layout() hive.Layout { return r.layout }

// RecoveredRun returns the run of the recording (sessionID, envID) that
// Open found in the log and resumed (WithResume), and false when it found
// none. It does not change after Open.
func (r *Recorder) RecoveredRun(sessionID, envID string) (RecoveredRun, bool) {
	run, ok := r.recovRuns[hive.Recording{SessionID: sessionID, EnvID: envID}]
	return run, ok
}

// RecordSequencedRun is RecordSequenced of an event of the run run: its
// log record carries the run's nonce and the event's content hash.
func (r *Recorder) RecordSequencedRun(ctx context.Context, ev events.Event, t time.Time, seq uint64, run Run) error {
	return r.record(ctx, ev, t, seq, t.IsZero(), run)
}

// RecordStampedRun is RecordStamped of an event of the run run.
func (r *Recorder) RecordStampedRun(ctx context.Context, ev events.Event, t time.Time, seq uint64, run Run) error {
	return r.record(ctx, ev, t, seq, true, run)
}

// PublishedRunNonce returns the run nonce that the published sessions,
// logs and telemetry files of the recording (sessionID, envID) record
// under rlrec.run_nonce, nil when none does. An error names the file
// that could not be read, or two files that name different runs.
func (r *Recorder) PublishedRunNonce(sessionID, envID string) ([]byte, error) {
	return publishedRunNonce(r.st, hive.Recording{SessionID: sessionID, EnvID: envID})
}
