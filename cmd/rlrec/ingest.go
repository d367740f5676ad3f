package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/rlrec/rlrec/events"
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
	n, ingestErr := ingest(ctx, rec, bufio.NewReaderSize(in, 1<<20), ingestFlags.maxMessage)
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
	return nil
}

// ingest records every event of the stream r and returns how many it
// recorded.
func ingest(ctx context.Context, rec *recorder.Recorder, r io.Reader, maxMessage int) (int, error) {
	sr := events.NewStreamReader(r, maxMessage)
	n := 0
	for sr.Next() {
		t := sr.Time()
		if t.IsZero() {
			t = time.Now()
		}
		if err := rec.RecordAt(ctx, sr.Event(), t); err != nil {
			return n, fmt.Errorf("record event %d: %w", sr.Index(), err)
		}
		n++
	}
	return n, sr.Err()
}
