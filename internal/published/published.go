package published

import (
	"fmt"
	"strconv"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// sequenceTables are the tables whose files carry rlrec.last_sequence.
var sequenceTables = []string{schema.TableSessions, schema.TableLogs, schema.TableTelemetry}

// LastSequence returns the highest sequence number that the published
// sessions, logs and telemetry files of the recording rec in the ROOT st
// record under rlrec.last_sequence (schema.MetaLastSequence): every
// event of the recording up to that number is in the ROOT's published
// files. It is 0 when the ROOT holds none of the recording's files, or
// only files of unnumbered events. It reads the files' footers on every
// call (in a bucket, a listing per table and a ranged GET or two per
// file); an error names the file that could not be read.
func LastSequence(st store.Root, rec hive.Recording) (uint64, error) {
	var last uint64
	for _, table := range sequenceTables {
		parts, err := st.Parts(hive.RecordingPartition(table, rec).Rel())
		if err != nil {
			return 0, fmt.Errorf("published: last sequence of %s: %w", rec, err)
		}
		for _, p := range parts {
			v, ok, err := readKeyValue(st, p, schema.MetaLastSequence)
			if err != nil {
				return 0, fmt.Errorf("published: last sequence of %s: %w", rec, err)
			}
			if !ok {
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("published: last sequence of %s: %s has %s %q, not a number", rec, st.Path(p.Rel), schema.MetaLastSequence, v)
			}
			last = max(last, n)
		}
	}
	return last, nil
}

// readKeyValue reads the key-value metadata key of the published part p
// of st (parquetout.ReadKeyValue).
func readKeyValue(st store.Root, p hive.Object, key string) (string, bool, error) {
	f, err := st.Open(p.Rel, p.Size)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return parquetout.ReadKeyValue(f, f.Size(), st.Path(p.Rel), key)
}

// EpisodeIDs returns the episode record ids in the published episodes
// files of the recording rec in the ROOT st. A file that cannot be read
// counts for nothing: verify reports it.
func EpisodeIDs(st store.Root, rec hive.Recording) map[string]bool {
	out := map[string]bool{}
	parts, err := st.Parts(hive.RecordingPartition(schema.TableEpisodes, rec).Rel())
	if err != nil {
		return out
	}
	for _, p := range parts {
		f, err := st.Open(p.Rel, p.Size)
		if err != nil {
			continue
		}
		ids, err := parquetout.ReadEpisodeRecordIDs(f, f.Size(), st.Path(p.Rel))
		f.Close()
		if err != nil {
			continue
		}
		for _, id := range ids {
			out[id] = true
		}
	}
	return out
}
