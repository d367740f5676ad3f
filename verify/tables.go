package verify

import (
	"errors"
	"io"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// episodeSum is what the cross-file checks need of one episodes file.
type episodeSum struct {
	rel                string
	rows               []episodeRec
	obsSpace, actSpace string
}

// episodeRec is what the cross-file checks need of one episodes row.
type episodeRec struct {
	row                   int64
	recordID              string
	episodeID             string
	episodeIndex          int64
	envIndex              int32
	status                string
	stepsRecorded         int64
	rewardSum             float64
	terminated, truncated bool
	stepsFile             *string
}

// sessionSum is what the cross-file checks need of one sessions file.
type sessionSum struct {
	rel  string
	rows []sessionRec
	// logRows and teleRows are the rlrec.log_rows and
	// rlrec.telemetry_rows of the file's metadata, -1 when absent.
	logRows, teleRows int64
}

// sessionRec is what the cross-file checks need of one sessions row.
type sessionRec struct {
	episodesRecorded, stepsRecorded int64
}

func (c *fileCheck) checkEpisodes(pf *parquet.File) {
	obs, obsJS := c.space(pf, schema.MetaObservationSpace)
	_, actJS := c.space(pf, schema.MetaActionSpace)
	var rows []schema.EpisodeRow
	if c.version == schema.SchemaVersion2 {
		old, ok := readRows[schema.EpisodeRowV2](c, pf, schema.EpisodesSchemaV2)
		if !ok {
			return
		}
		rows = make([]schema.EpisodeRow, len(old))
		for i, r := range old {
			rows[i] = r.Upgrade()
		}
	} else {
		var ok bool
		if rows, ok = readRows[schema.EpisodeRow](c, pf, schema.EpisodesSchema); !ok {
			return
		}
	}
	sum := &episodeSum{rel: c.f.Rel, rows: make([]episodeRec, len(rows)), obsSpace: obsJS, actSpace: actJS}
	for i := range rows {
		row := &rows[i]
		sum.rows[i] = episodeRec{row: int64(i), recordID: row.EpisodeRecordID, episodeID: row.EpisodeID,
			episodeIndex: row.EpisodeIndex, envIndex: row.EnvIndex, status: row.Status,
			stepsRecorded: row.StepsRecorded, rewardSum: row.RewardSum,
			terminated: row.Terminated, truncated: row.Truncated, stepsFile: row.StepsFile}
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
	c.sum.episode, c.sum.read = sum, true
}

func (c *fileCheck) checkSessions(pf *parquet.File) {
	var rows []schema.SessionRow
	legacy := parquet.EqualNodes(pf.Schema(), schema.SessionsSchemaBeforeClock)
	if legacy {
		// Written before the clock column: as good, without it.
		old, ok := readRows[schema.SessionRowBeforeClock](c, pf, schema.SessionsSchemaBeforeClock)
		if !ok {
			return
		}
		for _, r := range old {
			rows = append(rows, schema.SessionRow{EnvComponentID: r.EnvComponentID, ModelComponentID: r.ModelComponentID,
				Status: r.Status, Reason: r.Reason, TotalSteps: r.TotalSteps, TotalEpisodes: r.TotalEpisodes,
				StartedAt: r.StartedAt, EndedAt: r.EndedAt, EpisodesRecorded: r.EpisodesRecorded,
				StepsRecorded: r.StepsRecorded, DroppedSteps: r.DroppedSteps, Problems: r.Problems,
				ProblemSummary: r.ProblemSummary})
		}
	} else if c.version == schema.SchemaVersion2 {
		old, ok := readRows[schema.SessionRowV2](c, pf, schema.SessionsSchemaV2)
		if !ok {
			return
		}
		for _, r := range old {
			rows = append(rows, r.Upgrade())
		}
	} else {
		var ok bool
		if rows, ok = readRows[schema.SessionRow](c, pf, schema.SessionsSchema); !ok {
			return
		}
	}
	sum := &sessionSum{rel: c.f.Rel, rows: make([]sessionRec, len(rows)), logRows: -1, teleRows: -1}
	for _, kv := range []struct {
		key string
		dst *int64
	}{{schema.MetaLogRows, &sum.logRows}, {schema.MetaTelemetryRows, &sum.teleRows}} {
		if v, ok := pf.Lookup(kv.key); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				c.add(CheckMetadata, -1, fixForeign, "%s is %q, not a row count", kv.key, v)
				continue
			}
			*kv.dst = n
		}
	}
	for i := range rows {
		sum.rows[i] = sessionRec{episodesRecorded: rows[i].EpisodesRecorded, stepsRecorded: rows[i].StepsRecorded}
		switch rows[i].Status {
		case schema.SessionEnded, schema.SessionFailed, schema.SessionCrashed, schema.SessionOpen:
		default:
			c.add(CheckSession, int64(i), fixForeign, "status %q is not a session status", rows[i].Status)
		}
		switch rows[i].Clock {
		case schema.ClockEvent, schema.ClockRecorder, schema.ClockMixed:
		case "":
			if !legacy {
				c.add(CheckSession, int64(i), fixForeign, "clock is empty, none of %q, %q and %q",
					schema.ClockEvent, schema.ClockRecorder, schema.ClockMixed)
			}
		default:
			c.add(CheckSession, int64(i), fixForeign, "clock %q is none of %q, %q and %q", rows[i].Clock,
				schema.ClockEvent, schema.ClockRecorder, schema.ClockMixed)
		}
	}
	c.sum.session, c.sum.read = sum, true
}

// readRows checks a fixed table's schema and reads its rows.
func readRows[T any](c *fileCheck, pf *parquet.File, want *parquet.Schema) ([]T, bool) {
	if !parquet.EqualNodes(pf.Schema(), want) {
		c.add(CheckSchema, -1, fixForeign, "the columns are not those of the %s table", c.f.Table)
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
