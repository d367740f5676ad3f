package parquetout

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/internal/vfs"
)

// ReadKeyValue returns the value of the key-value metadata key of the
// Parquet file at path, and whether the file has it; it reads the footer
// only.
func ReadKeyValue(fsys vfs.FS, path, key string) (string, bool, error) {
	pf, closeFile, err := openFooter(fsys, path)
	if err != nil {
		return "", false, err
	}
	defer closeFile()
	v, ok := pf.Lookup(key)
	return v, ok, nil
}

// openFooter opens the Parquet file at path, reading its footer but not
// its page indexes or bloom filters; the caller closes it.
func openFooter(fsys vfs.FS, path string) (*parquet.File, func() error, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("parquetout: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("parquetout: stat %s: %w", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("parquetout: open %s: %w", path, err)
	}
	return pf, f.Close, nil
}

// ReadEpisodeRecordIDs returns the episode_record_id column of an episodes
// file, in row order. Recovery uses it to tell which episodes a ROOT
// already holds when a damaged log lost their markers.
func ReadEpisodeRecordIDs(fsys vfs.FS, path string) ([]string, error) {
	pf, closeFile, err := openFooter(fsys, path)
	if err != nil {
		return nil, err
	}
	defer closeFile()
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
