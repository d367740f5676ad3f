// Package recorder records rlmesh sessions durably: *Recorder implements
// events.Hooks and turns the events of any number of concurrent sessions
// into rlrec's Parquet output under one ROOT (see the README for the layout
// and the tables).
//
// # Usage
//
//	rec, err := recorder.Open(root)          // recovers what a crash left
//	runtime.SetHooks(rec)                    // or sim.Run(ctx, rec, cfg)
//	...
//	err = rec.Flush(ctx)                     // everything so far is durable
//	err = rec.Close(ctx)                     // writes the rest, unlocks ROOT
//
// # Data flow
//
//	hook call ──encode, copy, append──▶ log (_rlrec/log, mapped pending file)
//	     │                                  ▲  group fsync
//	     └──queue──▶ logging (decode)       │  markers
//	                    ▼                   │
//	        assembly: assembler ──jobs──▶ writers ──▶ Parquet
//
// A hook encodes its event (with its recording time) into a log record,
// appends it to the log and queues it, in the log's order (hooklog.go); it
// returns at once (SyncGroup) or once the record is fsynced (SyncEach).
// The log's Append copies the record into a file mapped shared with the
// kernel's page cache, so an event whose hook returned survives kill -9
// under either policy (internal/wal, the pending file). A step event is also copied into a recycled event
// (events.StepCopier) that equals the record decoded. The queue
// (intake.go) wakes the logging goroutine only when it must, so that a
// hook seldom pays for waking it. The pipeline is two goroutines in
// series. The logging goroutine hands on the copy, or, for the other
// events, decodes the record; the assembly goroutine folds the event into
// the per-session assembly state (recording semantics: see assemble.go)
// and recycles the copy. RecordEncoded, for events that come encoded from
// another process (rlrec serve), queues the producer's message as the log
// record together with the caller's decoding of it, which the logging
// goroutine passes on instead of decoding (encoded.go). The split puts
// the log and assembly on both cores. Finished episodes
// and sessions become jobs for a pool of writer goroutines (both cores):
// each episode's jobs run in order on its own queue, different episodes in
// parallel. Long episodes stream their rows to the steps file in row groups,
// so memory does not grow with episode length.
//
// # Durability
//
// Every event is in the log before it is assembled. A Parquet file appears
// under its final name only complete, durable and recorded (commit.go):
// the writers finish files under temp names without syncing them; a
// finished episode's row waits in its recording's batch (batch.go) and is
// published with its steps file, many episodes to an episodes file; one
// committer goroutine publishes the writes handed to it in groups (up to 5
// ms or 256 files): it syncs the file system holding ROOT (syncfs(2)),
// appends the group's markers to the log, each naming its write and its
// files, waits until they are durable, renames every file to its final
// name (refusing to replace a published one), syncs the file system again
// and only then releases the log positions the writes held. So a file
// never holds an event the log could lose, and every published file is
// named by a durable marker. An I/O error on one recording's files fails
// only that recording (failure.go says which errors are whose): the others
// go on, its events stay in the log, and Flush and Close return a
// *RecordingError naming it; any other error fails the recorder
// (ErrFailed), and its data stays in the log for the next Open. Log segments
// are removed once every write with records in them is published, or is
// in a sealed snapshot (below). A clean Close empties the log.
//
// A published file is never rewritten. After a crash, Open first settles
// the temp files: one a marker names is published (it was durable before
// its marker), any other removed. It then replays the log, skipping the
// writes the markers name, and writes the rest under new part numbers:
// completed episodes, open ones with status "incomplete" and every step
// that reached the log, their recordings with status "crashed". Only a
// log damaged past a marker (cut with WithSalvage) can lose the marker of
// a published write; recovery then also skips an episode whose row a
// published episodes file holds, and a recording whose sessions row is
// published, so that nothing is duplicated. A torn log tail is cut and
// reported; corruption inside a sealed segment stops Open unless
// WithSalvage is set. Recovery reads the log twice: a marker pass (which
// skips event records without decompressing them) finds the published
// writes and the last sealed snapshot, then the replay restores that
// snapshot and reads, decodes and assembles the events after it (or every
// event, without one) on three goroutines (replay.go). It writes through
// the same committer but holds every file until the replay is done and
// commits them as one group, whose markers go to a journal file
// (_rlrec/journal) since recovery has no log to append to.
//
// Snapshots (checkpoint.go, snapshot.go) keep the log of a long-running
// session bounded: once the oldest segments are held only by sessions
// still running, the assembly goroutine logs a snapshot of its whole state,
// seals it once the writes in flight when it was taken are durable, and
// from then on the log before it can go. A crash mid-session loses none of
// it: recovery starts from the snapshot. An open episode that streams rows
// to its steps file (long or image-heavy episodes) or buffers more than 64
// KiB is in a snapshot without its rows: the log is kept from its first
// event, and recovery rebuilds its rows by replaying the log from there
// (catchup.go). So a session's log holds at most what its oldest open
// episode logged, plus a few thousand events.
//
// # Failure isolation
//
// No single recording's I/O error stops the others (failure.go). An error
// on the files of one recording (its partition directories and part
// files: ENAMETOOLONG, EACCES or EPERM on its directory, EIO on its file,
// a published name already taken) fails that recording: its later events
// are still logged (no hook fails) and counted, nothing more of it is
// published, and its writes stay in flight so that no snapshot seal or
// segment removal drops its records; Close keeps the log, and 'rlrec
// recover', once the cause is fixed, writes it. Flush and Close return it
// as a *RecordingError (session id, env id, path, cause), joined with any
// others. ENOSPC, EDQUOT and EROFS, and every error of the log, the
// journal, the layout file or _rlrec, fail the recorder (ErrFailed), as
// does one on a directory every recording shares. A failed file-system
// sync is retried file by file, so that it is charged to the files that
// fail. Recovery isolates the same way.
//
// # Memory
//
// The memory budget (WithMemoryBudget) is split: an eighth bounds the
// events queued for the pipeline (hooks wait when it is full:
// back-pressure, never loss), a quarter the rows buffered by open episodes
// (beyond it their rows stream to their steps files), an eighth the log's
// unwritten bytes, a sixteenth the rows in flight to the writers, and a
// sixteenth the steps files open at once, divided among them: each gets a
// parquet-go page size chosen when it opens and a row group bound updated
// as others open and close (filemem.go; 256 open image episodes held over
// 1 GiB when every file had the defaults). An open episode's buffer grows
// by doubling up to its share and no further.
//
// The budget bounds the data the recorder keeps live. With Go's default
// GOGC the heap may grow to about twice that before a collection, so the
// process's peak RSS stays within the budget plus 64 MiB only under a Go
// memory limit: GCMemoryLimit gives it, the rlrec command sets it, and a
// program embedding a Recorder should include it in its own limit.
//
// # Events after a session's end
//
// A session's last events are SessionEnded then its final session-horizon
// TelemetrySnapshot (or that snapshot then SessionFailed); its sessions,
// logs and telemetry files are written once both have come. rlmesh aborts
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
package recorder
