package verify

import (
	"errors"
	"io"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// episodeSum is what the cross-file checks need of one episodes file.
type episodeSum struct {
	rel                string
	rows               []schema.EpisodeRow
	obsSpace, actSpace string
}

// sessionSum is what the cross-file checks need of one sessions file.
type sessionSum struct {
	rel  string
	rows []schema.SessionRow
}

func (c *fileCheck) checkEpisodes(pf *parquet.File) {
	obs, obsJS := c.space(pf, schema.MetaObservationSpace)
	_, actJS := c.space(pf, schema.MetaActionSpace)
	rows, ok := readRows[schema.EpisodeRow](c, pf, schema.EpisodesSchema)
	if !ok {
		return
	}
	for i := range rows {
		row := &rows[i]
		if row.Status != schema.EpisodeCompleted && row.Status != schema.EpisodeIncomplete {
			c.add(CheckEpisode, int64(i), fixForeign, "status %q is neither %q nor %q", row.Status, schema.EpisodeCompleted, schema.EpisodeIncomplete)
		}
		if row.FinalObservationBlob == nil {
			continue
		}
		if obs == nil {
			if obsJS == "" {
				c.add(CheckMetadata, int64(i), fixForeign, "the row has a final observation blob but the file stores no observation space")
			}
			continue
		}
		leaves, err := blob.Decode(row.FinalObservationBlob)
		if err != nil {
			c.add(CheckBlob, int64(i), fixDamaged, "final observation blob does not decode: %v", err)
			continue
		}
		c.checkLeaves(int64(i), "final observation", obs, leaves)
	}
	c.episode = &episodeSum{rel: c.f.rel, rows: rows, obsSpace: obsJS, actSpace: actJS}
}

func (c *fileCheck) checkSessions(pf *parquet.File) {
	rows, ok := readRows[schema.SessionRow](c, pf, schema.SessionsSchema)
	if !ok {
		return
	}
	for i := range rows {
		switch rows[i].Status {
		case schema.SessionEnded, schema.SessionFailed, schema.SessionCrashed, schema.SessionOpen:
		default:
			c.add(CheckSession, int64(i), fixForeign, "status %q is not a session status", rows[i].Status)
		}
	}
	c.session = &sessionSum{rel: c.f.rel, rows: rows}
}

// checkFixed checks the schema and reads every row of a logs or telemetry
// file.
func checkFixed[T any](c *fileCheck, pf *parquet.File, want *parquet.Schema) {
	readRows[T](c, pf, want)
}

// readRows checks a fixed table's schema and reads its rows.
func readRows[T any](c *fileCheck, pf *parquet.File, want *parquet.Schema) ([]T, bool) {
	if !parquet.EqualNodes(pf.Schema(), want) {
		c.add(CheckSchema, -1, fixForeign, "the columns are not those of the %s table", c.f.table)
		return nil, false
	}
	var out []T
	buf := make([]T, 64)
	for g, rg := range pf.RowGroups() {
		r := parquet.NewGenericRowGroupReader[T](rg)
		for {
			n, err := r.Read(buf)
			out = append(out, buf[:n]...)
			clear(buf[:n]) // rows kept in out must not share buf's byte slices
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				r.Close()
				c.rows += int64(len(out))
				c.add(CheckFile, int64(len(out)), fixDamaged, "cannot read row group %d: %v", g, err)
				return nil, false
			}
			if n == 0 {
				break
			}
		}
		r.Close()
	}
	c.rows += int64(len(out))
	if int64(len(out)) != pf.NumRows() {
		c.add(CheckFile, -1, fixDamaged, "read %d rows, the footer says %d", len(out), pf.NumRows())
		return nil, false
	}
	return out, true
}
