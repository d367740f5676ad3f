package hive

import (
	"path"
	"strings"
)

// Object is one key of a flat listing (an object store's), relative to
// ROOT with "/" separators.
type Object struct {
	Rel  string
	Size int64
}

// ListObjects classifies the keys of a ROOT in object storage as List
// classifies the entries of a ROOT on disk, and returns the same
// Listing: the same files, and a stray for what List would report as
// one (a directory is reported once, however many keys lie under it).
// An object store has no directories, so nothing can fail to be listed;
// a stray carries Err only for a name that does not parse. Keys ending in "/" (the empty "folder" objects
// some tools make) are skipped.
func ListObjects(objs []Object) *Listing {
	l := &Listing{}
	seen := map[string]bool{}
	stray := func(st Stray) {
		if !seen[st.Rel] {
			seen[st.Rel] = true
			l.Strays = append(l.Strays, st)
		}
	}
	for _, o := range objs {
		if o.Rel == "" || strings.HasSuffix(o.Rel, "/") {
			continue
		}
		segs := strings.Split(o.Rel, "/")
		if Hidden(segs[0]) {
			continue
		}
		t, ok := Lookup(segs[0])
		if !ok || len(segs) == 1 {
			stray(Stray{Rel: segs[0], Reason: "not a table directory"})
			continue
		}
		l.object(o, segs, t, stray)
	}
	l.sort()
	return l
}

// object classifies one key under the table t.
func (l *Listing) object(o Object, segs []string, t Table, stray func(Stray)) {
	// A hidden name below the table hides what lies under it; temp files
	// are strays.
	for i := 1; i < len(segs); i++ {
		if name := segs[i]; Hidden(name) {
			rel := path.Join(segs[:i+1]...)
			if i < len(segs)-1 {
				return
			}
			if _, temp, ok := ParsePartName(name); ok && temp {
				stray(Stray{Rel: rel, Reason: "temp file left by an unfinished write", Temp: true})
			} else if strings.HasSuffix(name, ".tmp") {
				stray(Stray{Rel: rel, Reason: "temp file"})
			}
			return
		}
	}
	keys := []string{KeySessionID, KeyEnvID}
	vals := make([]string, 2)
	exact := true
	for i, key := range keys {
		rel := path.Join(segs[:i+2]...)
		if len(segs) == i+2 {
			stray(Stray{Rel: rel, Reason: "a file where only " + key + "=... partition directories belong"})
			return
		}
		v, ok, err := ParseSegment(segs[i+1], key)
		if err != nil {
			stray(Stray{Rel: rel, Reason: "not a " + key + "=... partition directory", Err: err})
			return
		}
		vals[i], exact = v, exact && ok
	}
	p := RecordingPartition(t.Name, Recording{SessionID: vals[0], EnvID: vals[1]})
	rest := segs[3:]
	if len(rest) > 1 {
		dir := path.Join(segs[:4]...)
		if !t.PerEpisode {
			stray(Stray{Rel: dir, Reason: "a directory inside a recording partition of a table not partitioned by episode"})
			return
		}
		rid, ok, err := ParseSegment(rest[0], KeyEpisodeRecordID)
		if err != nil {
			stray(Stray{Rel: dir, Reason: "not an episode_record_id=... partition directory", Err: err})
			return
		}
		if len(rest) > 2 {
			stray(Stray{Rel: path.Join(segs[:5]...), Reason: "a directory inside an episode partition"})
			return
		}
		p, exact = EpisodePartition(t.Name, p.Recording, rid), exact && ok
		rest = rest[1:]
	}
	n, _, ok := ParsePartName(rest[0])
	if !ok {
		stray(Stray{Rel: o.Rel, Reason: "not a part-N.parquet file"})
		return
	}
	l.Files = append(l.Files, File{Partition: p, Part: n, Rel: o.Rel, Size: o.Size, Exact: exact})
}
