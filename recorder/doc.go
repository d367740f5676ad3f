// Package recorder records rlmesh sessions durably: *Recorder implements
// events.Hooks and turns the events of any number of concurrent sessions
// into rlrec's Parquet output under one ROOT (see docs/format/layout.md for the
// layout and the tables).
//
// # Usage
//
//	rec, err := recorder.Open(root)          // recovers what a crash left
//	runtime.SetHooks(rec)                    // or sim.Run(ctx, rec, cfg)
//	...
//	err = rec.Flush(ctx)                     // everything so far is durable
//	err = rec.Close(ctx)                     // writes the rest, unlocks ROOT
//
// # Stages
//
// An event goes through five stages, each named by its files (or
// package); each hands the next values it then owns:
//
//	1 hooks        2 log               3 assembly            4 writer             5 committer
//	recorder.go ──▶ logappend.go ──▶ internal/assembly ──▶ writer.go ───────▶ commit.go
//	hooklog.go      (the one way      (events in; Chunk,    episodewrite.go     (sync, markers
//	intake.go        into the log)     Finished and          sessionwrite.go      via logappend.go,
//	encoded.go       checkpoint.go     SessionWrite out;     batch.go             publish)
//	invalid.go       (snapshots)       no I/O)               sessionfile.go
//	queueroom.go                                             episodefile.go
//	admit.go                                                 failure.go
//	runid.go                                                 writerstate.go
//
//	recovery (a phase before the hooks open): recover.go reads the log
//	back (internal/logreplay), settles what a crash left
//	(internal/recovery) and replays the events into the same assembly,
//	whose output passes recoverfilter.go (writes already published go no
//	further) to the same writer and committer; phase.go says where their
//	markers go (the log, or recovery's journal), resume.go keeps
//	recordings open across a restart and recoveryreport.go says what
//	recovery did.
//
//	under every stage: state.go (the Recorder's state), options.go,
//	budget.go, errors.go.
//
// Within the package no file uses a name of a file that uses one of its
// own, directly or through others (layers_test.go checks it): the
// structs live in the state files (state.go, writerstate.go), which use
// no stage's methods, and each other file adds the methods of its step to
// Recorder or writer. In the writer's column no file uses one listed
// above it.
//
// Stage 1 encodes, logs and queues (hooks run on the caller's goroutine);
// a decoding goroutine hands the queued events on to stage 3, which runs
// on the assembly goroutine, which also appends session
// writes and snapshots to the log; stage 4 runs on a pool of writer
// goroutines; stage 5 on one committer goroutine. logappend.go holds the
// rules that order the log's records.
//
// A hook encodes its event (with its recording time) into a log record,
// appends it to the log and queues it, in the log's order (hooklog.go); it
// returns at once (SyncGroup) or once the record is fsynced (SyncEach).
// The log's Append copies the record into a file mapped shared with the
// kernel's page cache, so an event whose hook returned survives kill -9
// under either policy (internal/wal, the pending file). A step event is also copied into a recycled event
// (events.StepCopier) that equals the record decoded. The queue
// (intake.go) wakes the decoding goroutine only when it must, so that a
// hook seldom pays for waking it. The pipeline is two goroutines in
// series. The decoding goroutine hands on the copy, or, for the other
// events, decodes the record; the assembly goroutine folds the event into
// the per-session assembly state (recording semantics: internal/assembly)
// and recycles the copy. RecordEncoded, for events that come encoded from
// another process (rlrec serve), queues the producer's message as the log
// record together with the caller's decoding of it, which the decoding
// goroutine passes on instead of decoding (encoded.go). The split puts
// the log and assembly on both cores. Finished episodes
// and sessions become jobs for a pool of writer goroutines (both cores):
// each episode's jobs run in order on its own queue, different episodes in
// parallel. Long episodes stream their rows to the steps file in row groups,
// so memory does not grow with episode length.
//
// # Durability
//
// Every event is in the log (internal/wal; its records are
// internal/logrec's) before it is assembled. A Parquet file appears under
// its final name only complete, durable and named by a durable marker in
// the log: the writers finish files under temp names, a finished
// episode's row waits in its recording's batch (batch.go) and is
// published with its steps file, and one committer publishes the writes
// in groups with two file-system syncs and one log sync each (commit.go
// draws the order). A published file is never rewritten.
//
// After a crash, Open settles the temp files (one a marker names is
// published, any other removed), then replays the log from its last
// sealed snapshot, skipping the writes the markers name, and writes the
// rest under new part numbers: completed episodes, open ones with status
// "incomplete", their recordings with status "crashed" (recover.go; the
// log is read back by internal/logreplay). A torn log tail is cut and reported; corruption inside a
// sealed segment stops Open unless WithSalvage is set. Snapshots
// (checkpoint.go, internal/assembly's snapshot.go) keep the log of a long-running session
// bounded: it holds at most what the oldest open episode logged, plus a
// few thousand events. Log segments are removed once every write with
// records in them is published or in a sealed snapshot; a clean Close
// empties the log.
//
// # Object storage
//
// WithStore gives the recorder the store.Root it writes ROOT through
// (store.S3 for an s3://bucket/prefix ROOT) and the local directory of its
// log, lock, journal and open marker, which cannot live in a bucket. The
// group commit keeps its order; a bucket has no temp names, so the log
// also says which multipart uploads a crash may leave in flight (a steps
// file past the store's memory budget begins its own while written,
// StreamLogged) and how to complete them, and recovery settles them by
// exact key, takes back a write a crash left half published, and never
// replaces an object (internal/recovery's BegunMarker, MarkUploads and
// SettleUploads).
//
// # Failure isolation
//
// An I/O error on one recording's files fails only that recording
// (failure.go says which errors are whose): the others go on, its events
// stay in the log, and Flush and Close return a *RecordingError naming
// it; 'rlrec recover' writes it once the cause is fixed. Any other error
// (ENOSPC, EDQUOT, EROFS, the log, the journal, _rlrec) fails the
// recorder (ErrFailed), and its data stays in the log for the next Open.
//
// # Memory
//
// The memory budget (WithMemoryBudget) is divided into shares, all handed
// out by one type, memoryBudget (budget.go), which lists them: the events
// queued for the pipeline (hooks wait when it is full: back-pressure,
// never loss; a new recorder gives the hooks an eighth of it and grows
// that after a burst it did not absorb, queueroom.go), the hooks' idle
// buffers, the rows buffered by open episodes
// (beyond it their rows stream to their steps files), the log's unwritten
// bytes, the rows in flight to the writers, the steps files open at once
// (divided among them by parquetout.FileShare) and one snapshot. An event
// larger than a sixteenth of the budget is refused (ErrEventTooLarge;
// WithMaxEventSize), since one event costs several times its size while
// it is logged, assembled and written. The recorder's share of the peak
// RSS stays within the budget plus 64 MiB, plus the log's mapped pending
// file (two halves of the log's share), only under a Go memory limit
// (GCMemoryLimit).
//
// # Unfinished actions
//
// An action that no StepCompleted followed (a failed env step, or a kill
// between the two events) is no step: its rows are taken back and kept as
// logs rows (schema.UnfinishedAction), from which rlrec replay re-emits
// it (internal/assembly's unfinished.go).
//
// # rlmesh 0.1
//
// Streams of rlmesh 0.1 carry per-lane step flags, route lanes, raw
// payloads, infos, seeds and times, and come in 0.1's order (completion at
// the NEXT_STEP roll step, interleaved lanes of a lane-served env, surplus
// episodes): internal/assembly's stepflags.go and steps.go say how each is recorded, and
// docs/format/tables-v3.md what the tables hold. A stream without them (rc.5
// order) records as before. Snapshots carry a 0.1 recording's state too
// (internal/assembly's snapshot.go), so it checkpoints like an rc.5 one.
//
// # Events after a session's end
//
// A session's last events are SessionEnded then its final session-horizon
// TelemetrySnapshot in rlmesh rc.5, that snapshot then SessionEnded in
// 0.1 (or that snapshot then SessionFailed in both); its sessions, logs and
// telemetry files are written once both have come. rlmesh aborts
// its telemetry ticker rather than awaiting it, so a window snapshot
// already in flight may come after either closing event. Telemetry and
// logs after the end are recorded, not counted: before the files are
// written they join them, after that they go to further part files of
// their tables (the sessions file's row counts cover the parts up to it),
// and a recorder that first sees a recording through such an event (after
// a Close or a crash) and finds its files in ROOT treats it the same way.
// Any other event after the end is counted as event_after_session_end.
//
// # Concurrency
//
// A Recorder is safe for concurrent use. Events of one session must be
// handed over in order (the runtime calls hooks one at a time per session);
// telemetry may interleave. Only one Recorder can hold a ROOT: Open takes an
// exclusive lock under ROOT/_rlrec that also excludes other processes.
//
// # Where the parts live
//
// The recorder holds the pipeline, the writers and recovery's
// decisions. The assembly, recovery's settlement, its formats and the
// code that reads or writes them without the recorder's state are in
// internal packages:
//
//   - recorder/internal/assembly: the recording rules, events in and
//     finished episodes and session writes out, and the assembly state's
//     snapshots;
//   - recorder/internal/recovery: the recovery journal, the open marker,
//     and the uploads a recorder on object storage logs and recovery
//     settles;
//   - internal/logrec: the log's records (events, invalid events and
//     their decoding into events.Event, markers, seals, the snapshot and
//     its field conversions, the recovery journal's bytes) and the
//     bounded pool of buffers event records are encoded into (BufPool).
//     Every event goes into the log as a TypeEvent record (or
//     TypeInvalid) before anything else happens to it; the committer
//     adds markers (TypeEpisodeDone, TypeSessionDone) once a write's
//     files are durable, the assembly goroutine TypeSessionWrite as it
//     hands a session write over, and snapshots and their seals
//     (checkpoint.go), all through logappend.go;
//   - internal/logreplay: reading the log back for recovery, its markers
//     and its events in order;
//   - internal/store: the part files, and the layout file under _rlrec
//     (OpenLayout);
//   - internal/published: what a ROOT's published files say of one
//     recording (PublishedSequence, and the episodes recovery finds
//     published when a damaged log lost their markers);
//   - internal/wal: the log's framing, segments and group commit.
package recorder
