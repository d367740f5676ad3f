package recorder

import (
	"errors"
	"fmt"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
	"github.com/rlrec/rlrec/schema"
)

// The files of episodes: steps files streamed and finished on each
// episode's own queue (episodewrite.go queues the jobs), and the episodes
// table's files a batch writes (batch.go).

// rowsJob is a chunk of an episode's rows, and what it holds of the rows
// in flight (writer.rows) until they are written.
type rowsJob struct {
	c      assembly.Chunk
	charge int64
}

// jobOverhead is what a queued episode job is charged beyond its rows: its
// episode, metadata and closure. It bounds the number of short episodes
// the pool's unbounded queue can hold.
const jobOverhead = 2 << 10

// episodeMeta is what a steps row needs to know of its episode.
type episodeMeta struct {
	rec     hive.Recording
	rid, id string
	index   int64
	env     int32
	lane    events.Option[uint32]
}

// metaOf is the episode of c.
func metaOf(c *assembly.Chunk) episodeMeta {
	return episodeMeta{rec: c.Rec, rid: c.RecordID, id: c.ID, index: c.Index, env: c.Env, lane: c.Lane}
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
	if f.steps == nil && j.c.Len() == 0 {
		// An episode without steps has no steps file.
		return nil
	}
	if f.steps == nil {
		format, err := w.format(j.c.Obs, j.c.Act, w.files.PageClass())
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
			recovery.StreamLogged(w.st, file, m.rec, ph.logMarkers)
		}
		f.file, f.steps = file, format.NewEncoder(file, file.Name(), meta)
		w.files.Opened()
		f.format, f.obs, f.act = format, j.c.Obs, j.c.Act
		if f.packed {
			// Many episodes: a row group ends only between two.
			f.steps.SetEpisodeBoundaries(true)
		}
	}
	f.steps.SetRowGroupBytes(w.files.RowGroupBytes(w.cfg.RowGroupBytes))
	row := &f.row
	row.EpisodeRecordID, row.EpisodeID, row.EpisodeIndex, row.EnvIndex = m.rid, m.id, m.index, m.env
	row.Lane, row.HasLane = int64(m.lane.Value), m.lane.Set
	for i := range j.c.Len() {
		hasObs := j.c.Row(i, row)
		row.ObservationLeaves = nil
		if hasObs {
			leaves, err := blob.DecodeInto(f.leaves[0][:0], row.ObservationBlob)
			if err != nil {
				return fmt.Errorf("%s step %d: observation: %w", m, row.Step, err)
			}
			f.leaves[0], row.ObservationLeaves = leaves, leaves
		}
		leaves, err := blob.DecodeInto(f.leaves[1][:0], row.ActionBlob)
		if err != nil {
			return fmt.Errorf("%s step %d: action: %w", m, row.Step, err)
		}
		f.leaves[1], row.ActionLeaves = leaves, leaves
		if err := f.steps.Write(row); err != nil {
			return fmt.Errorf("%s: %w", m, err)
		}
	}
	// Drop the references into the chunk: an open episode's file outlives
	// the job, and would otherwise keep its last arena alive.
	row.ObservationBlob, row.ObservationLeaves, row.ActionBlob, row.ActionLeaves = nil, nil, nil, nil
	row.Infos, row.RawObservationBlob, row.RawActionBlob, row.ObservationInfos = nil, nil, nil, nil
	clear(f.leaves[0])
	clear(f.leaves[1])
	// The steps writer copied what it keeps: the buffers go back to the
	// assembler (the caller's copy of j keeps only their lengths).
	j.c.Recycle()
	return nil
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
