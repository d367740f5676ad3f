package recorder

import (
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder/internal/assembly"
	"github.com/rlrec/rlrec/recorder/internal/recovery"
)

// Resume mode
//
// A recorder fed from other processes (rlrec serve) outlives neither a
// crash nor a restart, but its producers do: after the server comes back
// they go on sending the events of recordings it had open. By default Open
// finishes every recording it finds in the log (open episodes incomplete,
// the session crashed) and Close writes every open one with status open,
// so the events that follow would belong to no episode. Under WithResume:
//
//   - Open recovers as usual, but a recording that had not ended (or had
//     ended and was waiting for its final telemetry) stays as it was in
//     the assembly state, rebuilt from the log (and its snapshot), with
//     its open episodes, lanes and counters, and the log is kept: its
//     producer continues it as if nothing had happened. Recordings whose
//     files were written stay written.
//   - Close writes the files of ended recordings and leaves the open ones
//     in the log, which it then keeps, for the next Open to resume.
//
// A recording that no producer continues stays open until an Open without
// WithResume (`rlrec recover ROOT`) finishes it as crashed, and its log is
// kept while it is open (its small open episodes are in snapshots, so
// mostly a large open episode holds the log).

// WithResume keeps recordings that have not ended open across a crash or
// a Close, for their producers to continue (see resume.go); default off.
func WithResume(on bool) Option { return func(o *options) { o.resume = on } }

// Resumed returns the number of recordings Open found open in the log and
// resumed (WithResume).
func (r *Recorder) Resumed() int { return r.resumed }

// resumeRecovered ends recover under WithResume, once the log is
// replayed: ended recordings get their files, open ones stay in the
// assembler, and the log is kept.
func (r *Recorder) resumeRecovered() error {
	r.recovSeqs = make(map[hive.Recording]uint64)
	r.recovRuns = make(map[hive.Recording]RecoveredRun)
	r.asm.Each(func(s assembly.Recording) {
		r.recovered.Sessions++
		if s.Seq != 0 {
			r.recovSeqs[s.Rec] = s.Seq
		}
		r.keepRecoveredRun(s)
		if s.Finished {
			// Ended, and its files are written.
			return
		}
		// Open, or ended and waiting for its final telemetry: it stays
		// as it was.
		r.resumed++
		// A SessionStarted sent again is a duplicate, not a recording
		// already in ROOT (admit).
		r.admitted[s.Rec] = struct{}{}
	})
	r.asm.KeepHashes(false)
	if err := r.w.wait(); err != nil {
		return fmt.Errorf("recover %s: %w", r.root, err)
	}
	r.recovered.Completed, r.recovered.Incomplete, r.recovered.Skipped = r.w.counts()
	r.w.setPhase(recovered{fs: r.fs, state: r.state})
	if r.resumed == 0 {
		r.asm = assembly.New(r.w, r.budget.episodes())
	} else {
		// The recordings go on live: what they finish from now on is
		// the writer's, unfiltered.
		r.asm.SetOutput(r.w)
	}
	if failed := r.w.recordingErrors(false); len(failed) > 0 {
		// As in recover: the log and the journal stay for the next
		// recovery (failure.go).
		r.recovered.Failed = failed
		r.opts.logger.Error("recovered all but some recordings; their events stay in the log: fix the cause and recover the ROOT again",
			"root", r.root, "failed_recordings", len(failed))
	} else if r.resumed == 0 {
		if err := r.clearLog(); err != nil {
			return fmt.Errorf("recover %s: %w", r.root, err)
		}
		if err := recovery.RemoveJournal(r.fs, r.state); err != nil {
			return fmt.Errorf("recover %s: %w", r.root, err)
		}
	}
	// With recordings resumed the log is kept, and the journal with it:
	// its markers name the files this recovery published.
	r.opts.logger.Info("recovered", "root", r.root, "sessions", r.recovered.Sessions, "resumed", r.resumed,
		"completed_episodes", r.recovered.Completed, "incomplete_episodes", r.recovered.Incomplete)
	return nil
}

// startResumed sets up the checkpoints for a log that Open kept, once it
// is open again: every event in it is applied, and the log is kept from
// the first event of the oldest open episode (as after a sealed snapshot)
// until a new snapshot is sealed.
func (r *Recorder) startResumed() {
	r.ckpt.applied = uint64(r.log.LastPos())
	r.ckpt.sealedFrom = r.asm.OldestOpen()
}

// keepRecoveredRun takes s's run state for RecoveredRun, once recovery
// has replayed the log (the assembler then drops its hashes).
func (r *Recorder) keepRecoveredRun(s assembly.Recording) {
	if s.Nonce != nil || s.Hashes.Len() > 0 {
		r.recovRuns[s.Rec] = RecoveredRun{Nonce: s.Nonce, Hashes: s.Hashes}
	}
}
