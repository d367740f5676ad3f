package recorder

import (
	"fmt"
	"strings"

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

// RecoveredRun is what Open found in the log of a recording's run
// (WithResume): the nonce of its run (nil when its events had none) and
// the content hashes of its last numbered events.
type RecoveredRun struct {
	Nonce  []byte
	Hashes runid.Window
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
