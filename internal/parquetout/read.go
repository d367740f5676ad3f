package parquetout

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
)

// ReadEpisodeRecordIDs returns the episode_record_id column of an episodes
// file, in row order. Recovery uses it to tell which episodes a ROOT
// already holds when a damaged log lost their markers.
func ReadEpisodeRecordIDs(fsys vfs.FS, path string) ([]string, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("parquetout: open %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("parquetout: stat %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("parquetout: open %s: %w", path, err)
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
			return nil, fmt.Errorf("parquetout: read %s: %w", path, err)
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
