package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// replayOptions are the replay command's flags.
type replayOptions struct {
	published bool
	force     bool
	session   string
	// sessionGiven: --session was given, perhaps empty (an empty session
	// id is valid: the runtime may send one).
	sessionGiven bool
	env          string
	episode      string
	format       string
	out          string
}

// givenString is a string flag that records whether it was given, so
// that an empty value differs from none.
type givenString struct {
	val   *string
	given *bool
}

func (g givenString) String() string {
	if g.val == nil {
		return ""
	}
	return *g.val
}

func (g givenString) Set(s string) error {
	*g.val, *g.given = s, true
	return nil
}

var replayFlags replayOptions

var cmdReplay = &Command{
	Name:      "replay",
	UsageLine: "replay ROOT (--session ID [--env ENV] | --env ENV) [--episode RECORD_ID] [--format jsonl|events|arrow] [-o FILE [--force]] [--published]",
	Short:     "stream recordings' steps decoded, as events, or as Arrow",
	Long: `Replay reads the steps of the recordings --session and --env select (or
of one episode of one recording with --episode), recording after
recording, in episode record id order and step order within each episode,
and writes them to standard output or to FILE (written under a temporary
name, then renamed). --format arrow and --episode read one recording: a
selection of several is an error listing each.

Formats (--format):
  jsonl   one JSON object per step (the default):
            {"session_id", "env_id", "episode_record_id", "episode_id", "step",
             "session_step", "reward", "is_first", "is_last", "terminated",
             "truncated", "recorded_at" (RFC 3339, nanoseconds, UTC),
             "observation", "action"}
          observation and action decoded from the blobs with the space
          specs stored in the files (Dict as an object, Tuple as an array,
          arrays nested by shape, Text as a string, bool Box elements as
          true/false, MultiBinary as 0/1, NaN and infinities as the
          strings "NaN", "Infinity", "-Infinity"); null when none was
          recorded. An integer outside +-(2^53-1) (int64 and uint64
          leaves, step counters) is written as a JSON string of its
          digits, "18446744073709551615": readers that parse JSON numbers
          as doubles (JavaScript, jq) would round it.
  events  the hook event stream the session was recorded from, as a
          length-delimited protobuf stream with the recorded times (the
          input of 'rlrec ingest'): recording it again gives equal tables.
          Whole recordings only (no --episode). What had to be inferred is
          reported on standard error.
  arrow   an Arrow IPC stream of the steps rows: session_id, env_id,
          episode_record_id and the steps table's fixed columns (blobs as
          binary, recorded_at as timestamp[us, UTC]); the typed columns are
          left out, the blobs hold the exact values.

Example:

  rlrec replay data --session 0190a1b2-... --episode ep-000003 | head
  rlrec replay data --session 0190a1b2-... --format events |
      rlrec ingest --out copy -
  rlrec replay data --session 0190a1b2-... --format arrow -o steps.arrows`,
	SetFlags: func(fs *flag.FlagSet) {
		replayFlags = replayOptions{format: "jsonl"}
		bindReplayFlags(fs, &replayFlags)
	},
	Run: runReplay,
}

// bindReplayFlags registers the flags with f's current values as defaults.
func bindReplayFlags(fs *flag.FlagSet, f *replayOptions) {
	fs.Var(givenString{&f.session, &f.sessionGiven}, "session", "the recordings of session `ID` (--session \"\" names the empty id)")
	fs.StringVar(&f.env, "env", f.env, "the recordings of `ENV`: an env id, component id or name (cartpole), of every session or of --session's")
	fs.StringVar(&f.episode, "episode", f.episode, "the episode of record id `RECORD_ID` (default: every episode of the session)")
	fs.StringVar(&f.format, "format", f.format, "output `FORMAT`: jsonl, events or arrow")
	outFlag(fs, &f.out, "output `FILE` (default: standard output)")
	publishedFlag(fs, &f.published)
	fs.BoolVar(&f.force, "force", f.force, "replace the output file when it exists")
}

func runReplay(ctx context.Context, env *Env, args []string) error {
	f := replayFlags
	if len(args) != 1 {
		return usagef("want one ROOT argument, got %d", len(args))
	}
	if !f.sessionGiven && f.env == "" {
		return usagef("--session or --env is required; 'rlrec inspect %s' lists the recordings", args[0])
	}
	switch f.format {
	case "jsonl", "arrow":
	case "events":
		if f.episode != "" {
			return usagef("--format events replays whole sessions; leave out --episode")
		}
	default:
		return usagef("--format %q: want jsonl, events or arrow", f.format)
	}
	if f.format != "jsonl" && (f.out == "" || f.out == "-") && env.StdoutTerminal {
		return refuseTerminal("--format " + f.format)
	}
	if err := checkNewFile(f.out, f.force); err != nil {
		return err
	}
	if err := checkRoot(args[0]); err != nil {
		return err
	}
	if err := checkRecovered(args[0], f.published); err != nil {
		return err
	}
	d, err := dataset.Open(args[0])
	if err != nil {
		return err
	}
	defer d.Close()
	// JSON lines and events carry their recording's ids, so they replay
	// every recording --session and --env select, one after another; an
	// Arrow stream has one schema and an --episode record id one
	// recording, so those replay one.
	sel := recordingSel{session: f.session, bySession: f.sessionGiven, env: f.env}
	var recs []dataset.Recording
	if f.episode != "" || f.format == "arrow" {
		rec, err := lookupRecording(d, sel)
		if err != nil {
			return err
		}
		recs = []dataset.Recording{rec}
	} else if recs, err = selectRecordings(d, sel); err != nil {
		return err
	} else if len(recs) == 0 {
		_, err := lookupRecording(d, sel)
		return err
	}
	rids := make([][]string, len(recs))
	episodes := 0
	for i, rec := range recs {
		if f.episode != "" {
			if !d.HasSteps(rec, f.episode) {
				return fmt.Errorf("%s episode %q has no steps in %s; run 'rlrec inspect %s --session %s --env %s' for the list",
					rec, f.episode, args[0], args[0], shellWord(rec.SessionID), shellWord(rec.EnvID))
			}
			rids[i] = []string{f.episode}
		} else {
			rids[i] = d.EpisodeRecordIDs(rec)
		}
		episodes += len(rids[i])
	}
	write := func(w io.Writer) (struct{}, error) {
		bw := bufio.NewWriterSize(w, 1<<20)
		var err error
		for i, rec := range recs {
			switch f.format {
			case "jsonl":
				err = replayJSONL(ctx, bw, d, rec, rids[i])
			case "events":
				err = replayEvents(ctx, env, bw, d, rec)
			case "arrow":
				err = replayArrow(ctx, bw, d, rec, rids[i])
			}
			if err != nil {
				return struct{}{}, err
			}
		}
		if err := bw.Flush(); err != nil {
			return struct{}{}, fmt.Errorf("write output: %w", err)
		}
		return struct{}{}, nil
	}
	if f.out == "" || f.out == "-" {
		_, err = write(env.Stdout)
		return err
	}
	bar := bytesProgress(env, -1, "writing "+f.out)
	var n countingWriter
	_, err = writeFileAtomic(vfs.OS(), f.out, func(w io.Writer) (struct{}, error) {
		n.w = w
		if bar != nil {
			n.bar = bar
		}
		return write(&n)
	})
	if bar != nil {
		bar.Finish()
	}
	if err != nil {
		return err
	}
	what := recs[0].String()
	if len(recs) > 1 {
		what = count(len(recs), "recording")
	}
	fmt.Fprintf(env.Stderr, "replay: wrote %s of %s (%s) to %s\n", humanBytes(n.n), what, count(episodes, "episode"), f.out)
	return nil
}

// countingWriter counts the bytes written through it and shows them on a
// progress display when there is one.
type countingWriter struct {
	w   io.Writer
	n   int64
	bar interface{ Add64(int64) error }
}

func (c *countingWriter) Write(p []byte) (int, error) {
	k, err := c.w.Write(p)
	c.n += int64(k)
	if c.bar != nil {
		c.bar.Add64(int64(k))
	}
	return k, err
}

// replayJSONL writes one JSON line per step.
func replayJSONL(ctx context.Context, w io.Writer, d *dataset.Dataset, rec dataset.Recording, rids []string) error {
	var line []byte
	for _, rid := range rids {
		st, err := d.Steps(rec, rid)
		if err != nil {
			return err
		}
		prefix := append([]byte(`{"session_id":`), jsonString(rec.SessionID)...)
		prefix = append(append(prefix, `,"env_id":`...), jsonString(rec.EnvID)...)
		prefix = append(append(prefix, `,"episode_record_id":`...), jsonString(rid)...)
		for st.Next() {
			if err := ctx.Err(); err != nil {
				st.Close()
				return err
			}
			s := st.Step()
			line = append(line[:0], prefix...)
			line = append(line, `,"episode_id":`...)
			line = blob.AppendJSONString(line, s.EpisodeID)
			line = append(line, `,"step":`...)
			line = blob.AppendJSONInt(line, s.Step)
			line = append(line, `,"session_step":`...)
			line = blob.AppendJSONInt(line, s.SessionStep)
			line = append(line, `,"reward":`...)
			line = blob.AppendJSONFloat(line, s.Reward, 64)
			line = fmt.Appendf(line, `,"is_first":%t,"is_last":%t,"terminated":%t,"truncated":%t,"recorded_at":"%s","observation":`,
				s.IsFirst, s.IsLast, s.Terminated, s.Truncated, s.RecordedAt.UTC().Format(time.RFC3339Nano))
			if line, err = st.AppendObservationJSON(line); err != nil {
				st.Close()
				return err
			}
			line = append(line, `,"action":`...)
			if line, err = st.AppendActionJSON(line); err != nil {
				st.Close()
				return err
			}
			line = append(line, '}', '\n')
			if _, err := w.Write(line); err != nil {
				st.Close()
				return fmt.Errorf("write output: %w", err)
			}
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func jsonString(s string) []byte { return blob.AppendJSONString(nil, s) }

// replayEvents writes the session's rebuilt event stream.
func replayEvents(ctx context.Context, env *Env, w io.Writer, d *dataset.Dataset, rec dataset.Recording) error {
	sw := events.NewStreamWriter(w)
	s, err := d.Session(rec)
	if err != nil {
		return err
	}
	clock := ""
	if row := s.Row(); row != nil {
		clock = row.Clock
	}
	rep, err := d.ReplayEvents(rec, func(ev events.Event, at time.Time) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return sw.WriteStamped(ev, at, dataset.RecorderClocked(clock, ev))
	})
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(env.Stderr, "rlrec replay: note: %s\n", n)
	}
	fmt.Fprintf(env.Stderr, "replayed %s: %s, %s, %s (%d rebuilt from dropped_steps)\n",
		rec, count(rep.Events, "event"), count(rep.Lanes, "lane"), count(rep.Batches, "batch"), rep.HiddenBatches)
	return nil
}

// arrowStepsSchema is the schema of replay --format arrow: the partition
// columns, then the fixed steps columns as package schema lists them.
var arrowStepsSchema = func() *arrow.Schema {
	fields := []arrow.Field{
		{Name: schema.ColSessionID, Type: arrow.BinaryTypes.String},
		{Name: schema.ColEnvID, Type: arrow.BinaryTypes.String},
		{Name: schema.ColEpisodeRecordID, Type: arrow.BinaryTypes.String},
	}
	for _, c := range schema.FixedStepsColumns() {
		fields = append(fields, arrowField(c))
	}
	return arrow.NewSchema(fields, nil)
}()

// arrowField is the Arrow field of a fixed steps column: text for the
// (non-null) byte arrays, binary for the nullable blobs, UTC microsecond
// timestamps, and the integer, double and boolean types as they are.
func arrowField(c schema.StepsColumn) arrow.Field {
	f := arrow.Field{Name: c.Name, Nullable: c.Node.Optional()}
	t := c.Node.Type()
	switch {
	case isTimestamp(t):
		f.Type = &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}
	case t.Kind() == parquet.ByteArray && f.Nullable:
		f.Type = arrow.BinaryTypes.Binary
	case t.Kind() == parquet.ByteArray:
		f.Type = arrow.BinaryTypes.String
	case t.Kind() == parquet.Int32:
		f.Type = arrow.PrimitiveTypes.Int32
	case t.Kind() == parquet.Int64:
		f.Type = arrow.PrimitiveTypes.Int64
	case t.Kind() == parquet.Double:
		f.Type = arrow.PrimitiveTypes.Float64
	case t.Kind() == parquet.Boolean:
		f.Type = arrow.FixedWidthTypes.Boolean
	default:
		// No other kind is a fixed steps column (TestArrowStepsSchema).
		f.Type = arrow.BinaryTypes.Binary
	}
	return f
}

func isTimestamp(t parquet.Type) bool {
	lt := t.LogicalType()
	if lt == nil {
		return false
	}
	_, ok := lt.Value.(*format.TimestampType)
	return ok
}

// arrowBatchRows is the number of rows per Arrow record batch.
const arrowBatchRows = 4096

// replayArrow writes the steps as an Arrow IPC stream.
func replayArrow(ctx context.Context, w io.Writer, d *dataset.Dataset, rec dataset.Recording, rids []string) error {
	mem := memory.NewGoAllocator()
	iw := ipc.NewWriter(w, ipc.WithSchema(arrowStepsSchema), ipc.WithAllocator(mem))
	b := array.NewRecordBuilder(mem, arrowStepsSchema)
	defer b.Release()
	flush := func() error {
		if b.Field(0).Len() == 0 {
			return nil
		}
		rec := b.NewRecordBatch()
		defer rec.Release()
		if err := iw.Write(rec); err != nil {
			return fmt.Errorf("write arrow stream: %w", err)
		}
		return nil
	}
	for _, rid := range rids {
		st, err := d.Steps(rec, rid)
		if err != nil {
			return err
		}
		for st.Next() {
			if err := ctx.Err(); err != nil {
				st.Close()
				return err
			}
			s := st.Step()
			b.Field(0).(*array.StringBuilder).Append(rec.SessionID)
			b.Field(1).(*array.StringBuilder).Append(rec.EnvID)
			b.Field(2).(*array.StringBuilder).Append(rid)
			b.Field(3).(*array.StringBuilder).Append(s.EpisodeID)
			b.Field(4).(*array.Int64Builder).Append(s.EpisodeIndex)
			b.Field(5).(*array.Int32Builder).Append(s.EnvIndex)
			b.Field(6).(*array.Int64Builder).Append(s.Step)
			b.Field(7).(*array.Int64Builder).Append(s.SessionStep)
			for i, bl := range [][]byte{s.ObservationBlob, s.ActionBlob} {
				bb := b.Field(8 + i).(*array.BinaryBuilder)
				if bl == nil {
					bb.AppendNull()
				} else {
					bb.Append(bl)
				}
			}
			b.Field(10).(*array.Float64Builder).Append(s.Reward)
			b.Field(11).(*array.BooleanBuilder).Append(s.IsFirst)
			b.Field(12).(*array.BooleanBuilder).Append(s.IsLast)
			b.Field(13).(*array.BooleanBuilder).Append(s.Terminated)
			b.Field(14).(*array.BooleanBuilder).Append(s.Truncated)
			b.Field(15).(*array.TimestampBuilder).Append(arrow.Timestamp(s.RecordedAt.UnixMicro()))
			if b.Field(0).Len() >= arrowBatchRows {
				if err := flush(); err != nil {
					st.Close()
					return err
				}
			}
		}
		err = st.Err()
		st.Close()
		if err != nil {
			return err
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if err := iw.Close(); err != nil {
		return fmt.Errorf("finish arrow stream: %w", err)
	}
	return nil
}
