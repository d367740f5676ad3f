package recorder

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
	"golang.org/x/sync/semaphore"
)

// writer is the assembler's output: it writes finished episodes and
// sessions as Parquet part files on a pool of goroutines and hands the
// finished (not yet durable) files to its committer, which makes groups of
// them durable at once, then appends their markers to the log and releases
// their log positions for reclaiming.
//
// Part numbers: each new part file takes the next number free in its
// partition (store.Next): the steps file of a new episode partition
// (layout episode) is part 0; the episodes rows of a batch, a packed
// steps file and each write of a recording's sessions, logs and telemetry
// files take the next number of their recording's partition. A published
// file is never replaced (publishing refuses an existing name): recovery
// publishes the temps whose markers reached the log, removes the others,
// and writes their rows again under new numbers (commit.go).
type writer struct {
	r    *Recorder
	fs   vfs.FS
	root string
	// st holds the part files: the writer asks it for a part of a
	// partition and hands the part's writer to an encoder.
	st   store.Store
	cfg  parquetout.Config
	log  *slog.Logger
	pool *pool
	com  *committer

	// rows bounds the bytes of episode rows handed to the pool and not yet
	// written: the pipeline waits for room (and hooks, in turn, for the
	// pipeline), so a writer slower than the driver holds no more than
	// rowsMax of rows in its queues.
	rows    *semaphore.Weighted
	rowsMax int64

	// skip holds the writes recovery found durable (nil when live).
	skip *doneSet

	// files shares a sixteenth of the budget among the open steps files.
	files fileShare

	// layout is the ROOT's steps layout.
	layout hive.Layout
	// batchDelay bounds how long a finished episode's row waits in its
	// recording's batch (batch.go).
	batchDelay time.Duration
	// closing is set once stop begins: a delayed flush no longer submits.
	closing atomic.Bool

	mu      sync.Mutex
	formats map[formatKey]*parquetout.StepsFormat
	// batches holds each recording's pending writes; parts the next part
	// number of each partition written so far (by its path).
	batches map[hive.Recording]*batch
	parts   map[string]int
	// live maps each write in flight (an episode or a session write) to
	// the first log position it was built from and the order in which it
	// was handed over (liveSeq counts them).
	live     map[any]liveWrite
	liveSeq  uint64
	firstErr error
	// failed holds the failed recordings (failure.go) by recKey; failedN
	// counts them, so that a write looks the map up only when there are
	// any.
	failed     map[string]*recFailure
	failedN    atomic.Int32
	completed  int
	incomplete int
	skipped    int
}

func newWriter(r *Recorder) *writer {
	rowsMax := max(r.opts.memoryBudget/16, 1<<20)
	w := &writer{
		r:    r,
		fs:   r.fs,
		root: r.root,
		st:   store.NewFS(r.fs, r.root),
		cfg: parquetout.Config{
			Compression:     string(r.opts.compression),
			RowGroupRows:    int64(r.opts.rowGroupRows),
			RowGroupBytes:   min(r.opts.memoryBudget/16, 32<<20),
			BinaryThreshold: r.opts.typedThreshold,
		},
		log:        r.opts.logger,
		pool:       newPool(r.opts.workers),
		com:        newCommitter(),
		rows:       semaphore.NewWeighted(rowsMax),
		rowsMax:    rowsMax,
		files:      fileShare{share: max(r.opts.memoryBudget/16, 1<<20)},
		formats:    make(map[formatKey]*parquetout.StepsFormat),
		batches:    make(map[hive.Recording]*batch),
		layout:     r.layout,
		parts:      make(map[string]int),
		batchDelay: r.opts.batchDelay,
		live:       make(map[any]liveWrite),
		failed:     make(map[string]*recFailure),
	}
	go w.commitLoop()
	return w
}

// fail records an error that fails the whole recorder (failure.go says
// which). The data stays in the log, so the next Open recovers it; the
// recorder stops accepting events meanwhile.
func (w *writer) fail(err error) {
	w.r.fail(err)
	w.mu.Lock()
	if w.firstErr == nil {
		// The recorder's: it wraps ErrFailed.
		w.firstErr = w.r.err()
	}
	w.mu.Unlock()
}

func (w *writer) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.firstErr
}

// wait returns once every write submitted so far has finished, every
// batch is flushed and every group is committed. It returns the error that
// failed the recorder; failed recordings are in recordingErrors.
func (w *writer) wait() error {
	w.drain()
	w.com.flush()
	return w.err()
}

// drain runs every queued job, then flushes every batch (its entries are
// all ready once their episodes' jobs ran).
func (w *writer) drain() {
	w.pool.wait()
	w.flushAll()
	w.pool.wait()
}

// stop waits for every write, flushes the batches, commits, and ends the
// pool and the committer.
func (w *writer) stop() error {
	w.drain()
	w.closing.Store(true)
	w.pool.stop()
	w.com.stop()
	return w.err()
}

// submitIfRunning submits job unless the writer is stopping; it reports
// whether it did.
func (w *writer) submitIfRunning(q *serial, job func()) bool {
	if w.closing.Load() {
		return false
	}
	w.pool.submit(q, job)
	return true
}

func (w *writer) counts() (completed, incomplete, skipped int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.completed, w.incomplete, w.skipped
}

// formatKey names a steps format: the spaces and the page class.
type formatKey struct {
	obs, act *schema.Layout
	class    int
}

func (w *writer) format(obs, act *schema.Layout, class int) (*parquetout.StepsFormat, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := formatKey{obs, act, class}
	if f := w.formats[key]; f != nil {
		return f, nil
	}
	newFormat := parquetout.NewStepsFormat
	cfg := pageClassConfig(w.cfg, class)
	if w.layout == hive.LayoutSession {
		newFormat = parquetout.NewPackedStepsFormat
		// A reader of one episode reads its row groups whole: they are
		// kept to packedGroupRows rows (plus the episode that crosses the
		// bound), so that reading an episode of a packed file costs about
		// that, not the file.
		if cfg.RowGroupRows <= 0 || cfg.RowGroupRows > packedGroupRows {
			cfg.RowGroupRows = packedGroupRows
		}
	}
	f, err := newFormat(obs, act, cfg)
	if err != nil {
		return nil, err
	}
	w.formats[key] = f
	return f, nil
}

// episodeFile is the state of one episode's steps file while it is
// written; only the episode's serial queue touches it.
type episodeFile struct {
	q      serial
	format *parquetout.StepsFormat
	steps  *parquetout.StepsWriter
	file   store.Part // where steps writes
	part   int        // the steps file's part number
	// packed is set for a batch's packed steps file (layout "session"),
	// of the spaces obs and act.
	packed   bool
	obs, act *schema.Layout
	row      parquetout.StepRow
	leaves   [2][][]byte
}

// rowsJob is a batch of an episode's rows with the bytes they reference.
type rowsJob struct {
	obs, act *schema.Layout
	rows     []stepRow
	arena    []byte
	charge   int64 // held in writer.rows until the rows are written
}

// jobOverhead is what a queued episode job is charged beyond its rows: its
// episode, metadata and closure. It bounds the number of short episodes
// the pool's unbounded queue can hold.
const jobOverhead = 2 << 10

// takeRows takes an episode's buffered rows for a job, waiting until the
// rows in flight leave room for them; the job releases j.charge once they
// are written.
func (w *writer) takeRows(s *session, ep *episode) rowsJob {
	j := rowsJob{obs: s.obsLayout, act: s.actLayout, rows: ep.rows, arena: ep.arena}
	ep.rows, ep.arena = nil, nil
	ep.flushedRows += int64(len(j.rows))
	j.charge = min(int64(jobOverhead+len(j.arena)+len(j.rows)*int(unsafe.Sizeof(stepRow{}))), w.rowsMax)
	w.rows.Acquire(context.Background(), j.charge)
	return j
}

func (w *writer) fileOf(ep *episode) *episodeFile {
	if ep.file == nil {
		ep.file = &episodeFile{}
		w.addLive(ep, ep.firstPos, false)
	}
	return ep.file
}

// stepsFull streams an open episode's buffered rows to its steps file.
func (w *writer) stepsFull(s *session, ep *episode) {
	if w.skip != nil && w.skip.episode(s.rec(), ep.recordID) {
		// Recovery: this episode is already durable; drop its rows.
		ep.rows, ep.arena = ep.rows[:0], ep.arena[:0]
		return
	}
	f := w.fileOf(ep)
	j := w.takeRows(s, ep)
	meta := episodeMeta{rec: s.rec(), rid: ep.recordID, id: ep.id, index: ep.index, env: ep.envIndex}
	w.pool.submit(&f.q, func() {
		err := w.writeRows(f, meta, j)
		w.rows.Release(j.charge)
		if err != nil {
			w.failRec(meta.rec, err)
		}
	})
}

// episodeMeta is what a steps row needs to know of its episode.
type episodeMeta struct {
	rec     hive.Recording
	rid, id string
	index   int64
	env     int32
}

// stepsPartition is the partition of an episode's steps files: its own
// (layout "episode"), or its recording's (layout "session").
func (w *writer) stepsPartition(m episodeMeta) hive.Partition {
	if w.layout == hive.LayoutSession {
		return hive.RecordingPartition(schema.TableSteps, m.rec)
	}
	return hive.EpisodePartition(schema.TableSteps, m.rec, m.rid)
}

// meta is the metadata of a file of rec.
func (w *writer) meta(rec hive.Recording) parquetout.Metadata {
	return parquetout.Metadata{Layout: w.layout, SessionID: rec.SessionID, EnvID: rec.EnvID}
}

// String names the episode in errors.
func (m episodeMeta) String() string { return fmt.Sprintf("steps of %s episode %q", m.rec, m.rid) }

func (w *writer) writeRows(f *episodeFile, m episodeMeta, j rowsJob) error {
	if err := w.blocked(m.rec); err != nil {
		// An earlier write (of the recorder, or of this recording)
		// failed: this episode must not be committed (its episodes row
		// and marker written) without its steps.
		return fmt.Errorf("%s: not written after an earlier failure: %w", m, err)
	}
	if f.steps == nil && len(j.rows) == 0 {
		// An episode without steps has no steps file.
		return nil
	}
	if f.steps == nil {
		format, err := w.format(j.obs, j.act, w.files.pageClass())
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		p := w.stepsPartition(m)
		meta := w.meta(m.rec)
		var file store.Part
		if w.layout == hive.LayoutEpisode {
			// A new episode's partition: one mkdir and one file creation,
			// its part 0 without a listing (store.CreateNew). One that
			// exists (late steps of an episode) takes the next number.
			meta.EpisodeRecordID = m.rid
			f.part = 0
			if file, err = w.st.CreateNew(p); errors.Is(err, store.ErrPartitionExists) {
				f.part = w.nextPart(p)
				file, err = w.st.Create(p, f.part)
			}
		} else {
			f.part = w.nextPart(p)
			file, err = w.st.Create(p, f.part)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
		f.file, f.steps = file, format.NewEncoder(file, file.Name(), meta)
		w.files.open.Add(1)
		f.format, f.obs, f.act = format, j.obs, j.act
		if f.packed {
			// Many episodes: a row group ends only between two.
			f.steps.SetEpisodeBoundaries(true)
		}
	}
	f.steps.SetRowGroupBytes(w.files.rowGroupBytes(w.cfg.RowGroupBytes))
	row := &f.row
	row.EpisodeRecordID, row.EpisodeID, row.EpisodeIndex, row.EnvIndex = m.rid, m.id, m.index, m.env
	for i := range j.rows {
		r := &j.rows[i]
		row.Step, row.SessionStep = r.step, r.sessionStep
		row.Reward = r.reward
		row.IsFirst, row.IsLast, row.Terminated, row.Truncated = r.isFirst, r.isLast, r.terminated, r.truncated
		row.RecordedAt = r.recordedAt.time()
		row.ObservationBlob, row.ObservationLeaves = nil, nil
		if r.obsLen >= 0 {
			row.ObservationBlob = j.arena[r.obsOff : r.obsOff+r.obsLen]
			leaves, err := blob.DecodeInto(f.leaves[0][:0], row.ObservationBlob)
			if err != nil {
				return fmt.Errorf("%s step %d: observation: %w", m, r.step, err)
			}
			f.leaves[0], row.ObservationLeaves = leaves, leaves
		}
		row.ActionBlob = j.arena[r.actOff : r.actOff+r.actLen]
		leaves, err := blob.DecodeInto(f.leaves[1][:0], row.ActionBlob)
		if err != nil {
			return fmt.Errorf("%s step %d: action: %w", m, r.step, err)
		}
		f.leaves[1], row.ActionLeaves = leaves, leaves
		if err := f.steps.Write(row); err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	// Drop the references into j.arena: an open episode's file outlives
	// the job, and would otherwise keep its last arena alive.
	row.ObservationBlob, row.ObservationLeaves, row.ActionBlob, row.ActionLeaves = nil, nil, nil, nil
	clear(f.leaves[0])
	clear(f.leaves[1])
	// The steps writer copied what it keeps: the buffers go back to the
	// assembler (the caller's copy of j keeps only their lengths).
	recycleRows(&j)
	return nil
}

// episodeDone writes a finished episode: the rest of its steps on its own
// queue, then its row waits in its recording's batch (batch.go), which
// publishes it with its steps file.
func (w *writer) episodeDone(s *session, ep *episode, status string) {
	if w.skip != nil && w.skip.episode(s.rec(), ep.recordID) {
		w.mu.Lock()
		w.skipped++
		w.mu.Unlock()
		if f := ep.file; f != nil {
			// Rows streamed before recovery knew the episode durable.
			w.pool.submit(&f.q, func() {
				if f.steps != nil {
					f.abort()
					w.files.open.Add(-1)
				}
			})
			w.mu.Lock()
			delete(w.live, ep)
			w.mu.Unlock()
		}
		return
	}
	streamed := ep.flushedRows > 0
	f := w.fileOf(ep)
	w.finishLive(ep)
	j := w.takeRows(s, ep)
	e := &batchEntry{ep: ep, rid: ep.recordID, status: status, row: episodeRow(s, ep, status),
		meta: w.meta(s.rec())}
	if s.obsLayout != nil {
		e.meta.ObservationSpace = s.obsLayout.Spec
	}
	if s.actLayout != nil {
		e.meta.ActionSpace = s.actLayout.Spec
	}
	b := w.batchOf(s)
	b.add(e)
	em := episodeMeta{rec: s.rec(), rid: ep.recordID, id: ep.id, index: ep.index, env: ep.envIndex}
	if w.layout == hive.LayoutSession && !streamed {
		// Its rows go, whole, to the recording's packed steps file.
		w.pool.submit(&b.q, func() {
			err := w.pack(b, em, j, e)
			w.rows.Release(j.charge)
			if err != nil {
				w.failRec(em.rec, err)
			}
			w.ready(b, e, err != nil)
		})
		return
	}
	w.pool.submit(&f.q, func() {
		part, err := w.finishSteps(f, em, j)
		w.rows.Release(j.charge)
		if err != nil {
			w.failRec(em.rec, err)
			w.ready(b, e, true)
			return
		}
		if part != nil {
			e.steps = part
			rel := w.stepsPartition(em).File(f.part)
			e.row.StepsFile = &rel
		}
		w.ready(b, e, false)
	})
}

// finishSteps writes an episode's last rows and finishes its steps file
// (nil when the episode recorded no step), for its batch.
func (w *writer) finishSteps(f *episodeFile, m episodeMeta, j rowsJob) (store.Part, error) {
	if err := w.writeRows(f, m, j); err != nil {
		if f.steps != nil {
			f.abort()
			w.files.open.Add(-1)
		}
		return nil, err
	}
	if f.steps == nil {
		return nil, nil
	}
	p, err := f.finish()
	w.files.open.Add(-1)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", m, err)
	}
	return p, nil
}

// finish ends a steps file: its footer, then its part (finished, not yet
// durable). On error both are discarded.
func (f *episodeFile) finish() (store.Part, error) {
	p := f.file
	if err := f.steps.Close(); err != nil {
		f.abort()
		return nil, err
	}
	f.steps, f.file = nil, nil
	if err := p.Finish(); err != nil {
		p.Abort()
		return nil, err
	}
	return p, nil
}

// abort discards a steps file being written.
func (f *episodeFile) abort() {
	f.steps.Abort()
	f.file.Abort()
	f.steps, f.file = nil, nil
}

// finishTable encodes rows as part n of partition p, finished for group
// commit (not yet durable).
func finishTable[T parquetout.Row](st store.Store, p hive.Partition, n int, meta parquetout.Metadata, cfg parquetout.Config, rows []T) (store.Part, error) {
	part, err := st.Create(p, n)
	if err != nil {
		return nil, err
	}
	if err := parquetout.EncodeTable(part, part.Name(), meta, cfg, rows); err != nil {
		part.Abort()
		return nil, err
	}
	if err := part.Finish(); err != nil {
		part.Abort()
		return nil, err
	}
	return part, nil
}

func abortParts(parts []store.Part) {
	for _, p := range parts {
		p.Abort()
	}
}

func episodeRow(s *session, ep *episode, status string) schema.EpisodeRow {
	row := schema.EpisodeRow{
		EpisodeRecordID:      ep.recordID,
		EpisodeID:            ep.id,
		EpisodeIndex:         ep.index,
		EnvIndex:             ep.envIndex,
		EnvComponentID:       s.route.EnvComponentID,
		ModelComponentID:     s.route.ModelComponentID,
		StartedFromAutoReset: ep.autoReset,
		Status:               status,
		StepsRecorded:        ep.stepsRecorded,
		RewardSum:            ep.rewardSum,
		StartedAt:            ep.startedAt,
		FinalObservationBlob: ep.finalObs,
	}
	if c := ep.completion; c != nil {
		row.StepCount = &c.StepCount
		row.CumulativeReward = &c.CumulativeReward
		row.Terminated, row.Truncated = c.Terminated, c.Truncated
		row.DurationMs = &c.DurationMs
		if v, ok := success(c.FinalInfo); ok {
			row.Success = &v
		}
		if c.FinalInfo != nil {
			js := metaJSON(c.FinalInfo)
			row.FinalInfo = &js
		}
		end := ep.endedAt
		row.EndedAt = &end
	}
	return row
}

// sessionDone hands a recording's session write to its batch: at its end
// the logs, telemetry and session row (the commit point), later any late
// telemetry or logs. It is published after the episodes finished before
// it.
func (w *writer) sessionDone(s *session) {
	k := s.writes
	s.writes++
	if l := w.r.log; l != nil {
		if _, err := l.Append(appendSessionMarker(nil, recSessionWrite, s.rec(), k, nil)); err != nil {
			w.fail(fmt.Errorf("append session write record: %w", err))
			return
		}
	}
	final := s.ended && !s.rowDone
	if final {
		s.rowDone = true
	}
	if w.skip != nil && w.skip.session(s.rec(), k, final) {
		s.logRows += int64(len(s.logs))
		s.teleRows += int64(len(s.telemetry))
		s.logs, s.telemetry, s.logBytes = nil, nil, 0
		return
	}
	job := &sessionWriteJob{k: k, seq: s.seq, logs: make([]schema.LogRow, len(s.logs)), tele: make([]schema.TelemetryRow, len(s.telemetry))}
	for i, l := range s.logs {
		job.logs[i] = schema.LogRow{Time: l.time, Level: l.level, Message: l.message, Source: l.source}
	}
	for i, t := range s.telemetry {
		r := t.row
		job.tele[i] = schema.TelemetryRow{Time: t.time, Horizon: t.horizon, Op: r.Op, Component: r.Component, Metric: r.Metric,
			Kind: r.Kind.String(), Count: int64(r.Count), Avg: r.Avg, P50: r.P50, P95: r.P95, P99: r.P99}
	}
	s.logs, s.telemetry, s.logBytes = nil, nil, 0
	s.logRows += int64(len(job.logs))
	s.teleRows += int64(len(job.tele))
	if final {
		job.row = sessionRow(s)
		job.logRows, job.teleRows = s.logRows, s.teleRows
		if s.problemCount() > 0 {
			w.log.Warn("recording has problems in its input", "session", s.id, "env", s.route.EnvID, "problems", s.problemSummary(), "dropped_steps", s.droppedSteps)
		}
	}
	token := new(byte)
	job.token = token
	w.addLive(token, s.firstPos, true)
	b := w.batchOf(s)
	e := &batchEntry{session: job}
	b.add(e)
	w.ready(b, e, false)
}

// writeSession writes a session write's files and hands them to the
// committer.
func (w *writer) writeSession(rec hive.Recording, job *sessionWriteJob) {
	if err := w.blocked(rec); err != nil {
		// Its write stays in flight, and so in the log.
		return
	}
	meta := w.meta(rec)
	meta.LastSequence = job.seq
	var parts []store.Part
	var files []string
	write := func(table string, what string, finish func(p hive.Partition, n int) (store.Part, error)) bool {
		p := hive.RecordingPartition(table, rec)
		n := w.nextPart(p)
		part, err := finish(p, n)
		if err != nil {
			abortParts(parts)
			w.failRec(rec, fmt.Errorf("%s of %s: %w", what, rec, err))
			return false
		}
		parts, files = append(parts, part), append(files, p.File(n))
		return true
	}
	if len(job.logs) > 0 || job.row != nil {
		if !write(schema.TableLogs, "logs", func(p hive.Partition, n int) (store.Part, error) {
			return finishTable(w.st, p, n, meta, w.cfg, job.logs)
		}) {
			return
		}
	}
	if len(job.tele) > 0 || job.row != nil {
		if !write(schema.TableTelemetry, "telemetry", func(p hive.Partition, n int) (store.Part, error) {
			return finishTable(w.st, p, n, meta, w.cfg, job.tele)
		}) {
			return
		}
	}
	if job.row != nil {
		if !write(schema.TableSessions, "session row", func(p hive.Partition, n int) (store.Part, error) {
			m := meta
			m.LogRows, m.TelemetryRows = &job.logRows, &job.teleRows
			return finishTable(w.st, p, n, m, w.cfg, []schema.SessionRow{*job.row})
		}) {
			return
		}
	}
	w.commit(commitItem{rec: rec, parts: parts, markers: [][]byte{appendSessionMarker(nil, recSessionDone, rec, job.k, files)},
		live: []any{job.token}, hold: w.skip != nil})
}

func sessionRow(s *session) *schema.SessionRow {
	row := &schema.SessionRow{
		EnvComponentID:   s.route.EnvComponentID,
		ModelComponentID: s.route.ModelComponentID,
		Status:           s.status,
		StartedAt:        s.startedAt,
		EpisodesRecorded: s.episodesRecorded,
		StepsRecorded:    s.stepsRecorded,
		DroppedSteps:     s.droppedSteps,
		Problems:         s.problemCount(),
		Clock:            s.clock(),
	}
	if s.reason != "" {
		reason := s.reason
		row.Reason = &reason
	}
	if s.hasTotals {
		steps, eps := s.totalSteps, s.totalEpisodes
		row.TotalSteps, row.TotalEpisodes = &steps, &eps
	}
	if summary := s.problemSummary(); summary != "" {
		row.ProblemSummary = &summary
	}
	if s.status != statusOpen || !s.endedAt.IsZero() {
		end := s.endedAt
		if end.IsZero() {
			end = s.lastAt
		}
		row.EndedAt = &end
	}
	return row
}

// newSession numbers the file writes of a session seen for the first time.
// A session whose files exist already (recorded before the log was
// reclaimed, or by an earlier recorder) continues their part numbers: its
// first event, when it is late telemetry or a log line, makes it a finished
// session receiving late data.
func (w *writer) newSession(s *session, first events.Event) {
	late := first.Kind() == events.KindTelemetrySnapshot || first.Kind() == events.KindLog
	if w.skip != nil {
		if k, ok := w.skip.firstWrite[s.rec()]; ok && late {
			s.writes, s.ended, s.finalTelemetry, s.rowDone = k, true, true, true
			return
		}
		if !late {
			// Replayed from its start: writes are numbered from 0 again
			// and replace what a crash may have left.
			return
		}
	}
	n := 0
	for _, table := range []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
		p, err := w.st.Next(hive.RecordingPartition(table, s.rec()))
		if err == nil && p > n {
			n = p
		}
	}
	if n == 0 {
		return
	}
	s.writes = n
	if late {
		s.ended, s.finalTelemetry, s.rowDone = true, true, true
		return
	}
	w.log.Warn("recording already under this root, and its stream does not start with SessionStarted; its new files get further part numbers",
		"session", s.id, "env", s.route.EnvID, "first_part", n)
}

// problem logs input that did not fit; the assembler counts it.
func (w *writer) problem(s *session, kind problemKind, detail string) {
	w.log.Warn("input did not fit the recording; counted and skipped", "session", s.id, "env", s.route.EnvID, "problem", string(kind), "detail", detail)
}

// liveWrite is a write in flight: the first log position it was built
// from, and its number in the order finished writes were handed over (0
// while it is an open episode's streamed rows).
type liveWrite struct {
	pos, seq uint64
}

// addLive notes a write in flight that needs the log from pos; w.mu must
// not be held. A finished write (a completed episode's files, a session
// write) is numbered in the order writes are handed over; the rows an
// open episode streams to its steps file are not (see finishLive).
func (w *writer) addLive(key any, pos uint64, finished bool) {
	w.mu.Lock()
	l := liveWrite{pos: pos}
	if finished {
		w.liveSeq++
		l.seq = w.liveSeq
	}
	w.live[key] = l
	w.mu.Unlock()
}

// finishLive numbers the write of key, in flight since its episode began
// streaming, as a finished write handed over now.
func (w *writer) finishLive(key any) {
	w.mu.Lock()
	w.liveSeq++
	l := w.live[key]
	l.seq = w.liveSeq
	w.live[key] = l
	w.mu.Unlock()
}

// minLive returns the first log position an unfinished episode being
// written still needs, or 0 if none.
func (w *writer) minLive() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var m uint64
	for _, l := range w.live {
		if m == 0 || l.pos < m {
			m = l.pos
		}
	}
	return m
}

// handedOver returns the number of writes handed over so far.
func (w *writer) handedOver() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.liveSeq
}

// finishedUpTo reports whether every write among the first seq finished
// writes handed over is durable. (A failed write stays in flight: it fails
// the recorder, or its recording, whose log must be kept.)
func (w *writer) finishedUpTo(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range w.live {
		if l.seq != 0 && l.seq <= seq {
			return false
		}
	}
	return true
}
