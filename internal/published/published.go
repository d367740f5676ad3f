package published

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/schema"
)

// sequenceTables are the tables whose files carry rlrec.last_sequence.
var sequenceTables = []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry}

// LastSequence returns the highest sequence number that the published
// sessions, logs and telemetry files of the recording rec in root record
// under rlrec.last_sequence (schema.MetaLastSequence): every event of the
// recording up to that number is in root's published files. It is 0 when
// root holds none of the recording's files, or only files of unnumbered
// events. It reads the files' footers on every call; an error names the
// file that could not be read.
func LastSequence(fsys vfs.FS, root string, rec hive.Recording) (uint64, error) {
	var last uint64
	for _, table := range sequenceTables {
		dir := hive.RecordingPartition(table, rec).Dir(root)
		entries, err := fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing of the recording in this table.
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("published: last sequence of %s: %w", rec, err)
		}
		for _, e := range entries {
			if _, temp, ok := hive.ParsePartName(e.Name()); !ok || temp || e.IsDir() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			v, ok, err := parquetout.ReadKeyValue(fsys, path, schema.MetaLastSequence)
			if err != nil {
				return 0, fmt.Errorf("published: last sequence of %s: %w", rec, err)
			}
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("published: last sequence of %s: %s has %s %q, not a number", rec, path, schema.MetaLastSequence, v)
			}
			last = max(last, n)
		}
	}
	return last, nil
}

// EpisodeIDs returns the episode record ids in the published episodes
// files of the recording rec in root. A file that cannot be read counts
// for nothing: verify reports it.
func EpisodeIDs(fsys vfs.FS, root string, rec hive.Recording) map[string]bool {
	out := map[string]bool{}
	dir := hive.RecordingPartition(schema.TableEpisodes, rec).Dir(root)
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if _, temp, ok := hive.ParsePartName(e.Name()); !ok || temp {
			continue
		}
		ids, err := parquetout.ReadEpisodeRecordIDs(fsys, filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, id := range ids {
			out[id] = true
		}
	}
	return out
}
