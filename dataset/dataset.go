package dataset

import (
	"context"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Tables lists the table names in the order listings show them.
var Tables = func() []string {
	out := make([]string, len(hive.Tables))
	for i, t := range hive.Tables {
		out[i] = t.Name
	}
	return out
}()

// Recording names one recording: one route run, the pair (session_id,
// env_id). Several recordings may share a session id.
type Recording = hive.Recording

// File is one committed part file of a table.
type File struct {
	// Path is the file's path (ROOT joined with Rel).
	Path string
	// Rel is the path relative to ROOT, with "/" separators.
	Rel   string
	Table string
	// Recording is the recording the file belongs to: decoded from the
	// partition path, or from the file's metadata where the path holds a
	// cut value (a long id).
	Recording
	// Episode is set for a file of an episode partition (steps in layout
	// "episode"); EpisodeRecordID is its episode.
	Episode         bool
	EpisodeRecordID string
	// Part is N of part-N.parquet.
	Part int
	// Size is the file size in bytes.
	Size int64
}

// Stray is a path under ROOT that Open skipped because it does not fit the
// layout (temp files included).
type Stray struct {
	Path   string
	Reason string
	// Temp: a part file's temp file, which a write in progress holds as
	// well as a write a crash left unfinished (only ROOT's lock tells).
	Temp bool
}

type partKey struct {
	table string
	rec   Recording
	ep    bool
	rid   string
}

// Dataset is an opened ROOT: a listing of its part files.
type Dataset struct {
	root       string
	rd         store.Reader
	files      []File // sorted by table, recording, episode, part
	strays     []Stray
	recordings []Recording // of every table, sorted
	// byPartition indexes files by table, recording and episode record id
	// ("" for recording partitions).
	byPartition map[partKey][]File

	// mu guards steps: per recording, the steps_file of each episode
	// (packed steps files), read on first use.
	mu    sync.Mutex
	steps map[Recording]map[string]string

	// groups holds the row groups of packed steps files decoded last,
	// shared by every episode iterator (see groups.go).
	groups groupCache
}

// Open lists the ROOT at root. It reads directories only, except for the
// footer of one file per partition whose path holds a cut (long) id (see
// the package doc); a missing or unreadable ROOT is an error.
//
// A ROOT is a directory or an s3://bucket/prefix URL (read through the
// standard AWS configuration chain: AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL, profiles); File.Path
// is then the object's s3:// URL, and part files are read with ranged
// GETs.
func Open(root string) (*Dataset, error) {
	rd, err := store.OpenReader(context.Background(), root)
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w; give the ROOT directory (or s3:// URL) a recorder wrote", root, err)
	}
	l, err := rd.List()
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w", root, err)
	}
	d := &Dataset{root: root, rd: rd, byPartition: make(map[partKey][]File)}
	for _, s := range l.Strays {
		reason := s.Reason
		if s.Err != nil {
			reason += ": " + s.Err.Error()
		}
		d.strays = append(d.strays, Stray{Path: d.path(s.Rel), Reason: reason, Temp: s.Temp})
	}
	resolved := map[string]hive.Partition{} // cut partition dir -> ids from metadata
	for _, hf := range l.Files {
		f := File{Path: d.path(hf.Rel), Rel: hf.Rel, Table: hf.Table, Recording: hf.Recording, Episode: hf.Episode, EpisodeRecordID: hf.EpisodeRecordID, Part: hf.Part, Size: hf.Size}
		if !hf.Exact {
			dir := path.Dir(hf.Rel)
			p, ok := resolved[dir]
			if !ok {
				if p, err = partitionFromMetadata(f.Path, dir, hf.Partition); err != nil {
					d.strays = append(d.strays, Stray{Path: f.Path, Reason: err.Error()})
					continue
				}
				resolved[dir] = p
			}
			f.Recording, f.EpisodeRecordID = p.Recording, p.EpisodeRecordID
		}
		d.files = append(d.files, f)
	}
	sort.SliceStable(d.files, func(i, j int) bool { return fileLess(&d.files[i], &d.files[j]) })
	seen := map[Recording]bool{}
	for _, f := range d.files {
		if !seen[f.Recording] {
			seen[f.Recording] = true
			d.recordings = append(d.recordings, f.Recording)
		}
		k := partKey{f.Table, f.Recording, f.Episode, f.EpisodeRecordID}
		d.byPartition[k] = append(d.byPartition[k], f)
	}
	sort.Slice(d.recordings, func(i, j int) bool { return d.recordings[i].Less(d.recordings[j]) })
	return d, nil
}

func (d *Dataset) path(rel string) string { return d.rd.Path(rel) }

func fileLess(a, b *File) bool {
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	if a.Recording != b.Recording {
		return a.Recording.Less(b.Recording)
	}
	if a.Episode != b.Episode {
		return !a.Episode
	}
	if a.EpisodeRecordID != b.EpisodeRecordID {
		return a.EpisodeRecordID < b.EpisodeRecordID
	}
	return a.Part < b.Part
}

// partitionFromMetadata reads the ids of a file whose partition path (dir,
// relative to ROOT) holds a cut value, and checks that they encode to it.
func partitionFromMetadata(path, dir string, p hive.Partition) (hive.Partition, error) {
	f, err := openFile(path)
	if err != nil {
		return p, err
	}
	defer f.Close()
	q := p
	q.SessionID, _ = f.pf.Lookup(schema.MetaSessionID)
	q.EnvID, _ = f.pf.Lookup(schema.MetaEnvID)
	if p.Episode {
		q.EpisodeRecordID, _ = f.pf.Lookup(schema.MetaEpisodeRecordID)
	}
	if q.Rel() != dir {
		return p, fmt.Errorf("the file's metadata names %s, which is not the partition it is in", q.Rel())
	}
	return q, nil
}

// Close closes the packed steps files the Dataset keeps open between
// iterators and drops the row groups it keeps decoded. Iterators still
// open go on working, and the Dataset can still be read: its iterators
// then open files of their own. A Dataset that read no packed file holds
// nothing to close.
func (d *Dataset) Close() error {
	if err := d.groups.close(); err != nil {
		return fmt.Errorf("close dataset %s: %w", d.root, err)
	}
	return nil
}

// Root returns the ROOT directory.
func (d *Dataset) Root() string { return d.root }

// Recordings returns every recording with a file in any table, sorted by
// session id, then env id.
func (d *Dataset) Recordings() []Recording { return append([]Recording(nil), d.recordings...) }

// HasRecording reports whether any table has files of the recording.
func (d *Dataset) HasRecording(rec Recording) bool {
	i := sort.Search(len(d.recordings), func(i int) bool { return !d.recordings[i].Less(rec) })
	return i < len(d.recordings) && d.recordings[i] == rec
}

// Find returns the recordings of a session id; envID, when not "",
// narrows them to that env id.
func (d *Dataset) Find(sessionID, envID string) []Recording {
	var out []Recording
	for _, r := range d.recordings {
		if r.SessionID == sessionID && (envID == "" || r.EnvID == envID) {
			out = append(out, r)
		}
	}
	return out
}

// Files returns the part files of a table ("" for every table), sorted by
// table, recording, episode record id and part.
func (d *Dataset) Files(table string) []File {
	var out []File
	for _, f := range d.files {
		if table == "" || f.Table == table {
			out = append(out, f)
		}
	}
	return out
}

// Strays returns what Open skipped because it does not fit the layout:
// temp files, unknown files and directories, undecodable partition names.
func (d *Dataset) Strays() []Stray { return append([]Stray(nil), d.strays...) }

// PartitionFiles returns the part files of a recording's partition of
// table, in part order.
func (d *Dataset) PartitionFiles(table string, rec Recording) []File {
	return append([]File(nil), d.byPartition[partKey{table: table, rec: rec}]...)
}

// EpisodeFiles returns the part files of an episode partition of the
// steps table (layout "episode"), in part order.
func (d *Dataset) EpisodeFiles(rec Recording, episodeRecordID string) []File {
	return append([]File(nil), d.byPartition[partKey{schema.TableSteps, rec, true, episodeRecordID}]...)
}

// EpisodeRecordIDs returns the record ids of a recording's episodes that
// have steps: a steps partition (layout "episode") or, for packed steps
// files (layout "session"), a steps_file in their episodes row; sorted.
// The episodes table lists every episode (Episodes).
func (d *Dataset) EpisodeRecordIDs(rec Recording) []string {
	seen := map[string]bool{}
	var ids []string
	for k := range d.byPartition {
		if k.table == schema.TableSteps && k.rec == rec && k.ep && !seen[k.rid] {
			seen[k.rid] = true
			ids = append(ids, k.rid)
		}
	}
	if len(d.byPartition[partKey{table: schema.TableSteps, rec: rec}]) > 0 {
		if files, err := d.stepsFiles(rec); err == nil {
			for rid := range files {
				if !seen[rid] {
					seen[rid] = true
					ids = append(ids, rid)
				}
			}
		}
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the recording named by a session id and, when not "", an
// env id. With envID "" the session id must name exactly one recording: a
// session id shared by several runs is an error that lists their env ids.
func (d *Dataset) Lookup(sessionID, envID string) (Recording, error) {
	recs := d.Find(sessionID, envID)
	switch {
	case len(recs) == 1:
		return recs[0], nil
	case len(recs) == 0 && envID != "":
		return Recording{}, fmt.Errorf("session %q env %q: %w in %s", sessionID, envID, ErrNotFound, d.root)
	case len(recs) == 0:
		return Recording{}, fmt.Errorf("session %q: %w in %s", sessionID, ErrNotFound, d.root)
	}
	envs := make([]string, len(recs))
	for i, r := range recs {
		envs[i] = strconv.Quote(r.EnvID)
	}
	return Recording{}, fmt.Errorf("session %q names %d recordings in %s (env ids %s): %w; give an env id too",
		sessionID, len(recs), d.root, strings.Join(envs, ", "), ErrAmbiguous)
}

// packedFileOf returns the path of the packed steps file (layout
// "session") that an episode's episodes row names, "" when it names none.
func (d *Dataset) packedFileOf(rec Recording, rid string) (string, error) {
	if len(d.byPartition[partKey{table: schema.TableSteps, rec: rec}]) == 0 {
		return "", nil
	}
	files, err := d.stepsFiles(rec)
	if err != nil {
		return "", err
	}
	rel, ok := files[rid]
	if !ok {
		return "", nil
	}
	return d.path(rel), nil
}

// stepsFiles returns, per episode record id, the steps_file of a
// recording's episodes rows, read once per Dataset.
func (d *Dataset) stepsFiles(rec Recording) (map[string]string, error) {
	d.mu.Lock()
	m, ok := d.steps[rec]
	d.mu.Unlock()
	if ok {
		return m, nil
	}
	eps, err := d.Episodes(rec)
	if err != nil {
		return nil, err
	}
	m = make(map[string]string, len(eps))
	for _, e := range eps {
		if e.Row.StepsFile != nil {
			m[e.EpisodeRecordID] = *e.Row.StepsFile
		}
	}
	d.mu.Lock()
	if d.steps == nil {
		d.steps = make(map[Recording]map[string]string)
	}
	d.steps[rec] = m
	d.mu.Unlock()
	return m, nil
}

// HasSteps reports whether an episode has a steps file: its own partition
// (layout "episode") or a packed file its episodes row names.
func (d *Dataset) HasSteps(rec Recording, rid string) bool {
	if len(d.EpisodeFiles(rec, rid)) > 0 {
		return true
	}
	p, err := d.packedFileOf(rec, rid)
	return err == nil && p != ""
}
