package interop

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/export/lerobot"
)

// TestLeRobotExportDuckDB reads a LeRobot export of each layout's
// pick-place recording with DuckDB: the documented columns of the data,
// episodes and tasks files, and the frame and episode counts agreeing
// across them.
func TestLeRobotExportDuckDB(t *testing.T) {
	forEachFixture(t, func(t *testing.T, fx *fixture) {
		d, err := dataset.Open(fx.root)
		if err != nil {
			t.Fatal(err)
		}
		for _, sid := range []string{"pick-place-next", "all-leaves-next", "cartpole-failing"} {
			t.Run(sid, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "lerobot")
				// The fixture's recordings are stamped by the recorder's
				// clock (clock "recorder"), which gives no frame rate: the
				// export needs one given.
				sum, err := lerobot.Export(context.Background(), d, []dataset.Recording{fx.recording(t, sid)}, dir, lerobot.WithIncomplete(true), lerobot.WithFPS(30))
				if err != nil {
					t.Fatal(err)
				}
				db := openDuck(t)
				data := filepath.Join(dir, "data", "*", "*.parquet")
				eps := filepath.Join(dir, lerobot.EpisodesPath)
				tasks := filepath.Join(dir, lerobot.TasksPath)
				r := query(t, db, `SELECT count(*) AS n, count(DISTINCT episode_index) AS e, min("index") AS lo, max("index") AS hi,
					min(timestamp) AS t0, max(task_index) AS tmax FROM read_parquet(?)`, data)[0]
				if r["n"].(int64) != sum.Frames || r["e"].(int64) != int64(sum.Episodes) || r["lo"].(int64) != 0 || r["hi"].(int64) != sum.Frames-1 ||
					r["t0"].(float32) != 0 || r["tmax"].(int64) != int64(sum.Tasks-1) {
					t.Errorf("data file %v, summary %+v", r, sum)
				}
				// Each episode row's range holds its frames, numbered from 0.
				bad := query(t, db, `SELECT e.episode_index FROM read_parquet(?) e
					JOIN (SELECT episode_index, count(*) AS n, min("index") AS lo, max("index") AS hi, max(frame_index) AS fmax
					      FROM read_parquet(?) GROUP BY episode_index) f USING (episode_index)
					WHERE e.length <> f.n OR e.dataset_from_index <> f.lo OR e.dataset_to_index <> f.hi + 1 OR f.fmax <> f.n - 1
					   OR e."data/chunk_index" <> 0 OR e."data/file_index" <> 0 OR len(e.tasks) = 0
					   OR e."stats/index/count"[1] <> f.n OR e."stats/index/min"[1] <> f.lo OR e."stats/index/max"[1] <> f.hi`, eps, data)
				if len(bad) > 0 {
					t.Errorf("episodes rows disagree with the frames: %v", bad)
				}
				tr := query(t, db, `SELECT count(*) AS n, max(task_index) AS m, min(length(task)) AS l FROM read_parquet(?)`, tasks)[0]
				if tr["n"].(int64) != int64(sum.Tasks) || tr["m"].(int64) != int64(sum.Tasks-1) || tr["l"].(int64) == 0 {
					t.Errorf("tasks %v", tr)
				}
				if sid == "pick-place-next" {
					img := query(t, db, `SELECT count(*) AS n FROM read_parquet(?)
						WHERE "observation.images.image".path IS NULL AND "observation.images.image".bytes[1:8] = '\x89PNG\x0D\x0A\x1A\x0A'::BLOB
						  AND len("observation.state") = 7 AND len(action) = 7`, data)[0]
					if img["n"].(int64) != sum.Frames {
						t.Errorf("%v of %d frames have a PNG image and 7-element state and action", img["n"], sum.Frames)
					}
				}
			})
		}
	})
}
