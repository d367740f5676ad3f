package dataset

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/schema"
)

// Tables lists the table names in the order listings show them.
var Tables = []string{schema.TableSessions, schema.TableEpisodes, schema.TableSteps, schema.TableLogs, schema.TableTelemetry}

// episodeTable reports whether a table is partitioned by episode as well as
// by session.
func episodeTable(table string) bool {
	return table == schema.TableSteps || table == schema.TableEpisodes
}

// File is one committed part file of a table.
type File struct {
	// Path is the file's path (ROOT joined with its relative path).
	Path  string
	Table string
	// SessionID and EpisodeRecordID are the decoded partition values;
	// EpisodeRecordID is "" for the session-partitioned tables.
	SessionID       string
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
}

// Dataset is an opened ROOT: a listing of its part files.
type Dataset struct {
	root   string
	files  []File // sorted by table, session, episode, part
	strays []Stray
	// sessions are the session ids of every table, sorted.
	sessions []string
	// byPartition indexes files: table -> session -> episode -> files.
	byPartition map[string]map[string]map[string][]File
}

// Open lists the ROOT at root. It reads directories only (see the package
// doc); a missing or unreadable ROOT is an error.
func Open(root string) (*Dataset, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w; give the ROOT directory a recorder wrote", root, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("open dataset %s: not a directory; give the ROOT directory a recorder wrote", root)
	}
	d := &Dataset{root: root, byPartition: make(map[string]map[string]map[string][]File)}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("open dataset %s: %w", root, err)
	}
	known := map[string]bool{}
	for _, t := range Tables {
		known[t] = true
	}
	for _, e := range entries {
		name := e.Name()
		if skipName(name) {
			continue
		}
		p := filepath.Join(root, name)
		if !e.IsDir() || !known[name] {
			d.strays = append(d.strays, Stray{p, "not a table directory"})
			continue
		}
		if err := d.listTable(name, p); err != nil {
			return nil, err
		}
	}
	sort.Slice(d.files, func(i, j int) bool { return fileLess(&d.files[i], &d.files[j]) })
	seen := map[string]bool{}
	for _, f := range d.files {
		if !seen[f.SessionID] {
			seen[f.SessionID] = true
			d.sessions = append(d.sessions, f.SessionID)
		}
		m := d.byPartition[f.Table]
		if m == nil {
			m = make(map[string]map[string][]File)
			d.byPartition[f.Table] = m
		}
		em := m[f.SessionID]
		if em == nil {
			em = make(map[string][]File)
			m[f.SessionID] = em
		}
		em[f.EpisodeRecordID] = append(em[f.EpisodeRecordID], f)
	}
	sort.Strings(d.sessions)
	return d, nil
}

func fileLess(a, b *File) bool {
	if a.Table != b.Table {
		return a.Table < b.Table
	}
	if a.SessionID != b.SessionID {
		return a.SessionID < b.SessionID
	}
	if a.EpisodeRecordID != b.EpisodeRecordID {
		return a.EpisodeRecordID < b.EpisodeRecordID
	}
	return a.Part < b.Part
}

// skipName reports names every reader skips: the recorder's state, hidden
// files and temp files.
func skipName(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp")
}

// partitionValue parses a key=value directory name.
func partitionValue(name, key string) (string, error) {
	v, ok := strings.CutPrefix(name, key+"=")
	if !ok {
		return "", fmt.Errorf("not a %s= partition directory", key)
	}
	return hive.Unescape(v)
}

func (d *Dataset) listTable(table, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open dataset %s: list %s: %w", d.root, dir, err)
	}
	for _, e := range entries {
		if skipName(e.Name()) {
			d.skipped(dir, e.Name())
			continue
		}
		p := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			d.strays = append(d.strays, Stray{p, "file outside a session_id= partition"})
			continue
		}
		sid, err := partitionValue(e.Name(), hive.KeySessionID)
		if err != nil {
			d.strays = append(d.strays, Stray{p, err.Error()})
			continue
		}
		if !episodeTable(table) {
			if err := d.listFiles(table, p, sid, ""); err != nil {
				return err
			}
			continue
		}
		eps, err := os.ReadDir(p)
		if err != nil {
			return fmt.Errorf("open dataset %s: list %s: %w", d.root, p, err)
		}
		for _, ee := range eps {
			if skipName(ee.Name()) {
				d.skipped(p, ee.Name())
				continue
			}
			ep := filepath.Join(p, ee.Name())
			if !ee.IsDir() {
				d.strays = append(d.strays, Stray{ep, "file outside an episode_record_id= partition"})
				continue
			}
			rid, err := partitionValue(ee.Name(), hive.KeyEpisodeRecordID)
			if err != nil {
				d.strays = append(d.strays, Stray{ep, err.Error()})
				continue
			}
			if err := d.listFiles(table, ep, sid, rid); err != nil {
				return err
			}
		}
	}
	return nil
}

// skipped notes temp files: skipped by readers, but worth a checker's
// report. Other "_" and "." names are the recorder's own.
func (d *Dataset) skipped(dir, name string) {
	if _, temp, ok := parquetout.ParsePartName(name); ok && temp {
		d.strays = append(d.strays, Stray{filepath.Join(dir, name), "temp file left by an unfinished write"})
	} else if strings.HasSuffix(name, ".tmp") {
		d.strays = append(d.strays, Stray{filepath.Join(dir, name), "temp file"})
	}
}

func (d *Dataset) listFiles(table, dir, sid, rid string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open dataset %s: list %s: %w", d.root, dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if skipName(name) {
			d.skipped(dir, name)
			continue
		}
		p := filepath.Join(dir, name)
		n, temp, ok := parquetout.ParsePartName(name)
		if !ok || temp || e.IsDir() {
			d.strays = append(d.strays, Stray{p, "not a part-N.parquet file"})
			continue
		}
		info, err := e.Info()
		if err != nil {
			return fmt.Errorf("open dataset %s: stat %s: %w", d.root, p, err)
		}
		d.files = append(d.files, File{Path: p, Table: table, SessionID: sid, EpisodeRecordID: rid, Part: n, Size: info.Size()})
	}
	return nil
}

// Root returns the ROOT directory.
func (d *Dataset) Root() string { return d.root }

// SessionIDs returns the id of every session with a file in any table,
// sorted.
func (d *Dataset) SessionIDs() []string { return append([]string(nil), d.sessions...) }

// HasSession reports whether any table has files of the session.
func (d *Dataset) HasSession(id string) bool {
	i := sort.SearchStrings(d.sessions, id)
	return i < len(d.sessions) && d.sessions[i] == id
}

// Files returns the part files of a table ("" for every table), sorted by
// table, session, episode record id and part.
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

// PartitionFiles returns the part files of one partition in part order;
// episodeRecordID is ignored ("") for the session-partitioned tables.
func (d *Dataset) PartitionFiles(table, sessionID, episodeRecordID string) []File {
	return append([]File(nil), d.byPartition[table][sessionID][episodeRecordID]...)
}

// EpisodeRecordIDs returns the record ids of a session's episodes that
// have a partition in the episodes or steps table, sorted.
func (d *Dataset) EpisodeRecordIDs(sessionID string) []string {
	seen := map[string]bool{}
	var ids []string
	for _, t := range []string{schema.TableEpisodes, schema.TableSteps} {
		for rid := range d.byPartition[t][sessionID] {
			if !seen[rid] {
				seen[rid] = true
				ids = append(ids, rid)
			}
		}
	}
	sort.Strings(ids)
	return ids
}
