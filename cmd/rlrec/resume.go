package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/published"
	"github.com/rlrec/rlrec/internal/recswap"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
)

// Resuming an interrupted ingest
//
// Ingest numbers the events of each recording of the stream 1, 2, 3, ...
// in stream order (the invalid ones, which no recording's content holds,
// not), gives each its content hash (runid.ContentHash of the message as
// the stream holds it) and its run's nonce (the one the message carries,
// or one derived from the recording's first message: runid.Derive), and
// records them with them. So the recording's published sessions, logs
// and telemetry files prove what ROOT holds of the stream: its run nonce
// and its content chain, the number n of its first events and the hash
// chained over theirs (rlrec.content_chain). After a kill, 'rlrec
// recover' (or the next ingest's open) writes every event the log holds,
// the recording as crashed, and its chain covers exactly those events.
//
// Ingesting a stream whose recording ROOT holds (any published file of
// it, in a ROOT directory) then:
//
//   - takes its nonce from the stream's first event of it: another run
//     than the one ROOT holds is refused, naming both runs;
//   - chains the stream's first n events of it: another chain than the
//     one ROOT holds means the stream differs from what was recorded at
//     one or more of those events, and is refused, naming the recording,
//     the stream messages of its events 1 to n and both chains;
//   - a stream that holds fewer than n events of it is refused too;
//   - a stream with exactly n: ROOT holds all of it ("already holds it",
//     as before; exit 1);
//   - a stream with more: the whole recording is derived again from the
//     stream, into a staging ROOT (ROOT/_rlrec/resume/stage) by a
//     recorder of its own, and, once that is closed and durable, its
//     files replace the recording's in ROOT, table by table, each in one
//     atomic exchange, the sessions table last (internal/recswap, which
//     also says how a crash during the swap is completed: by the next
//     ingest or recover of ROOT).
//
// The recording then equals, row for row and every value (blobs) byte
// for byte, what an uninterrupted ingest of the stream gives. How the
// rows are cut into files may differ, as it does between any two
// ingests: a steps file's page and row-group sizes depend on how many
// steps files are open at once (parquetout.FileShare), and a
// recording's episodes, sessions, logs and telemetry files are flushed
// on a timer as well as by size. The rows of the events ROOT
// held are derived again from the same events, and nothing of the
// interruption stays in the tables (the crashed status, the incomplete
// episodes and their partial steps are replaced). What records it is
// ingest's report (resumed, with the events held and added): the
// interruption was a property of the run that recorded it, not of the
// recording, and a reader of the tables cannot tell it from one
// uninterrupted ingest. Two fields are not the stream's own, and differ
// between any two ingests as they do here: the times of events without
// one (stamped with the clock of the ingest that records them, so the
// resume's), and the ended_at of a recording the stream does not end
// (the wall clock of the ingest that closes it).
//
// Not resumed: a recording ROOT holds without a content chain (recorded
// unnumbered, by rlrec serve without content hashes, or by an rlrec
// before the chain): refused as "already holds it"; and any recording of
// an s3:// ROOT, which cannot exchange a directory: refused as before.

// recMode is what ingest does with a recording of the stream.
type recMode uint8

const (
	// modeRecord: ROOT holds none of it; the ROOT's recorder records it.
	modeRecord recMode = iota
	// modeResume: ROOT holds part of it, and the stream agrees so far;
	// the staging recorder records the whole of it.
	modeResume
	// modeSkip: refused; its events are counted, not recorded.
	modeSkip
)

// streamRec is one recording of the stream.
type streamRec struct {
	rec  hive.Recording
	mode recMode
	// seq counts its valid events so far: the last one's number.
	seq uint64
	// nonce is its run's nonce: its first event's, or derived from it.
	nonce []byte
	chain runid.Chain
	held  published.Held
	// first and upTo are the stream message indexes of its event 1 and
	// of its event held.Chain.Events.
	first, upTo int
	// verified: its first held.Chain.Events events chain as ROOT holds.
	verified bool
	// heldErr: what ROOT holds of it could not be read.
	heldErr error
}

// resumer routes each recording of the stream to the ROOT's recorder, to
// the staging recorder of a resume, or to the refusals.
type resumer struct {
	root   string // the ROOT directory; "" for an s3:// ROOT (no resume)
	st     store.Root
	main   *recorder.Recorder
	stage  *recorder.Recorder
	log    *slog.Logger
	recs   map[hive.Recording]*streamRec
	order  []*streamRec
	report *ingestReport
}

// newResumer returns the resumer of an ingest into root by main, after
// completing a swap a crash interrupted (recswap.Finish).
func newResumer(ctx context.Context, root string, main *recorder.Recorder, log *slog.Logger, rep *ingestReport) (*resumer, error) {
	r := &resumer{main: main, log: log, recs: make(map[hive.Recording]*streamRec), report: rep}
	if store.IsURL(root) {
		return r, nil
	}
	if err := finishSwap(root, log); err != nil {
		return nil, err
	}
	st, err := store.OpenRoot(ctx, vfs.OS(), root, store.S3Options{})
	if err != nil {
		return nil, err
	}
	r.root, r.st = root, st
	return r, nil
}

// finishSwap completes the swap of a resume a crash interrupted, or
// removes the staging ROOT of one that never swapped. The caller holds
// ROOT's lock.
func finishSwap(root string, log *slog.Logger) error {
	found, err := recswap.Finish(root)
	if err != nil {
		return fmt.Errorf("%s: finish the replacement of resumed recordings that an interrupted ingest began: %w", root, err)
	}
	if found {
		log.Warn("finished replacing the files of recordings an interrupted ingest had resumed", "root", root)
	}
	return nil
}

// of returns the recording rec of the stream, deciding on its first event
// what ingest does with it.
func (r *resumer) of(rec hive.Recording) (*streamRec, error) {
	if s, ok := r.recs[rec]; ok {
		return s, nil
	}
	s := &streamRec{rec: rec}
	r.recs[rec] = s
	r.order = append(r.order, s)
	if r.st == nil {
		return s, nil
	}
	held, err := published.HeldOf(r.st, rec)
	if err != nil {
		// Left to the recorder, as before: it refuses the recording if
		// ROOT holds it, or fails it if its files cannot be written.
		s.heldErr = err
		return s, nil
	}
	s.held = held
	switch {
	case held.Files == 0:
	case held.Chain.Events == 0:
		// Held, and nothing says which events: refused as before.
		s.mode = modeSkip
		r.report.refuseWhy(rec, "it keeps no content chain (recorded without one, by an earlier rlrec or from unnumbered events), so what it lacks cannot be told")
	default:
		s.mode = modeResume
	}
	return s, nil
}

// record hands the stream's current event (message index idx, bytes msg)
// to the recorder its recording goes to, with its number and run.
func (r *resumer) record(ctx context.Context, sr *events.StreamReader) error {
	ev := sr.Event()
	sid, route := ev.Header()
	s, err := r.of(hive.Recording{SessionID: sid, EnvID: route.EnvID})
	if err != nil {
		return err
	}
	s.seq++
	msg := sr.Message()
	hash := runid.ContentHash(msg)
	nonce := sr.RunNonce()
	if s.seq == 1 {
		s.first = sr.Index()
		if nonce != nil {
			s.nonce = bytes.Clone(nonce)
		} else {
			s.nonce = runid.Derive(msg)
		}
	}
	run := recorder.Run{Nonce: nonce, Hash: hash}
	if nonce == nil {
		run.Nonce, run.Derived = s.nonce, true
	}
	if s.mode == modeResume {
		r.check(s, sr.Index(), hash)
	}
	var rec *recorder.Recorder
	switch s.mode {
	case modeRecord:
		rec = r.main
	case modeResume:
		if rec, err = r.staging(); err != nil {
			return err
		}
	default:
		r.report.refuse(sid, route, nil)
		return nil
	}
	if sr.RecorderClock() {
		// A replayed recording whose times were a recorder's.
		err = rec.RecordStampedRun(ctx, ev, sr.Time(), s.seq, run)
	} else {
		// The zero time: the recorder stamps its clock.
		err = rec.RecordSequencedRun(ctx, ev, sr.Time(), s.seq, run)
	}
	if err != nil {
		if errors.Is(err, recorder.ErrRecordingExists) {
			s.mode = modeSkip
			r.report.refuse(sid, route, err)
			if s.heldErr != nil {
				r.report.refuseWhy(s.rec, fmt.Sprintf("what it holds could not be read, so it is not resumed: %v", s.heldErr))
			}
			return nil
		}
		return err
	}
	if s.mode == modeRecord {
		// A resumed recording's events count once it is swapped in.
		r.report.recorded++
	}
	return nil
}

// check compares the stream's recording s, at its event numbered s.seq
// (message idx, content hash hash), with what ROOT holds, and refuses it
// at the first disagreement.
func (r *resumer) check(s *streamRec, idx int, hash uint64) {
	if s.seq == 1 && !bytes.Equal(s.nonce, s.held.Nonce) {
		r.refuseResume(s, fmt.Sprintf("it is another run: %s recorded it, the stream's events of it (message %d on) are %s",
			runid.Describe(s.held.Nonce), idx, runid.Describe(s.nonce)))
		return
	}
	s.chain = s.chain.Add(s.seq, hash)
	if s.seq != s.held.Chain.Events {
		return
	}
	s.upTo = idx
	if s.chain != s.held.Chain {
		r.refuseResume(s, fmt.Sprintf("the stream differs from what was recorded at one or more of the %d events of it that %s holds "+
			"(stream messages %d to %d: their content chain is %s, %s has %s)",
			s.held.Chain.Events, r.root, s.first, idx, s.chain, s.held.ChainFile, s.held.Chain))
		return
	}
	s.verified = true
}

// refuseResume refuses the recording s, held in part, for why.
func (r *resumer) refuseResume(s *streamRec, why string) {
	s.mode = modeSkip
	r.report.disagree(s.rec, why)
}

// recordInvalid hands an invalid event of the stream to the recorder of
// the recording it names.
func (r *resumer) recordInvalid(ctx context.Context, bad *events.InvalidEventError, err error) error {
	rec := r.main
	if bad.SessionID != "" && bad.Route.EnvID != "" {
		s, serr := r.of(hive.Recording{SessionID: bad.SessionID, EnvID: bad.Route.EnvID})
		if serr != nil {
			return serr
		}
		switch s.mode {
		case modeResume:
			if rec, serr = r.staging(); serr != nil {
				return serr
			}
		case modeSkip:
			r.report.refuse(bad.SessionID, bad.Route, nil)
			return nil
		}
	}
	switch err := rec.RecordInvalid(ctx, err, stamp(bad.Time)); {
	case err == nil:
		r.report.counted++
	case errors.Is(err, recorder.ErrRecordingExists):
		r.report.refuse(bad.SessionID, bad.Route, err)
	default:
		// recorder.ErrNoRecording among them: the caller counts it.
		return err
	}
	return nil
}

// staging returns the staging recorder, opening it on first use.
func (r *resumer) staging() (*recorder.Recorder, error) {
	if r.stage != nil {
		return r.stage, nil
	}
	dir := recswap.StageDir(r.root)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("create the staging ROOT of a resume: %w", err)
	}
	// The same options as the ROOT's recorder (the default budget: how
	// long episodes stream their rows to row groups depends on it), so
	// the files are those an uninterrupted ingest writes.
	raiseMemoryLimitForStaging()
	rec, err := recorder.Open(dir, recorder.WithLayout(r.main.Layout()), recorder.WithLogger(r.log))
	if err != nil {
		return nil, fmt.Errorf("open the staging ROOT of a resume, %s: %w", dir, err)
	}
	r.stage = rec
	return rec, nil
}

// finish ends the resumes once the stream has ended: it closes the
// staging recorder and swaps in the recordings the stream extended. A
// stream that stopped early (damage, an error, Ctrl-C) is treated as an
// ingest treats it: what came before the stop is recorded, so a
// recording whose held events it verified and extended is swapped in as
// an uninterrupted ingest of it would leave it (its end not reached:
// status open), and ingesting the whole stream later resumes it again.
func (r *resumer) finish(ctx context.Context) error {
	var swap []hive.Recording
	for _, s := range r.order {
		if s.mode != modeResume {
			continue
		}
		switch n := s.held.Chain.Events; {
		case !s.verified:
			r.refuseResume(s, fmt.Sprintf("%s holds %s of it, the stream only %d (stream messages %d on)",
				r.root, count(int64(n), "event"), s.seq, s.first))
		case s.seq == n:
			s.mode = modeSkip
			r.report.refuseWhy(s.rec, "")
		default:
			swap = append(swap, s.rec)
			r.report.recorded += int(s.seq)
			r.report.resumed = append(r.report.resumed, resumed{rec: s.rec, held: n, added: s.seq - n})
		}
	}
	for _, s := range r.order {
		if i, ok := r.report.index[s.rec]; ok && s.held.Files > 0 {
			// Every event of it in the stream, those before the refusal
			// included.
			r.report.refused[i].events = int(s.seq)
		}
	}
	if r.stage == nil {
		return nil
	}
	err := r.stage.Close(context.WithoutCancel(ctx))
	if err != nil {
		err = fmt.Errorf("the staging ROOT of the resumed recordings: %w", err)
	}
	if err != nil || len(swap) == 0 {
		for _, s := range r.report.resumed {
			r.report.recorded -= int(s.held + s.added)
		}
		r.report.resumed = nil
		if rerr := os.RemoveAll(filepath.Join(r.root, hive.StateDir, recswap.Dir)); rerr != nil && err == nil {
			err = fmt.Errorf("remove the staging ROOT of the resumed recordings: %w", rerr)
		}
		return err
	}
	if err := recswap.Replace(r.root, swap); err != nil {
		for _, s := range r.report.resumed {
			r.report.recorded -= int(s.held + s.added)
		}
		r.report.resumed = nil
		return fmt.Errorf("replace the files of the resumed recordings: %w; the next ingest or recover of %s finishes it", err, r.root)
	}
	return nil
}

// resumed is a recording ingest finished.
type resumed struct {
	rec         hive.Recording
	held, added uint64
}
