package assembly

import (
	"unsafe"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/schema"
)

// What the assembler hands on. Everything it finishes leaves it as a
// value the receiver owns (a Chunk of rows, a Finished episode, a
// SessionWrite); the assembler keeps no reference to it, and the receiver
// none to the assembler's state. The calls come from the goroutine that
// calls Apply, in the order the events made them.

// Output receives what the assembler finishes.
type Output interface {
	// StepsFull receives the buffered rows of an open episode that
	// exceed its share of the row budget, to be streamed to its steps
	// file.
	StepsFull(c Chunk)
	// EpisodeDone receives a finished episode (completed or incomplete)
	// with its rows not handed over before.
	EpisodeDone(e Finished)
	// SessionDone receives a recording's session write: its logs and
	// telemetry so far, and its sessions row once it ended.
	SessionDone(w SessionWrite)
	// NewSession is asked, for a recording seen for the first time,
	// where its session writes continue. late is set when its first
	// event is telemetry or a log line, which may come after its end.
	NewSession(rec hive.Recording, late bool) Continuation
	// Problem reports input that did not fit; the assembler counts it.
	Problem(rec hive.Recording, kind, detail string)
}

// Continuation is where a new recording's session writes continue.
type Continuation struct {
	// FirstWrite is the number of its first session write (0 for a
	// recording new to ROOT).
	FirstWrite int
	// Ended: the recording ended before (its sessions row is written),
	// so what comes is late data for further part files.
	Ended bool
}

// Episode names one episode and what a steps row repeats of it.
type Episode struct {
	Rec      hive.Recording
	RecordID string
	ID       string
	Index    int64
	Env      int32
	Lane     events.Option[uint32]
}

// Chunk is a run of an episode's rows with the bytes they reference.
type Chunk struct {
	Episode
	// FirstPos is the log position of the episode's first record: the
	// log is kept from there until the episode is durable.
	FirstPos uint64
	// Obs and Act are the recording's spaces (nil: none seen).
	Obs, Act *schema.Layout
	// Streamed counts the episode's rows handed over before this chunk.
	Streamed int64

	rows  []stepRow
	arena []byte
}

// Len is the number of rows in c.
func (c *Chunk) Len() int { return len(c.rows) }

// Bytes is the memory c holds: its rows and their bytes.
func (c *Chunk) Bytes() int { return len(c.arena) + len(c.rows)*int(unsafe.Sizeof(stepRow{})) }

// ArenaBytes is the payload bytes c's rows reference.
func (c *Chunk) ArenaBytes() int { return len(c.arena) }

// Row sets dst's per-step fields to row i of c: everything but the
// episode's own columns and the decoded leaves. hasObs reports whether the
// row has an observation (ObservationBlob is then set, possibly empty).
// The byte slices alias c until Recycle.
func (c *Chunk) Row(i int, dst *parquetout.StepRow) (hasObs bool) {
	r := &c.rows[i]
	a := c.arena
	dst.Step, dst.SessionStep = r.step, r.sessionStep
	dst.Reward = r.reward
	dst.IsFirst, dst.IsLast, dst.Terminated, dst.Truncated = r.isFirst, r.isLast, r.terminated, r.truncated
	dst.RecordedAt = r.recordedAt.time()
	dst.ObservationBlob = r.obs.bytes(a)
	dst.Infos, dst.RawObservationBlob, dst.RawActionBlob = r.infos.bytes(a), r.rawObs.bytes(a), r.rawAct.bytes(a)
	dst.PredictMs, dst.HasPredictMs, dst.StepMs, dst.HasStepMs = r.predictMs, r.hasPredict, r.stepMs, r.hasStep
	dst.ObservationInfos = r.obsInfos.bytes(a)
	dst.ActionBlob = r.act.bytes(a)
	return r.obs.set()
}

// Recycle hands c's buffers back for the next episodes' rows; nothing
// Row returned may be used afterwards.
func (c *Chunk) Recycle() { recycleRows(&c.rows, &c.arena) }

// Finished is a finished episode: its last rows and its episodes row.
type Finished struct {
	Chunk
	// Status is "completed" or "incomplete".
	Status string
	Row    schema.EpisodeRow
}

// SessionWrite is the K-th write of a recording's session files.
type SessionWrite struct {
	Rec hive.Recording
	K   int
	// FirstPos is the log position of the recording's first record.
	FirstPos uint64
	// Seq is the recording's highest sequence number (0: unnumbered
	// events); Nonce its run nonce (nil: none); Chain the content chain
	// of its numbered events.
	Seq   uint64
	Nonce []byte
	Chain runid.Chain
	Logs  []schema.LogRow
	Tele  []schema.TelemetryRow
	// Row is the sessions row, set on the first write at or after the
	// recording's end; LogRows and TeleRows count its log and telemetry
	// rows up to and with this write.
	Row               *schema.SessionRow
	LogRows, TeleRows int64
}

// Session write numbering: a recording's session writes are numbered
// from its Continuation; the first one at or after its end carries the
// sessions row. Recovery must cut the same writes as the run it replays,
// so the numbering is assembly state (and in snapshots).

// discard is an output that keeps nothing.
type discard struct{}

func (discard) StepsFull(c Chunk)                            { c.Recycle() }
func (discard) EpisodeDone(e Finished)                       { e.Recycle() }
func (discard) SessionDone(SessionWrite)                     {}
func (discard) NewSession(hive.Recording, bool) Continuation { return Continuation{} }
func (discard) Problem(hive.Recording, string, string)       {}

// LogRowBytes is what a log or telemetry row is counted beyond its
// message (the writer charges a session write's rows by it too).
const LogRowBytes = logRowBytes

// Logs and telemetry of a running session are handed to the writer in a
// write of their own (no sessions row) once they hold logChunkRows rows or
// logChunkBytes bytes, so that a session with millions of log lines keeps
// them within bounded memory. The bounds are constants, not a share of the
// memory budget: recovery must cut the same writes as the run it replays.
const (
	logChunkRows  = 1 << 16
	logChunkBytes = 8 << 20
	// logRowBytes is what a log or telemetry row is counted beyond its
	// message.
	logRowBytes = 96
)
