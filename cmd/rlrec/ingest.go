package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/recorder"
)

// ingestOptions are the ingest command's flags.
type ingestOptions struct {
	out        string
	maxMessage int
}

var ingestFlags ingestOptions

var cmdIngest = &Command{
	Records:   true,
	Name:      "ingest",
	UsageLine: "ingest [--out DIR] [--max-message BYTES] [FILE|-]",
	Short:     "record a length-delimited protobuf event stream",
	Long: `Ingest records an event stream (length-delimited rlrec.events.v1.Event
protobuf messages, as 'rlrec simulate' and 'rlrec replay --format events'
write them) from FILE, or from standard input when FILE is - or absent, into
the ROOT directory DIR (default ./rlrec-data).

Events keep the times the stream carries; events without one are stamped
with the current time. A damaged or truncated stream stops the ingest with an
error naming the message and byte offset, after everything before the
damage has been recorded durably.

Example:

  rlrec simulate --env cartpole --envs 8 --episodes 50 -o - | rlrec ingest --out data -
  rlrec ingest --out data cartpole.events`,
	SetFlags: func(fs *flag.FlagSet) {
		ingestFlags = ingestOptions{}
		fs.StringVar(&ingestFlags.out, "out", "rlrec-data", "output ROOT directory")
		fs.IntVar(&ingestFlags.maxMessage, "max-message", events.DefaultMaxMessageBytes, "largest event message accepted, in bytes")
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
	if name != "-" {
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
	if env.IsTerminal && size > 0 {
		bar := progressbar.DefaultBytes(size, "ingesting "+name)
		defer bar.Close()
		in = io.TeeReader(in, bar)
	}
	rec, err := recorder.Open(ingestFlags.out, recorder.WithLogger(env.Logger))
	if err != nil {
		return err
	}
	n, refused, ingestErr := ingest(ctx, rec, bufio.NewReaderSize(in, 1<<20), ingestFlags.maxMessage)
	closeErr := rec.Close(context.WithoutCancel(ctx))
	if ingestErr != nil {
		if closeErr != nil {
			return fmt.Errorf("%s: %w (and closing %s: %v)", name, ingestErr, ingestFlags.out, closeErr)
		}
		return fmt.Errorf("%s: %w; the %d events before it are recorded in %s", name, ingestErr, n, ingestFlags.out)
	}
	if closeErr != nil {
		return closeErr
	}
	fmt.Fprintf(env.Stdout, "Recorded %d events from %s into %s.\n", n, name, ingestFlags.out)
	if len(refused) > 0 {
		for _, r := range refused {
			fmt.Fprintf(env.Stderr, "rlrec ingest: refused %s: %s already holds it (%d events not recorded again)\n", r.rec, ingestFlags.out, r.events)
		}
		return fmt.Errorf("%s: %d recordings of the stream are already in %s and were not recorded again; ingest into another ROOT to keep both copies",
			name, len(refused), ingestFlags.out)
	}
	return nil
}

// refusal is a recording of the stream that ROOT already held.
type refusal struct {
	rec    hive.Recording
	events int
}

// ingest records every event of the stream r and returns how many it
// recorded, and the recordings it refused because ROOT already held them
// (their events are skipped; the rest of the stream records).
func ingest(ctx context.Context, rec *recorder.Recorder, r io.Reader, maxMessage int) (int, []refusal, error) {
	sr := events.NewStreamReader(r, maxMessage)
	n := 0
	var refused []refusal
	index := map[hive.Recording]int{}
	for sr.Next() {
		t := sr.Time()
		if t.IsZero() {
			t = time.Now()
		}
		ev := sr.Event()
		if err := rec.RecordAt(ctx, ev, t); err != nil {
			if !errors.Is(err, recorder.ErrRecordingExists) {
				return n, refused, fmt.Errorf("record event %d: %w", sr.Index(), err)
			}
			sid, route := ev.Header()
			key := hive.Recording{SessionID: sid, EnvID: route.EnvID}
			i, ok := index[key]
			if !ok {
				i = len(refused)
				index[key] = i
				refused = append(refused, refusal{rec: key})
			}
			refused[i].events++
			continue
		}
		n++
	}
	return n, refused, sr.Err()
}
