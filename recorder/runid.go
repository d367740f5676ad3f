package recorder

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Run identity and content binding
//
// A server that takes numbered events from producers (rlrec serve) must
// tell a resend of a run's events from another run that reuses the
// recording's ids, and a resent event from new content under a used
// number, also after it restarts (internal/runid has the scheme). The
// recorder keeps what it needs for that:
//
//   - each event's log record carries the run's nonce (in the producer's
//     message, or appended for a derived one) and the event's content hash
//     (RecordSequencedRun, RecordEncodedRun);
//   - the assembler keeps each recording's nonce (the first one its
//     events carried) in its state and snapshots, and the sessions, logs
//     and telemetry files keep it under rlrec.run_nonce;
//   - under WithResume, recovery also keeps the content hashes of each
//     recording's last numbered events replayed from the log (those after
//     the last snapshot, at most runid.WindowEvents of them), for
//     RecoveredRun.
//
// The recorder checks neither nonces nor hashes: refusing is the
// server's work.

// Run is what a numbered event's producer run adds to it: the run's
// nonce (drawn by the producer, or derived: runid.Derive) and the
// event's content hash (runid.ContentHash).
type Run struct {
	Nonce []byte
	Hash  uint64
	// Derived: Nonce was derived, so the producer's message does not
	// carry it and its log record must (RecordEncodedRun).
	Derived bool
}

func (run Run) empty() bool { return len(run.Nonce) == 0 && run.Hash == 0 }

// recordBytes bounds what Run appends to a log record.
func (run Run) recordBytes() int { return len(run.Nonce) + 20 }

// runState is a recording's run identity in the assembler.
type runState struct {
	// nonce is the first run nonce its events carried (nil: none).
	nonce []byte
	// hashes are the content hashes of its last numbered events, kept
	// only while recovery replays the log under WithResume.
	hashes runid.Window
	// chain is the content chain of its events numbered from 1
	// (runid.Chain): what a ROOT holds of its producer's stream.
	chain runid.Chain
}

// noteRun notes the nonce and content hash of s's event numbered seq.
func (a *assembler) noteRun(s *session, seq uint64, nonce []byte, hash uint64) {
	if s.run.nonce == nil && len(nonce) > 0 {
		s.run.nonce = bytes.Clone(nonce)
	}
	s.run.chain = s.run.chain.Add(seq, hash)
	if a.keepHashes {
		s.run.hashes.Add(seq, hash)
	}
}

// RecoveredRun is what Open found in the log of a recording's run
// (WithResume): the nonce of its run (nil when its events had none) and
// the content hashes of its last numbered events.
type RecoveredRun struct {
	Nonce  []byte
	Hashes runid.Window
}

// keepRecoveredRun takes s's run state for RecoveredRun, once recovery
// has replayed the log.
func (r *Recorder) keepRecoveredRun(s *session) {
	if s.run.nonce != nil || s.run.hashes.Len() > 0 {
		r.recovRuns[s.rec()] = RecoveredRun{Nonce: s.run.nonce, Hashes: s.run.hashes}
	}
	s.run.hashes = runid.Window{}
}

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

func publishedRunNonce(st store.Root, rec hive.Recording) ([]byte, error) {
	var found, where string
	for _, table := range []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry} {
		parts, err := st.Parts(hive.RecordingPartition(table, rec).Rel())
		if err != nil {
			return nil, fmt.Errorf("run nonce of %s: %w", rec, err)
		}
		for _, p := range parts {
			v, ok, err := readKeyValue(st, p, schema.MetaRunNonce)
			if err != nil {
				return nil, fmt.Errorf("run nonce of %s: %w", rec, err)
			}
			if !ok {
				continue
			}
			if found != "" && v != found {
				return nil, fmt.Errorf("run nonce of %s: %s names %s, %s names %s", rec, where, found, st.Path(p.Rel), v)
			}
			found, where = v, st.Path(p.Rel)
		}
	}
	if found == "" {
		return nil, nil
	}
	n, err := runid.Parse(strings.TrimSpace(found))
	if err != nil {
		return nil, fmt.Errorf("run nonce of %s: %s has %s %q: %w", rec, where, schema.MetaRunNonce, found, err)
	}
	return n, nil
}

// readKeyValue reads the key-value metadata key of the published part p.
func readKeyValue(st store.Root, p hive.Object, key string) (string, bool, error) {
	f, err := st.Open(p.Rel, p.Size)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return parquetout.ReadKeyValue(f, f.Size(), st.Path(p.Rel), key)
}
