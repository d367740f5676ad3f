package hive

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rlrec/rlrec/internal/vfs"
)

// File is one committed part file found by List.
type File struct {
	Partition
	// Part is N of part-N.parquet.
	Part int
	// Rel is the file's path relative to ROOT, with "/" separators.
	Rel string
	// Size is the file's size in bytes.
	Size int64
	// Exact is false when a partition value of the path was cut (see the
	// package doc): Partition then holds the cut text, and the file's
	// metadata the real values.
	Exact bool
}

// Stray is an entry under a table directory that is not a committed part
// file in a partition directory.
type Stray struct {
	// Rel is the entry's path relative to ROOT, with "/" separators.
	Rel    string
	Reason string
	// Temp is set for a part file's temp name, left by a write that did
	// not finish.
	Temp bool
	// Err is set when the entry could not be read.
	Err error
}

// Listing is what List found under a ROOT.
type Listing struct {
	// Files is sorted by table (registry order), recording, episode
	// record id and part.
	Files  []File
	Strays []Stray
}

// List lists the part files of every table under root. It reads
// directories only. Entries whose names start with "_" or "." at the top of
// ROOT are the recorder's or hidden and are skipped; below a table
// directory, temp files are reported as strays and other hidden names are
// skipped, as dataset readers skip them. A missing table directory is an
// empty table. An error is returned only when root itself cannot be read.
func List(fsys vfs.FS, root string) (*Listing, error) {
	entries, err := fsys.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", root, err)
	}
	l := &Listing{}
	for _, e := range entries {
		name := e.Name()
		if Hidden(name) {
			continue
		}
		if _, ok := Lookup(name); !ok || !e.IsDir() {
			l.Strays = append(l.Strays, Stray{Rel: name, Reason: "not a table directory"})
		}
	}
	for _, t := range Tables {
		l.table(fsys, root, t)
	}
	l.sort()
	return l, nil
}

// sort orders Files by table (registry order), recording, episode record
// id and part.
func (l *Listing) sort() {
	order := map[string]int{}
	for i, t := range Tables {
		order[t.Name] = i
	}
	sort.SliceStable(l.Files, func(i, j int) bool {
		a, b := &l.Files[i], &l.Files[j]
		if a.Table != b.Table {
			return order[a.Table] < order[b.Table]
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
	})
}

// dirEntries lists rel under root; a failure becomes a stray.
func (l *Listing) dirEntries(fsys vfs.FS, root, rel string, missingOK bool) []fs.DirEntry {
	entries, err := fsys.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		if missingOK && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		l.Strays = append(l.Strays, Stray{Rel: rel, Reason: "cannot list the directory", Err: err})
		return nil
	}
	return entries
}

// visible drops hidden entries of a directory below a table, noting temp
// files as strays.
func (l *Listing) visible(rel string, entries []fs.DirEntry) []fs.DirEntry {
	out := entries[:0:0]
	for _, e := range entries {
		name := e.Name()
		if !Hidden(name) {
			out = append(out, e)
			continue
		}
		if _, temp, ok := ParsePartName(name); ok && temp {
			l.Strays = append(l.Strays, Stray{Rel: path.Join(rel, name), Reason: "temp file left by an unfinished write", Temp: true})
		} else if strings.HasSuffix(name, ".tmp") {
			l.Strays = append(l.Strays, Stray{Rel: path.Join(rel, name), Reason: "temp file"})
		}
	}
	return out
}

// partitionDirs returns the key=value directories of rel with their
// decoded values, noting everything else as strays.
func (l *Listing) partitionDirs(fsys vfs.FS, root, rel, key string) (dirs []string, values []string, exact []bool) {
	for _, e := range l.visible(rel, l.dirEntries(fsys, root, rel, false)) {
		r := path.Join(rel, e.Name())
		if !e.IsDir() {
			l.Strays = append(l.Strays, Stray{Rel: r, Reason: "a file where only " + key + "=... partition directories belong"})
			continue
		}
		v, ok, err := ParseSegment(e.Name(), key)
		if err != nil {
			l.Strays = append(l.Strays, Stray{Rel: r, Reason: "not a " + key + "=... partition directory", Err: err})
			continue
		}
		dirs, values, exact = append(dirs, r), append(values, v), append(exact, ok)
	}
	return dirs, values, exact
}

func (l *Listing) table(fsys vfs.FS, root string, t Table) {
	if _, err := fsys.Stat(filepath.Join(root, t.Name)); errors.Is(err, fs.ErrNotExist) {
		return
	}
	sdirs, sids, sexact := l.partitionDirs(fsys, root, t.Name, KeySessionID)
	for i, sdir := range sdirs {
		edirs, eids, eexact := l.partitionDirs(fsys, root, sdir, KeyEnvID)
		for j, edir := range edirs {
			p := RecordingPartition(t.Name, Recording{SessionID: sids[i], EnvID: eids[j]})
			l.partition(fsys, root, edir, p, t.PerEpisode, sexact[i] && eexact[j])
		}
	}
}

// partition lists a recording partition (and, for a per-episode table,
// its episode partitions).
func (l *Listing) partition(fsys vfs.FS, root, rel string, p Partition, perEpisode, exact bool) {
	for _, e := range l.visible(rel, l.dirEntries(fsys, root, rel, false)) {
		name := e.Name()
		r := path.Join(rel, name)
		if e.IsDir() {
			if !perEpisode {
				l.Strays = append(l.Strays, Stray{Rel: r, Reason: "a directory inside a recording partition of a table not partitioned by episode"})
				continue
			}
			rid, ok, err := ParseSegment(name, KeyEpisodeRecordID)
			if err != nil {
				l.Strays = append(l.Strays, Stray{Rel: r, Reason: "not an episode_record_id=... partition directory", Err: err})
				continue
			}
			ep := EpisodePartition(p.Table, p.Recording, rid)
			l.parts(fsys, root, r, ep, exact && ok)
			continue
		}
		l.part(r, name, e, p, exact)
	}
}

// parts lists the part files of an episode partition.
func (l *Listing) parts(fsys vfs.FS, root, rel string, p Partition, exact bool) {
	for _, e := range l.visible(rel, l.dirEntries(fsys, root, rel, false)) {
		r := path.Join(rel, e.Name())
		if e.IsDir() {
			l.Strays = append(l.Strays, Stray{Rel: r, Reason: "a directory inside an episode partition"})
			continue
		}
		l.part(r, e.Name(), e, p, exact)
	}
}

func (l *Listing) part(rel, name string, e fs.DirEntry, p Partition, exact bool) {
	n, _, ok := ParsePartName(name)
	if !ok {
		l.Strays = append(l.Strays, Stray{Rel: rel, Reason: "not a part-N.parquet file"})
		return
	}
	info, err := e.Info()
	if err != nil {
		l.Strays = append(l.Strays, Stray{Rel: rel, Reason: "cannot stat the file", Err: err})
		return
	}
	l.Files = append(l.Files, File{Partition: p, Part: n, Rel: rel, Size: info.Size(), Exact: exact})
}
