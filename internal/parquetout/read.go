package parquetout

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// ReadKeyValue returns the value of the key-value metadata key of the
// Parquet file f of size bytes (named name in errors: a path or an
// object's URL), and whether the file has it; it reads the footer only.
func ReadKeyValue(f io.ReaderAt, size int64, name, key string) (string, bool, error) {
	pf, err := openFooter(f, size, name)
	if err != nil {
		return "", false, err
	}
	v, ok := pf.Lookup(key)
	return v, ok, nil
}

// openFooter opens the Parquet file f, reading its footer but not its
// page indexes or bloom filters.
func openFooter(f io.ReaderAt, size int64, name string) (*parquet.File, error) {
	pf, err := parquet.OpenFile(f, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("parquetout: open %s: %w", name, err)
	}
	return pf, nil
}

// ReadEpisodeRecordIDs returns the episode_record_id column of an episodes
// file f of size bytes (named name in errors), in row order. Recovery
// uses it to tell which episodes a ROOT already holds when a damaged log
// lost their markers.
func ReadEpisodeRecordIDs(f io.ReaderAt, size int64, name string) ([]string, error) {
	pf, err := openFooter(f, size, name)
	if err != nil {
		return nil, err
	}
	type idRow struct {
		EpisodeRecordID string `parquet:"episode_record_id"`
	}
	r := parquet.NewGenericReader[idRow](pf)
	defer r.Close()
	rows := make([]idRow, pf.NumRows())
	n := 0
	for n < len(rows) {
		k, err := r.Read(rows[n:])
		n += k
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("parquetout: read %s: %w", name, err)
		}
		if k == 0 {
			break
		}
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = rows[i].EpisodeRecordID
	}
	return ids, nil
}
