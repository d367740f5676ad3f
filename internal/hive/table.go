package hive

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
)

// Partition keys, in path order. They are part of the on-disk layout: do
// not change them.
const (
	KeySessionID       = "session_id"
	KeyEnvID           = "env_id"
	KeyEpisodeRecordID = "episode_record_id"
)

// Layout is how a ROOT partitions its steps table, chosen when the ROOT is
// created. The names are part of the on-disk layout: do not change them.
type Layout string

const (
	// LayoutEpisode gives every episode its own steps partition
	// (steps/session_id=S/env_id=R/episode_record_id=E/).
	LayoutEpisode Layout = "episode"
	// LayoutSession packs whole episodes into the part files of their
	// recording (steps/session_id=S/env_id=R/), with episode_record_id as
	// a column.
	LayoutSession Layout = "session"
)

// ParseLayout returns the layout of name ("episode" or "session").
func ParseLayout(name string) (Layout, error) {
	switch l := Layout(name); l {
	case LayoutEpisode, LayoutSession:
		return l, nil
	}
	return "", fmt.Errorf("%w %q: want %q or %q", ErrBadLayout, name, LayoutEpisode, LayoutSession)
}

// Table is one entry of the table registry.
type Table struct {
	// Name is the table's directory under ROOT.
	Name string
	// PerEpisode: under LayoutEpisode each episode has its own partition
	// below its recording's.
	PerEpisode bool
}

// Tables is the registry, in the order listings show tables. Adding a
// table is one entry here (and its row type in package schema).
var Tables = []Table{
	{Name: schema.TableSessions},
	{Name: schema.TableEpisodes},
	{Name: schema.TableSteps, PerEpisode: true},
	{Name: schema.TableLogs},
	{Name: schema.TableTelemetry},
}

// MaxDepth is the most directory levels a part file lies below ROOT, its
// own name not counted: TABLE/session_id=S/env_id=R and, in a table
// partitioned by episode, episode_record_id=E.
var MaxDepth = func() int {
	d := 3
	for _, t := range Tables {
		if t.PerEpisode {
			d = 4
		}
	}
	return d
}()

// Lookup returns the registry entry of a table name.
func Lookup(name string) (Table, bool) {
	for _, t := range Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}

// Recording names one recording: one route run. It is events.Recording,
// the project's one recording key, under the name the layout code uses.
type Recording = events.Recording

// RecordingDir returns the recording's directory below a table directory,
// session_id=S/env_id=R: the same for every table, and different for
// every recording (cut values included).
func RecordingDir(r Recording) string {
	return Segment(KeySessionID, r.SessionID) + "/" + Segment(KeyEnvID, r.EnvID)
}

// RecordingOf returns the recording a path relative to ROOT lies under
// (TABLE/session_id=S/env_id=R/...), with its directory as RecordingDir
// gives it, and whether the path has one. The values are the cut text
// when a name was cut (see the package doc): compare dir, not them.
func RecordingOf(rel string) (dir string, r Recording, ok bool) {
	segs := strings.SplitN(rel, "/", 4)
	if len(segs) < 3 {
		return "", Recording{}, false
	}
	sid, _, err := ParseSegment(segs[1], KeySessionID)
	if err != nil {
		return "", Recording{}, false
	}
	env, _, err := ParseSegment(segs[2], KeyEnvID)
	if err != nil {
		return "", Recording{}, false
	}
	return segs[1] + "/" + segs[2], Recording{SessionID: sid, EnvID: env}, true
}

// Partition is the address of one partition directory: a table, a
// recording, and for an episode partition its episode record id.
type Partition struct {
	Table string
	Recording
	// Episode is set for an episode partition (steps under LayoutEpisode);
	// EpisodeRecordID is its value.
	Episode         bool
	EpisodeRecordID string
}

// RecordingPartition is the partition of a recording in table.
func RecordingPartition(table string, r Recording) Partition {
	return Partition{Table: table, Recording: r}
}

// EpisodePartition is the partition of one episode of a recording in a
// per-episode table.
func EpisodePartition(table string, r Recording, episodeRecordID string) Partition {
	return Partition{Table: table, Recording: r, Episode: true, EpisodeRecordID: episodeRecordID}
}

// Rel returns the partition's directory relative to ROOT, with "/"
// separators.
func (p Partition) Rel() string {
	rel := path.Join(p.Table, Segment(KeySessionID, p.SessionID), Segment(KeyEnvID, p.EnvID))
	if p.Episode {
		rel = path.Join(rel, Segment(KeyEpisodeRecordID, p.EpisodeRecordID))
	}
	return rel
}

// Dir returns the partition's directory under root.
func (p Partition) Dir(root string) string { return filepath.Join(root, filepath.FromSlash(p.Rel())) }

// File returns the path, relative to ROOT with "/" separators, of part n
// of the partition.
func (p Partition) File(n int) string { return path.Join(p.Rel(), PartName(n)) }

// String renders the partition for messages.
func (p Partition) String() string { return p.Rel() }
