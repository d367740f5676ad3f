package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/recorder"
)

// ingestOptions are the ingest command's flags.
type ingestOptions struct {
	out        string
	logDir     string
	maxMessage int
	layout     layoutValue
}

var ingestFlags ingestOptions

var cmdIngest = &Command{
	Records:   true,
	Name:      "ingest",
	UsageLine: "ingest [-o DIR|s3://BUCKET/PREFIX] [--log-dir DIR] [--layout episode|session] [--max-message BYTES] [FILE|-]",
	Short:     "record a length-delimited protobuf event stream",
	Long: `Ingest records an event stream (length-delimited rlrec.events.v1.Event
protobuf messages, as 'rlrec simulate' and 'rlrec replay --format events'
write them) from FILE, or from standard input when FILE is - or absent, into
the ROOT directory DIR (default ./rlrec-data).

Events keep the times the stream carries (the time of each hook call, as
rlrec simulate, the Go client, the Python capture and rlrec replay stamp
them), so the same stream ingested twice gives the same tables. Events
without one are stamped with the current time, and the recording's
sessions row says so (clock: "recorder", or "mixed" when only some had
one). A damaged or truncated stream stops the ingest with an
error naming the message and byte offset, after everything before the
damage has been recorded durably. A message that is well-formed but no
valid event (an unknown or missing kind, an unknown enum value such as log
level 0) is skipped and logged, and the rest of the stream is recorded: it
is counted in the sessions row of the recording it names (problem
invalid_event), and in a report printed to standard error at the end.

A recording that DIR already holds completely is refused ("already holds
it"; exit 1), and the rest of the stream recorded. One that DIR holds in
part (an ingest of the same stream was killed, then 'rlrec recover' ran)
is resumed: ingest checks, by the content hash of each of its events and
its run's nonce, that the stream's first events of it are the ones DIR
holds, derives the whole recording again from the stream, and replaces
its files, so DIR ends as an uninterrupted ingest leaves it. A stream that
disagrees with what DIR holds of a recording (another run, other content,
fewer events) is refused naming the recording, the stream messages and
what differs, and DIR keeps what it held (exit 1). Recordings in an
s3:// ROOT, or recorded by an rlrec that kept no content hashes, are not
resumed.

Example:

  rlrec simulate --env cartpole --envs 8 --episodes 50 -o - |
      rlrec ingest --out data -
  rlrec ingest --out data cartpole.events`,
	SetFlags: func(fs *flag.FlagSet) {
		ingestFlags = ingestOptions{}
		ingestFlags.out = "rlrec-data"
		outFlag(fs, &ingestFlags.out, "the ROOT `DIR` (or s3://bucket/prefix) to record into")
		logDirFlag(fs, &ingestFlags.logDir)
		fs.IntVar(&ingestFlags.maxMessage, "max-message", events.DefaultMaxMessageBytes, "largest event message accepted, in `BYTES`")
		bindLayout(fs, &ingestFlags.layout)
	},
	Run: runIngest,
}

func runIngest(ctx context.Context, env *Env, args []string) error {
	if len(args) > 1 {
		return usagef("at most one input file, got %d", len(args))
	}
	name := "-"
	if len(args) == 1 {
		name = args[0]
	}
	var in io.Reader = env.Stdin
	var size int64 = -1
	// src names the input in messages.
	src := name
	if name == "-" {
		src = "standard input"
	} else {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("%w; check the path", err)
		}
		defer f.Close()
		if info, err := f.Stat(); err == nil && info.Mode().IsRegular() {
			size = info.Size()
		}
		in = f
	}
	if name == "-" && env.StdinTerminal {
		fmt.Fprintf(env.Stderr, "rlrec ingest: waiting for an event stream on standard input, which is a terminal: "+
			"pipe one in (rlrec simulate -o - | rlrec ingest -) or give FILE; Ctrl-D ends the input, Ctrl-C stops\n")
	}
	// Progress on a terminal stderr: a bar for a file, the bytes read so
	// far for a pipe.
	bar := bytesProgress(env, size, "ingesting "+src)
	if bar != nil {
		defer bar.Close()
		in = io.TeeReader(in, bar)
	}
	// The first message is read before ROOT is created: input that is no
	// event stream (a text file, say) leaves nothing behind.
	br := bufio.NewReaderSize(in, 1<<20)
	first, err := firstFrame(br, ingestFlags.maxMessage)
	if err != nil {
		if bar != nil {
			_ = bar.Finish()
		}
		if errors.Is(err, io.EOF) {
			fmt.Fprintf(env.Stdout, "Recorded 0 events from %s: the stream is empty, so nothing was written to %s.\n", src, ingestFlags.out)
			return nil
		}
		where := ingestFlags.out + " was not created"
		if _, serr := os.Stat(ingestFlags.out); serr == nil {
			where = "nothing was written to " + ingestFlags.out
		}
		return fmt.Errorf("%s is not an event stream (length-delimited rlrec.events.v1.Event messages, as 'rlrec simulate -o' "+
			"and 'rlrec replay --format events' write): its first message %v; %s", src, err, where)
	}
	rec, err := openRecorder(ctx, env.Logger, ingestFlags.out, ingestFlags.logDir, append(ingestFlags.layout.options(), recorder.WithLogger(env.Logger))...)
	if err != nil {
		return err
	}
	in = io.MultiReader(bytes.NewReader(first), br)
	rep, ingestErr := ingest(ctx, rec, ingestFlags.out, env.Logger, bufio.NewReaderSize(in, 1<<20), ingestFlags.maxMessage)
	closeErr := rec.Close(context.WithoutCancel(ctx))
	if bar != nil {
		_ = bar.Finish()
	}
	rep.write(env.Stderr, src)
	for _, r := range rep.resumed {
		// Also when the stream stopped early: what came before is kept.
		fmt.Fprintf(env.Stdout, "Resumed %s: %s held %s of it (an interrupted ingest), the stream added %s; its files were derived again from the stream and replaced.\n",
			r.rec, ingestFlags.out, count(int64(r.held), "event"), count(int64(r.added), "event"))
	}
	if ingestErr != nil {
		if closeErr != nil {
			return fmt.Errorf("%s: %w (and closing %s: %v)", src, ingestErr, ingestFlags.out, closeErr)
		}
		return fmt.Errorf("%s: %w; the %s before it are recorded in %s", src, ingestErr, count(rep.recorded, "event"), ingestFlags.out)
	}
	if closeErr != nil {
		return closeErr
	}
	fmt.Fprintf(env.Stdout, "Recorded %s from %s into %s", count(rep.recorded, "event"), src, ingestFlags.out)
	if n := rep.counted + rep.unnamed; n > 0 {
		fmt.Fprintf(env.Stdout, "; skipped %s", count(n, "invalid event"))
	}
	fmt.Fprintf(env.Stdout, ".\n")
	disagree := 0
	for _, r := range rep.refused {
		switch {
		case r.disagrees:
			disagree++
			fmt.Fprintf(env.Stderr, "rlrec ingest: refused %s: %s (%s not recorded; nothing of what %s holds of it changed)\n",
				r.rec, r.why, count(r.events, "event"), ingestFlags.out)
		case r.claimed:
			fmt.Fprintf(env.Stderr, "rlrec ingest: refused %s: another writer, with another log directory, claimed it in %s (%s not recorded); "+
				"if no writer is recording it and that writer's log directory is lost, release the claim with 'rlrec release-claim --session %q --env %q %s' and ingest again\n",
				r.rec, ingestFlags.out, count(r.events, "event"), r.rec.SessionID, r.rec.EnvID, ingestFlags.out)
		default:
			why := ""
			if r.why != "" {
				why = "; " + r.why
			}
			fmt.Fprintf(env.Stderr, "rlrec ingest: refused %s: %s already holds it (%s not recorded again)%s\n", r.rec, ingestFlags.out, count(r.events, "event"), why)
		}
	}
	if disagree > 0 {
		return fmt.Errorf("%s: %s of the stream %s with what %s holds, not recorded; ingest the stream the ROOT was recorded from, or into another ROOT",
			src, count(disagree, "recording"), disagreeVerb(disagree), ingestFlags.out)
	}
	if len(rep.refused) > 0 {
		return fmt.Errorf("%s: %s of the stream already in %s %s not recorded again; ingest into another ROOT to keep both copies",
			src, count(len(rep.refused), "recording"), ingestFlags.out, wasWere(len(rep.refused)))
	}
	if n := rec.Stats().Repeated; n > 0 {
		// A stream without sequence numbers that carries part of itself
		// again: the copy was dropped, but the producer lost track of
		// what it sent, which the operator should know.
		return fmt.Errorf("%s: %s repeated what the stream had already given, or came after their recording's end (a resent part of it, the stream twice, or events out of order): dropped, not recorded again, and counted in the sessions rows' problems (repeated_step, duplicate_session_start, event_after_session_end); the rest is recorded in %s",
			src, count(n, "event"), ingestFlags.out)
	}
	return nil
}

// firstFrame reads the first message of an event stream from br, its
// length prefix included, and checks that it is an event: a valid one, or
// a well-formed message that names its session or kind (ingest skips and
// counts those). The error is io.EOF for an empty stream, else it says
// why the input is no event stream. The frame's buffer grows with the
// bytes read, not with what the length prefix claims.
func firstFrame(br *bufio.Reader, maxMessage int) ([]byte, error) {
	if maxMessage <= 0 {
		maxMessage = events.DefaultMaxMessageBytes
	}
	var frame []byte
	for {
		b, err := br.ReadByte()
		if err == io.EOF && len(frame) == 0 {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("ends inside its length prefix: %w", noEOF(err))
		}
		frame = append(frame, b)
		if b < 0x80 {
			break
		}
		if len(frame) == binary.MaxVarintLen64 {
			return nil, fmt.Errorf("has a length prefix longer than %d bytes", binary.MaxVarintLen64)
		}
	}
	size, _ := binary.Uvarint(frame)
	if size > uint64(maxMessage) {
		return nil, fmt.Errorf("claims %d bytes, more than the %d bytes --max-message allows", size, maxMessage)
	}
	var body bytes.Buffer
	body.Write(frame)
	if n, err := io.CopyN(&body, br, int64(size)); err != nil {
		return nil, fmt.Errorf("claims %d bytes but the input ends after %d: %w", size, n, noEOF(err))
	}
	frame = body.Bytes()
	sr := events.NewStreamReader(bytes.NewReader(frame), maxMessage)
	if sr.Next() {
		return frame, nil
	}
	var bad *events.InvalidEventError
	if errors.As(sr.Err(), &bad) {
		if bad.SessionID != "" || bad.Route.EnvID != "" || bad.Kind != 0 {
			return frame, nil
		}
		return nil, fmt.Errorf("has no event kind and names no session")
	}
	return nil, fmt.Errorf("does not decode: %v", sr.Err())
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: an end inside a message.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// refusal is a recording of the stream that ROOT already held.
type refusal struct {
	rec    hive.Recording
	events int
	// claimed: its refusal was another writer's claim (a bucket ROOT),
	// not a recording ROOT holds.
	claimed bool
	// disagrees: ROOT holds part of it and the stream disagrees with it
	// (resume.go); why says how. For a recording ROOT holds, why may
	// say why it cannot be resumed.
	disagrees bool
	why       string
}

// ingestReport is what an ingest recorded and what it skipped: messages of
// the stream that were well-formed but no valid event.
type ingestReport struct {
	recorded int
	// counted are invalid events counted in the sessions row of the
	// recording they name; unnamed name none, and only this report counts
	// them (examples holds the first few).
	counted, unnamed int
	examples         []string
	// refused are the recordings ROOT already held (their events are
	// skipped; the rest of the stream records), in stream order.
	refused []refusal
	index   map[hive.Recording]int
	// resumed are the recordings ROOT held in part that the stream
	// completed (resume.go).
	resumed []resumed
}

// entry returns the refusal of rec, adding it.
func (r *ingestReport) entry(rec hive.Recording) *refusal {
	if r.index == nil {
		r.index = make(map[hive.Recording]int)
	}
	i, ok := r.index[rec]
	if !ok {
		i = len(r.refused)
		r.index[rec] = i
		r.refused = append(r.refused, refusal{rec: rec})
	}
	return &r.refused[i]
}

// refuseWhy notes that ROOT holds rec, and why it is not resumed.
func (r *ingestReport) refuseWhy(rec hive.Recording, why string) {
	e := r.entry(rec)
	if why != "" {
		e.why = why
	}
}

// disagree notes that the stream disagrees with what ROOT holds of rec.
func (r *ingestReport) disagree(rec hive.Recording, why string) {
	e := r.entry(rec)
	e.disagrees, e.why = true, why
}

// refuse notes an event of a recording ROOT already held.
func (r *ingestReport) refuse(sid string, route events.RuntimeEnvContext, err error) {
	e := r.entry(hive.Recording{SessionID: sid, EnvID: route.EnvID})
	e.events++
	if errors.Is(err, store.ErrExists) {
		e.claimed = true
	}
}

// reportExamples is how many invalid events naming no recording the
// report lists.
const reportExamples = 5

// write prints the report of the skipped events to w, nothing when none
// was skipped.
func (r *ingestReport) write(w io.Writer, name string) {
	if r.counted+r.unnamed == 0 {
		return
	}
	fmt.Fprintf(w, "%s: skipped %s (well-formed messages that are no valid event: an unknown or missing kind, an unknown enum value)\n",
		name, count(r.counted+r.unnamed, "invalid event"))
	if r.counted > 0 {
		fmt.Fprintf(w, "  %d counted in the sessions rows of the recordings they name (problem invalid_event)\n", r.counted)
	}
	if r.unnamed > 0 {
		fmt.Fprintf(w, "  %d naming no recording (no session id or env id), counted only here:\n", r.unnamed)
		for _, e := range r.examples {
			fmt.Fprintf(w, "    %s\n", e)
		}
		if more := r.unnamed - len(r.examples); more > 0 {
			fmt.Fprintf(w, "    and %d more\n", more)
		}
	}
	fmt.Fprintf(w, "  fix the program that wrote the stream; the events around them are recorded\n")
}

// ingest records every event of the stream r, skips (and has rec count)
// the messages that are well-formed but no valid event, and returns what
// it recorded and skipped. Damage in the stream stops it.
//
// Each recording's events are numbered and carry their content hash and
// run nonce, and a recording that ROOT holds in part is resumed
// (resume.go): root is ROOT as given to the command, log the logger of
// the resume's staging recorder.
func ingest(ctx context.Context, rec *recorder.Recorder, root string, log *slog.Logger, r io.Reader, maxMessage int) (ingestReport, error) {
	var rep ingestReport
	res, err := newResumer(ctx, root, rec, log, &rep)
	if err != nil {
		return rep, err
	}
	err = ingestStream(ctx, res, r, maxMessage)
	if ferr := res.finish(ctx); ferr != nil {
		if err == nil {
			err = ferr
		} else {
			err = fmt.Errorf("%w (and %v)", err, ferr)
		}
	}
	return rep, err
}

// ingestStream records the stream r through res.
func ingestStream(ctx context.Context, res *resumer, r io.Reader, maxMessage int) error {
	rep := res.report
	sr := events.NewStreamReader(r, maxMessage)
	for {
		for sr.Next() {
			if err := res.record(ctx, sr); err != nil {
				return fmt.Errorf("record event %d: %w", sr.Index(), err)
			}
		}
		var bad *events.InvalidEventError
		if !errors.As(sr.Err(), &bad) {
			return sr.Err()
		}
		switch err := res.recordInvalid(ctx, bad, sr.Err()); {
		case err == nil:
		case errors.Is(err, recorder.ErrNoRecording):
			rep.unnamed++
			if len(rep.examples) < reportExamples {
				rep.examples = append(rep.examples, sr.Err().Error())
			}
		default:
			return fmt.Errorf("record invalid event %d: %w", sr.Index(), err)
		}
	}
}

// count returns "1 thing" or "n things" ("batches" for "batch").
func count[N int | int64](n N, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "ch") || strings.HasSuffix(thing, "s") {
		return strconv.FormatInt(int64(n), 10) + " " + thing + "es"
	}
	return strconv.FormatInt(int64(n), 10) + " " + thing + "s"
}

// disagreeVerb returns "disagrees" for 1, "disagree" otherwise.
func disagreeVerb(n int) string {
	if n == 1 {
		return "disagrees"
	}
	return "disagree"
}

// wasWere returns "was" for 1, "were" otherwise.
func wasWere[N int | int64](n N) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

// stamp returns t, or the current time for a stream event without one.
func stamp(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now()
	}
	return t
}
