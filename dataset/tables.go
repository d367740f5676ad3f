package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Spaces are the observation and action spaces of a file, compiled; a side
// is nil when the file carries no spec for it (the recording never saw
// one).
type Spaces struct {
	Observation *schema.Layout
	Action      *schema.Layout
}

// Session is a recording with its sessions-table rows.
type Session struct {
	Recording
	// Rows holds the recording's rows in part order: normally one; none
	// when its row was never written (a recording still open, or crashed
	// before recovery).
	Rows []schema.SessionRow
	// StoreRequests counts the requests the recording had sent to its
	// object store when its row was written, as the first sessions file
	// that has them keeps them (schema.MetaStoreRequests): nil for a
	// recording written to a directory, or before rlrec kept them.
	StoreRequests *store.Requests
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
	Recording
	// EpisodeRecordID is Row.EpisodeRecordID.
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
	obj  store.Object
	pf   *parquet.File
	// version is the file's schema version (schema.KnownSchemaVersion).
	version string
}

func (f *parquetFile) Close() error { return f.obj.Close() }

// openFile opens a part file, by its path or s3:// URL, and checks its
// schema version.
func openFile(path string) (*parquetFile, error) {
	f, err := store.OpenPath(context.Background(), path)
	if err != nil {
		return nil, fileErr(path, -1, fmt.Errorf("%w; list the ROOT again, the file may have been removed", err))
	}
	pf, err := parquet.OpenFile(f, f.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, fileErr(path, -1, fmt.Errorf("not a readable Parquet file (%w); it may be truncated", err))
	}
	v, _ := pf.Lookup(schema.MetaSchemaVersion)
	if !schema.KnownSchemaVersion(v) {
		f.Close()
		return nil, fileErr(path, -1, fmt.Errorf("%w %q (this reader knows %q and %q); read it with the version that wrote it",
			ErrSchemaVersion, v, schema.SchemaVersion2, schema.SchemaVersion))
	}
	return &parquetFile{path: path, obj: f, pf: pf, version: v}, nil
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
			return nil, nil, fileErr(path, int64(n), fmt.Errorf("read rows: %w", err))
		}
		if k == 0 {
			break
		}
	}
	if n != len(rows) {
		f.Close()
		return nil, nil, fileErr(path, int64(n), fmt.Errorf("read %d of %d rows", n, len(rows)))
	}
	return rows, f, nil
}

// readEpisodeRows reads an episodes file of either schema version: a
// version 2 file's rows have the version 3 columns null.
func readEpisodeRows(path string) ([]schema.EpisodeRow, *parquetFile, error) {
	f, err := openFile(path)
	if err != nil {
		return nil, nil, err
	}
	v2 := f.version == schema.SchemaVersion2
	f.Close()
	if !v2 {
		return readRows[schema.EpisodeRow](path)
	}
	old, f, err := readRows[schema.EpisodeRowV2](path)
	if err != nil {
		return nil, nil, err
	}
	rows := make([]schema.EpisodeRow, len(old))
	for i, r := range old {
		rows[i] = r.Upgrade()
	}
	return rows, f, nil
}

func readTable[T any](d *Dataset, table string, rec Recording) ([]T, error) {
	var out []T
	for _, file := range d.byPartition[partKey{table: table, rec: rec}] {
		rows, f, err := readRows[T](file.Path)
		if err != nil {
			return nil, err
		}
		f.Close()
		out = append(out, rows...)
	}
	return out, nil
}

// notFound is the error for a recording the ROOT does not hold.
func (d *Dataset) notFound(rec Recording) error {
	return fmt.Errorf("%s: %w in %s", rec, ErrNotFound, d.root)
}

// Session reads a recording's sessions rows. A recording with files in
// other tables but no sessions file is returned with no rows; an unknown
// one is ErrNotFound.
func (d *Dataset) Session(rec Recording) (*Session, error) {
	if !d.HasRecording(rec) {
		return nil, d.notFound(rec)
	}
	s := &Session{Recording: rec}
	for _, file := range d.byPartition[partKey{table: schema.TableSessions, rec: rec}] {
		rows, f, err := readRows[schema.SessionRow](file.Path)
		if err != nil {
			return nil, err
		}
		v, ok := f.pf.Lookup(schema.MetaStoreRequests)
		f.Close()
		if ok && s.StoreRequests == nil {
			s.StoreRequests = new(store.Requests)
			if err := s.StoreRequests.UnmarshalJSON([]byte(v)); err != nil {
				return nil, fileErr(file.Path, -1, fmt.Errorf("metadata %s: %w", schema.MetaStoreRequests, err))
			}
		}
		s.Rows = append(s.Rows, rows...)
	}
	return s, nil
}

// Sessions reads the rows of every recording, in Recordings order.
func (d *Dataset) Sessions() ([]*Session, error) {
	out := make([]*Session, 0, len(d.recordings))
	for _, rec := range d.recordings {
		s, err := d.Session(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Episodes reads the episodes rows of a recording, ordered by record id
// (record ids are zero padded, so this is start order), then part.
func (d *Dataset) Episodes(rec Recording) ([]Episode, error) {
	if !d.HasRecording(rec) {
		return nil, d.notFound(rec)
	}
	var out []Episode
	for _, file := range d.byPartition[partKey{table: schema.TableEpisodes, rec: rec}] {
		eps, err := readEpisodesFile(file)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].EpisodeRecordID < out[j].EpisodeRecordID })
	return out, nil
}

// Episode reads the episodes rows of one episode (normally one).
func (d *Dataset) Episode(rec Recording, episodeRecordID string) ([]Episode, error) {
	all, err := d.Episodes(rec)
	if err != nil {
		return nil, err
	}
	var out []Episode
	for _, e := range all {
		if e.EpisodeRecordID == episodeRecordID {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s episode %q: %w in %s (no episodes row)",
			rec, episodeRecordID, ErrNotFound, d.root)
	}
	return out, nil
}

func readEpisodesFile(file File) ([]Episode, error) {
	rows, f, err := readEpisodeRows(file.Path)
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
		out[i] = Episode{Recording: file.Recording, EpisodeRecordID: r.EpisodeRecordID, Row: r, Spaces: sp, Path: file.Path}
	}
	return out, nil
}

// Logs reads a recording's log rows in part order.
func (d *Dataset) Logs(rec Recording) ([]schema.LogRow, error) {
	return readTable[schema.LogRow](d, schema.TableLogs, rec)
}

// Telemetry reads a recording's telemetry rows in part order.
func (d *Dataset) Telemetry(rec Recording) ([]schema.TelemetryRow, error) {
	return readTable[schema.TelemetryRow](d, schema.TableTelemetry, rec)
}

// fileSpaces reads the spaces in one file's metadata.
func fileSpaces(path string) (Spaces, error) {
	f, err := openFile(path)
	if err != nil {
		return Spaces{}, err
	}
	defer f.Close()
	return f.spaces()
}

// SessionSpaces returns the spaces of a recording: those of its episodes
// and steps files, side by side (each side from the first file, in part
// order, that carries it). Both are nil when no file carries one.
func (d *Dataset) SessionSpaces(rec Recording) (Spaces, error) {
	var paths []string
	for _, f := range d.byPartition[partKey{table: schema.TableEpisodes, rec: rec}] {
		paths = append(paths, f.Path)
	}
	for _, rid := range d.EpisodeRecordIDs(rec) {
		for _, f := range d.EpisodeFiles(rec, rid) {
			paths = append(paths, f.Path)
		}
	}
	var out Spaces
	for _, p := range paths {
		sp, err := fileSpaces(p)
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
