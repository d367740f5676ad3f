package lerobot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// Values of the sessions table's clock column: who stamped the steps'
// recorded_at.
const (
	ClockEvent    = "event"    // every event carried its own time
	ClockRecorder = "recorder" // the recorder stamped them on arrival
	ClockMixed    = "mixed"    // some of each
)

// TimestampTolerance is LeRobot's default tolerance_s: the most a
// frame's timestamp may differ from frame_index / fps.
const TimestampTolerance = 1e-4

// sessionClock returns the clock column of a recording's sessions rows,
// or "" when the table has no such column (ROOTs recorded before it
// existed: their times are taken as event times). Rows that disagree
// give ClockMixed.
func sessionClock(d *dataset.Dataset, rec dataset.Recording) (string, error) {
	clock := ""
	for _, f := range d.PartitionFiles(schema.TableSessions, rec) {
		c, err := fileClock(f.Path)
		if err != nil {
			return "", err
		}
		switch {
		case c == "":
		case clock == "":
			clock = c
		case clock != c:
			clock = ClockMixed
		}
	}
	return clock, nil
}

type clockRow struct {
	Clock *string `parquet:"clock,optional"`
}

func fileClock(path string) (string, error) {
	pf, closeFile, err := openParquet(path)
	if err != nil {
		return "", err
	}
	defer closeFile()
	if _, ok := pf.Schema().Lookup("clock"); !ok {
		return "", nil
	}
	r := parquet.NewGenericReader[clockRow](pf)
	defer r.Close()
	rows := make([]clockRow, pf.NumRows())
	n, err := r.Read(rows)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read clock of %s: %w", path, err)
	}
	clock := ""
	for _, row := range rows[:n] {
		if row.Clock == nil {
			continue
		}
		if clock == "" {
			clock = *row.Clock
		} else if clock != *row.Clock {
			clock = ClockMixed
		}
	}
	return clock, nil
}

// checkClock says whether recordings whose clocks are clocks may give
// the frame rate: not when the recorder stamped any of their times.
func checkClock(rec dataset.Recording, clock string) error {
	switch clock {
	case ClockRecorder, ClockMixed:
		return fmt.Errorf("%w: recording %s has clock %q (the recorder stamped its step times on arrival, so they measure the recorder, not the env); give the frame rate", ErrTimesUnknown, rec, clock)
	}
	return nil
}

// MaxDerivedFPS is the highest frame rate an export derives from the
// recorded times: no recorded env (a control loop, a camera, a
// teleoperation rig) runs faster, so a median interval shorter than
// 1/1,000 s measures how fast a loop ran (a simulation, a replay, a
// recorder's arrival times), not the env, and is refused.
const MaxDerivedFPS = 1000

// Regularity: a rate is derived only when at least RegularShare of the
// positive intervals between consecutive frames lie within a factor
// RegularFactor of their median (median/1.5 to median×1.5). Real
// recordings jitter and drop a frame now and then; times that arrive in
// bursts, or mix two rates, fail this and are refused.
const (
	RegularShare  = 0.75
	RegularFactor = 1.5
)

// fpsFromIntervals is the frame rate of the median positive interval
// (seconds) between consecutive frames, rounded to a whole number. Zero
// intervals (frames with one time) are left out. It refuses
// (ErrTimesUnknown) when no interval is positive, when the rate is below
// 1 fps or above MaxDerivedFPS, and when the intervals are too irregular
// to call a rate (see RegularShare).
func fpsFromIntervals(iv []float64) (int, error) {
	pos := make([]float64, 0, len(iv))
	for _, v := range iv {
		if v > 0 {
			pos = append(pos, v)
		}
	}
	if len(pos) == 0 {
		return 0, fmt.Errorf("%w: no two consecutive frames have different times; give the frame rate", ErrTimesUnknown)
	}
	slices.Sort(pos)
	m := pos[len(pos)/2]
	if len(pos)%2 == 0 {
		m = (pos[len(pos)/2-1] + pos[len(pos)/2]) / 2
	}
	fps := math.Round(1 / m)
	if fps < 1 {
		return 0, fmt.Errorf("%w: the median interval between frames is %.3g s, below 1 frame per second; give the frame rate", ErrTimesUnknown, m)
	}
	if fps > MaxDerivedFPS {
		return 0, fmt.Errorf("%w: the median interval between frames is %.3g ms, %.0f frames per second, above the %d that any recorded env runs at: these times measure how fast a loop ran (a simulation, a replay), not the env; give the frame rate", ErrTimesUnknown, m*1000, fps, MaxDerivedFPS)
	}
	regular := 0
	for _, v := range pos {
		if v >= m/RegularFactor && v <= m*RegularFactor {
			regular++
		}
	}
	if share := float64(regular) / float64(len(pos)); share < RegularShare {
		return 0, fmt.Errorf("%w: the times between frames are too irregular to call a rate: %.0f%% of the %d intervals are within a factor %g of their median %.3g ms (a rate needs %.0f%%); give the frame rate", ErrTimesUnknown, share*100, len(pos), RegularFactor, m*1000, RegularShare*100)
	}
	return int(fps), nil
}

// openParquet opens a Parquet file for reading its columns, by its path or
// s3:// URL (the store reads both).
func openParquet(path string) (*parquet.File, func() error, error) {
	f, err := store.OpenPath(context.Background(), path)
	if err != nil {
		return nil, nil, err
	}
	pf, err := parquet.OpenFile(f, f.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("open %s: %w", path, err)
	}
	return pf, f.Close, nil
}
