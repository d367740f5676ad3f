package recorder

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/serial"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// The writes of episodes: steps files streamed and finished on each
// episode's own queue, and the rows of the episodes table.

// episodeFile is the state of one episode's steps file while it is
// written; only the episode's serial queue touches it.
type episodeFile struct {
	q      serial.Queue
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
	if w.now().skipEpisode(s.rec(), ep.recordID) {
		// Recovery: this episode is already durable; drop its rows.
		ep.rows, ep.arena = ep.rows[:0], ep.arena[:0]
		return
	}
	f := w.fileOf(ep)
	j := w.takeRows(s, ep)
	meta := episodeMeta{rec: s.rec(), rid: ep.recordID, id: ep.id, index: ep.index, env: ep.envIndex, lane: ep.route}
	w.pool.Submit(&f.q, func() {
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
	lane    events.Option[uint32]
}

func ptr[T any](v T) *T { return &v }

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
		format, err := w.format(j.obs, j.act, w.files.PageClass())
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
		if ph, ok := w.now().(live); ok {
			store.StreamLogged(w.st, file, m.rec, ph.logMarkers)
		}
		f.file, f.steps = file, format.NewEncoder(file, file.Name(), meta)
		w.files.Opened()
		f.format, f.obs, f.act = format, j.obs, j.act
		if f.packed {
			// Many episodes: a row group ends only between two.
			f.steps.SetEpisodeBoundaries(true)
		}
	}
	f.steps.SetRowGroupBytes(w.files.RowGroupBytes(w.cfg.RowGroupBytes))
	row := &f.row
	row.EpisodeRecordID, row.EpisodeID, row.EpisodeIndex, row.EnvIndex = m.rid, m.id, m.index, m.env
	row.Lane, row.HasLane = int64(m.lane.Value), m.lane.Set
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
		row.Infos, row.RawObservationBlob, row.RawActionBlob = r.infos.bytes(j.arena), r.rawObs.bytes(j.arena), r.rawAct.bytes(j.arena)
		row.PredictMs, row.HasPredictMs, row.StepMs, row.HasStepMs = r.predictMs, r.hasPredict, r.stepMs, r.hasStep
		row.ObservationInfos = r.obsInfos.bytes(j.arena)
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
	row.Infos, row.RawObservationBlob, row.RawActionBlob, row.ObservationInfos = nil, nil, nil, nil
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
	if w.now().skipEpisode(s.rec(), ep.recordID) {
		w.mu.Lock()
		w.skipped++
		w.mu.Unlock()
		if f := ep.file; f != nil {
			// Rows streamed before recovery knew the episode durable.
			w.pool.Submit(&f.q, func() {
				if f.steps != nil {
					f.abort()
					w.files.Closed()
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
	em := episodeMeta{rec: s.rec(), rid: ep.recordID, id: ep.id, index: ep.index, env: ep.envIndex, lane: ep.route}
	if w.layout == hive.LayoutSession && !streamed {
		// Its rows go, whole, to the recording's packed steps file.
		w.pool.Submit(&b.q, func() {
			err := w.pack(b, em, j, e)
			w.rows.Release(j.charge)
			if err != nil {
				w.failRec(em.rec, err)
			}
			w.ready(b, e, err != nil)
		})
		return
	}
	w.pool.Submit(&f.q, func() {
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
			w.files.Closed()
		}
		return nil, err
	}
	if f.steps == nil {
		return nil, nil
	}
	p, err := f.finish()
	w.files.Closed()
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
	if v, ok := ep.seed.Get(); ok {
		row.Seed = &v
	}
	if v, ok := ep.trial.Get(); ok {
		row.TrialIndex = &v
	}
	if v, ok := ep.route.Get(); ok {
		lane := int64(v)
		row.Lane = &lane
	}
	if c := ep.completion; c != nil {
		row.StepCount = &c.StepCount
		row.CumulativeReward = &c.CumulativeReward
		row.Terminated, row.Truncated = c.Terminated, c.Truncated
		row.DurationMs = &c.DurationMs
		// success: the runtime's own reading when it sent one (rlmesh
		// 0.1), else rlrec's reading of final_info; success_source says
		// which.
		if v, ok := c.Success.Get(); ok {
			row.Success, row.SuccessSource = &v, ptr(schema.SuccessFromRuntime)
		} else if v, ok := blob.Success(c.FinalInfo); ok {
			row.Success, row.SuccessSource = &v, ptr(schema.SuccessFromFinalInfo)
		}
		if row.Seed == nil {
			if v, ok := c.Seed.Get(); ok {
				row.Seed = &v
			}
		}
		if row.TrialIndex == nil {
			if v, ok := c.TrialIndex.Get(); ok {
				row.TrialIndex = &v
			}
		}
		if v, ok := c.PredictMs.Get(); ok {
			row.PredictMs = &v
		}
		if v, ok := c.StepMs.Get(); ok {
			row.StepMs = &v
		}
		if c.FinalInfo != nil {
			js := blob.MetaJSON(c.FinalInfo)
			row.FinalInfo = &js
		}
		end := ep.endedAt
		row.EndedAt = &end
	}
	return row
}
