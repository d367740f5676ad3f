package dataset

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// Spaces are the observation and action spaces of a file, compiled; a side
// is nil when the file carries no spec for it (the recording never saw
// one).
type Spaces struct {
	Observation *schema.Layout
	Action      *schema.Layout
}

// Session is a session with its sessions-table rows.
type Session struct {
	ID string
	// Rows holds the session's rows in part order: normally one; none when
	// the session's row was never written (a recording still open or
	// crashed before recovery), more when the same id was recorded again.
	Rows []schema.SessionRow
}

// Row returns the session's first row, or nil when it has none.
func (s *Session) Row() *schema.SessionRow {
	if len(s.Rows) == 0 {
		return nil
	}
	return &s.Rows[0]
}

// Episode is one row of the episodes table with where it came from.
type Episode struct {
	SessionID       string
	EpisodeRecordID string
	Row             schema.EpisodeRow
	// Spaces are the spaces stored in the episodes file.
	Spaces Spaces
	// Path is the episodes file the row was read from.
	Path string
}

// parquetFile is an open part file.
type parquetFile struct {
	path string
	os   *os.File
	pf   *parquet.File
}

func (f *parquetFile) Close() error { return f.os.Close() }

// openFile opens a part file and checks its schema version.
func openFile(path string) (*parquetFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(path, -1, fmt.Errorf("%w; list the ROOT again, the file may have been removed", err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fileErr(path, -1, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, fileErr(path, -1, fmt.Errorf("not a readable Parquet file (%w); it may be truncated: run 'rlrec verify' on the ROOT", err))
	}
	if v, _ := pf.Lookup(schema.MetaSchemaVersion); v != schema.SchemaVersion {
		f.Close()
		return nil, fileErr(path, -1, fmt.Errorf("%w %q (this reader knows %q); read it with the rlrec version that wrote it", ErrSchemaVersion, v, schema.SchemaVersion))
	}
	return &parquetFile{path: path, os: f, pf: pf}, nil
}

// spaces parses the spaces in a file's metadata.
func (f *parquetFile) spaces() (Spaces, error) {
	var sp Spaces
	for _, side := range []struct {
		key string
		dst **schema.Layout
	}{{schema.MetaObservationSpace, &sp.Observation}, {schema.MetaActionSpace, &sp.Action}} {
		js, ok := f.pf.Lookup(side.key)
		if !ok || js == "" {
			continue
		}
		spec, err := schema.ParseSpecJSON([]byte(js))
		if err != nil {
			return Spaces{}, fileErr(f.path, -1, fmt.Errorf("%w: metadata %s: %w", ErrSpace, side.key, err))
		}
		l, err := schema.Compile(spec)
		if err != nil {
			return Spaces{}, fileErr(f.path, -1, fmt.Errorf("%w: metadata %s: %w", ErrSpace, side.key, err))
		}
		*side.dst = l
	}
	return sp, nil
}

// readRows reads every row of a fixed-table file.
func readRows[T any](path string) ([]T, *parquetFile, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	r := parquet.NewGenericReader[T](f.pf)
	defer r.Close()
	rows := make([]T, f.pf.NumRows())
	n := 0
	for n < len(rows) {
		k, err := r.Read(rows[n:])
		n += k
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			f.Close()
			return nil, nil, fileErr(path, int64(n), fmt.Errorf("read rows: %w; run 'rlrec verify' on the ROOT", err))
		}
		if k == 0 {
			break
		}
	}
	if n != len(rows) {
		f.Close()
		return nil, nil, fileErr(path, int64(n), fmt.Errorf("read %d of %d rows; run 'rlrec verify' on the ROOT", n, len(rows)))
	}
	return rows, f, nil
}

func readTable[T any](d *Dataset, table, sid, rid string) ([]T, error) {
	var out []T
	for _, file := range d.byPartition[table][sid][rid] {
		rows, f, err := readRows[T](file.Path)
		if err != nil {
			return nil, err
		}
		f.Close()
		out = append(out, rows...)
	}
	return out, nil
}

// Session reads a session's rows. A session with files in other tables
// but no sessions file is returned with no rows; an unknown id is
// ErrNotFound.
func (d *Dataset) Session(id string) (*Session, error) {
	if !d.HasSession(id) {
		return nil, fmt.Errorf("session %q: %w in %s; run 'rlrec inspect %s' for the list", id, ErrNotFound, d.root, d.root)
	}
	rows, err := readTable[schema.SessionRow](d, schema.TableSessions, id, "")
	if err != nil {
		return nil, err
	}
	return &Session{ID: id, Rows: rows}, nil
}

// Sessions reads the rows of every session, in id order.
func (d *Dataset) Sessions() ([]*Session, error) {
	out := make([]*Session, 0, len(d.sessions))
	for _, id := range d.sessions {
		s, err := d.Session(id)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Episodes reads the episodes rows of a session, ordered by record id
// (record ids are zero padded, so this is start order) and part.
func (d *Dataset) Episodes(sessionID string) ([]Episode, error) {
	if !d.HasSession(sessionID) {
		return nil, fmt.Errorf("session %q: %w in %s; run 'rlrec inspect %s' for the list", sessionID, ErrNotFound, d.root, d.root)
	}
	var out []Episode
	for _, file := range d.Files(schema.TableEpisodes) {
		if file.SessionID != sessionID {
			continue
		}
		eps, err := readEpisodesFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	return out, nil
}

// Episode reads the episodes rows of one episode (normally one).
func (d *Dataset) Episode(sessionID, episodeRecordID string) ([]Episode, error) {
	files := d.byPartition[schema.TableEpisodes][sessionID][episodeRecordID]
	if len(files) == 0 {
		return nil, fmt.Errorf("session %q episode %q: %w in %s (no episodes file); run 'rlrec inspect %s --session %s' for the list",
			sessionID, episodeRecordID, ErrNotFound, d.root, d.root, sessionID)
	}
	var out []Episode
	for _, file := range files {
		eps, err := readEpisodesFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	return out, nil
}

func readEpisodesFile(file File) ([]Episode, error) {
	rows, f, err := readRows[schema.EpisodeRow](file.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sp, err := f.spaces()
	if err != nil {
		return nil, err
	}
	out := make([]Episode, len(rows))
	for i, r := range rows {
		out[i] = Episode{SessionID: file.SessionID, EpisodeRecordID: file.EpisodeRecordID, Row: r, Spaces: sp, Path: file.Path}
	}
	return out, nil
}

// Logs reads a session's log rows in part order.
func (d *Dataset) Logs(sessionID string) ([]schema.LogRow, error) {
	return readTable[schema.LogRow](d, schema.TableLogs, sessionID, "")
}

// Telemetry reads a session's telemetry rows in part order.
func (d *Dataset) Telemetry(sessionID string) ([]schema.TelemetryRow, error) {
	return readTable[schema.TelemetryRow](d, schema.TableTelemetry, sessionID, "")
}

// EpisodeSpaces returns the spaces of an episode, from its episodes file,
// or its steps file when it has none.
func (d *Dataset) EpisodeSpaces(sessionID, episodeRecordID string) (Spaces, error) {
	for _, table := range []string{schema.TableEpisodes, schema.TableSteps} {
		for _, file := range d.byPartition[table][sessionID][episodeRecordID] {
			f, err := openFile(file.Path)
			if err != nil {
				return Spaces{}, err
			}
			sp, err := f.spaces()
			f.Close()
			return sp, err
		}
	}
	return Spaces{}, fmt.Errorf("session %q episode %q: %w in %s", sessionID, episodeRecordID, ErrNotFound, d.root)
}

// SessionSpaces returns the spaces of a session: those of its first
// episode (by record id) whose file carries a spec, side by side. Both
// are nil when no episode file carries one.
func (d *Dataset) SessionSpaces(sessionID string) (Spaces, error) {
	var out Spaces
	for _, rid := range d.EpisodeRecordIDs(sessionID) {
		sp, err := d.EpisodeSpaces(sessionID, rid)
		if err != nil {
			return Spaces{}, err
		}
		if out.Observation == nil {
			out.Observation = sp.Observation
		}
		if out.Action == nil {
			out.Action = sp.Action
		}
		if out.Observation != nil && out.Action != nil {
			break
		}
	}
	return out, nil
}
