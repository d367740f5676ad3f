package parquetout

import (
	"bufio"
	"fmt"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// Row is a row type of one of the fixed tables.
type Row interface {
	schema.EpisodeRow | schema.SessionRow | schema.LogRow | schema.TelemetryRow
}

// tableOf returns the table name and blob columns of row type T.
func tableOf[T Row]() (string, [][]string) {
	var zero T
	switch any(zero).(type) {
	case schema.EpisodeRow:
		return schema.TableEpisodes, [][]string{{schema.ColFinalObservationBlob}}
	case schema.SessionRow:
		return schema.TableSessions, nil
	case schema.LogRow:
		return schema.TableLogs, nil
	default:
		return schema.TableTelemetry, nil
	}
}

// TableWriter writes one part file of the episodes, sessions, logs or
// telemetry table. It is not safe for concurrent use.
type TableWriter[T Row] struct {
	part      *Part
	w         *parquet.GenericWriter[T]
	out       *bufio.Writer // the file's write buffer, in front of part
	rowsLimit int64
	groupRows int64
	rows      int64
	err       error
	done      bool
}

// CreateTable starts a part file of T's table in dir. meta's
// EpisodeRecordID and spaces are used for the episodes table only.
func CreateTable[T Row](fsys vfs.FS, dir string, meta Metadata, cfg Config) (*TableWriter[T], error) {
	return CreateTableAt[T](fsys, dir, -1, meta, cfg)
}

// CreateTableAt is CreateTable with an explicit part number (see
// CreatePartAt).
func CreateTableAt[T Row](fsys vfs.FS, dir string, n int, meta Metadata, cfg Config) (*TableWriter[T], error) {
	return createTable[T](fsys, dir, n, meta, cfg, false)
}

// CreateTableGroupAt is CreateTableAt for group commit (see
// CreateGroupPartAt): end the file with Finish and commit it with
// CommitParts.
func CreateTableGroupAt[T Row](fsys vfs.FS, dir string, n int, meta Metadata, cfg Config) (*TableWriter[T], error) {
	return createTable[T](fsys, dir, n, meta, cfg, true)
}

func createTable[T Row](fsys vfs.FS, dir string, n int, meta Metadata, cfg Config, group bool) (*TableWriter[T], error) {
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
	part, err := createPart(fsys, dir, n, group)
	if err != nil {
		return nil, err
	}
	// A new parquet-go writer for every file: see getWriteBuffer.
	w := &TableWriter[T]{part: part, rowsLimit: cfg.RowGroupRows, out: getWriteBuffer(part, cfg.WriteBufferSize)}
	w.w = parquet.NewGenericWriter[T](w.out, opts...)
	return w, nil
}

// Path returns the final path of the file.
func (w *TableWriter[T]) Path() string { return w.part.Path() }

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
			w.err = fmt.Errorf("parquetout: write rows to %s: %w", w.part.TempPath(), err)
			return w.err
		}
		rows = rows[n:]
		w.rows += n
		w.groupRows += n
		if w.groupRows >= w.rowsLimit {
			if err := w.w.Flush(); err != nil {
				w.err = fmt.Errorf("parquetout: flush row group to %s: %w", w.part.TempPath(), err)
				return w.err
			}
			w.groupRows = 0
		}
	}
	return nil
}

// Commit writes the footer and makes the file durable under its final name
// (see Part.Commit), and returns that path. After an error, call Abort.
func (w *TableWriter[T]) Commit() (string, error) {
	if err := w.close(); err != nil {
		return "", err
	}
	if err := w.part.Commit(); err != nil {
		return "", err
	}
	return w.part.Path(), nil
}

// Finish writes the footer and closes the temp file without syncing it
// (see Part.Finish); commit the returned part with CommitParts, or abort
// it. After an error, call Abort.
func (w *TableWriter[T]) Finish() (*Part, error) {
	if err := w.close(); err != nil {
		return nil, err
	}
	if err := w.part.Finish(); err != nil {
		return nil, err
	}
	return w.part, nil
}

func (w *TableWriter[T]) close() error {
	if w.done {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if err := w.w.Close(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.part.TempPath(), err)
		return w.err
	}
	if err := w.out.Flush(); err != nil {
		w.err = fmt.Errorf("parquetout: finish %s: %w", w.part.TempPath(), err)
		return w.err
	}
	w.done = true
	putWriteBuffer(w.out)
	w.w, w.out = nil, nil
	return nil
}

// Abort discards the file: nothing appears under its final name. It is a
// no-op after Commit; after Finish it removes the finished temp file.
func (w *TableWriter[T]) Abort() error {
	w.done = true
	return w.part.Abort()
}

// WriteTable writes rows as one new part file of T's table in dir and
// returns its path.
func WriteTable[T Row](fsys vfs.FS, dir string, meta Metadata, cfg Config, rows []T) (string, error) {
	return WriteTableAt(fsys, dir, -1, meta, cfg, rows)
}

// WriteTableAt is WriteTable with an explicit part number (see
// CreatePartAt).
func WriteTableAt[T Row](fsys vfs.FS, dir string, n int, meta Metadata, cfg Config, rows []T) (string, error) {
	w, err := CreateTableAt[T](fsys, dir, n, meta, cfg)
	if err != nil {
		return "", err
	}
	if err := w.Write(rows); err != nil {
		w.Abort()
		return "", err
	}
	path, err := w.Commit()
	if err != nil {
		w.Abort()
		return "", err
	}
	return path, nil
}

// FinishTableAt writes rows as part n of T's table in dir for group commit
// (see CreateTableGroupAt) and returns the finished, not yet durable part:
// commit it with CommitParts, or abort it.
func FinishTableAt[T Row](fsys vfs.FS, dir string, n int, meta Metadata, cfg Config, rows []T) (*Part, error) {
	w, err := CreateTableGroupAt[T](fsys, dir, n, meta, cfg)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rows); err != nil {
		w.Abort()
		return nil, err
	}
	p, err := w.Finish()
	if err != nil {
		w.Abort()
		return nil, err
	}
	return p, nil
}
