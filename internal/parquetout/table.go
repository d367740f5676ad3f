package parquetout

import (
	"bufio"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// Row is a row type of one of the fixed tables.
type Row interface {
	schema.EpisodeRow | schema.SessionRow | schema.LogRow | schema.TelemetryRow
}

// tableOf returns the table name of row type T and its columns written
// without page statistics or index bounds: the blobs, and the logs'
// message, whose min and max would be full copies of a value of up to the
// maximum event size in the page header (twice: its old and new fields)
// and the column index, and mean nothing to a query: a logs file of one
// 8 MiB message was 32 MiB with them, and writing it allocated 19 times
// the message (TestLargeLogMessage).
func tableOf[T Row]() (string, [][]string) {
	var zero T
	switch any(zero).(type) {
	case schema.EpisodeRow:
		return schema.TableEpisodes, [][]string{{schema.ColFinalObservationBlob}}
	case schema.SessionRow:
		return schema.TableSessions, nil
	case schema.LogRow:
		return schema.TableLogs, [][]string{{schema.ColMessage}}
	default:
		return schema.TableTelemetry, nil
	}
}

// TableWriter encodes one file of the episodes, sessions, logs or
// telemetry table to an io.Writer (NewTableEncoder). It is not safe for
// concurrent use.
type TableWriter[T Row] struct {
	name      string
	w         *parquet.GenericWriter[T]
	out       *bufio.Writer // the file's write buffer, in front of its writer
	rowsLimit int64
	groupRows int64
	rows      int64
	err       error
	done      bool
}

// NewTableEncoder starts a file of T's table written to out; name is what
// errors call the file (a part's temp path). meta's EpisodeRecordID and
// spaces are used for the episodes table only. The encoder writes the
// whole file, footer included, to out by Close.
func NewTableEncoder[T Row](out io.Writer, name string, meta Metadata, cfg Config) (*TableWriter[T], error) {
	cfg = cfg.withDefaults()
	table, blobs := tableOf[T]()
	var spaces spaceJSON
	if table == schema.TableEpisodes {
		var err error
		if spaces, err = newSpaceJSON(meta.ObservationSpace, meta.ActionSpace); err != nil {
			return nil, err
		}
	}
	kv := keyValues(table, meta, spaces)
	opts, err := cfg.writerOptions(blobs, kv)
	if err != nil {
		return nil, err
	}
	// A new parquet-go writer for every file: see getWriteBuffer.
	w := &TableWriter[T]{name: name, rowsLimit: cfg.RowGroupRows, out: getWriteBuffer(out, cfg.WriteBufferSize)}
	w.w = parquet.NewGenericWriter[T](w.out, opts...)
	return w, nil
}

// Write appends rows, ending a row group every Config.RowGroupRows rows.
// After an error, call Abort.
func (w *TableWriter[T]) Write(rows []T) error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	for len(rows) > 0 {
		n := min(int64(len(rows)), w.rowsLimit-w.groupRows)
		if _, err := w.w.Write(rows[:n]); err != nil {
			w.err = fmt.Errorf("parquetout: write rows to %s: %w", w.name, err)
			return w.err
		}
		rows = rows[n:]
		w.rows += n
		w.groupRows += n
		if w.groupRows >= w.rowsLimit {
			if err := w.w.Flush(); err != nil {
				w.err = fmt.Errorf("parquetout: flush row group to %s: %w", w.name, err)
				return w.err
			}
			w.groupRows = 0
		}
	}
	return nil
}

// Close writes the footer: the file is complete in the writer
// NewTableEncoder was given. After an error, call Abort.
func (w *TableWriter[T]) Close() error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.w.Close(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.name, err)
		return w.err
	}
	if err := w.out.Flush(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.name, err)
		return w.err
	}
	w.done = true
	putWriteBuffer(w.out)
	w.w, w.out = nil, nil
	return nil
}

// Abort drops the encoder; what it wrote stays in its writer (the caller
// discards it). It is a no-op after Close.
func (w *TableWriter[T]) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.w, w.out = nil, nil
}

// EncodeTable writes rows as one whole file of T's table to out.
func EncodeTable[T Row](out io.Writer, name string, meta Metadata, cfg Config, rows []T) error {
	w, err := NewTableEncoder[T](out, name, meta, cfg)
	if err != nil {
		return err
	}
	if err := w.Write(rows); err != nil {
		w.Abort()
		return err
	}
	if err := w.Close(); err != nil {
		w.Abort()
		return err
	}
	return nil
}
