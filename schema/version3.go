package schema

import "github.com/parquet-go/parquet-go"

// Schema version 3 (rlmesh 0.1)
//
// Version 3 adds columns to version 2 and changes none, so a reader of
// version 2 reads a version 3 file's version 2 columns where they were,
// and a version 3 reader reads a version 2 file with the new columns null.
// A ROOT may hold recordings of both versions; every file of one
// recording has one version.
//
// steps: after the typed observation and action columns (so that every
// version 2 column keeps its index), in this order:
//
//	lane                  int64, null   the route lane of a lane-served env's episode (rlmesh 0.1
//	                                    route.lane), null for a whole-env route
//	infos                 string, null  the step's infos (StepCompleted.infos) as JSON text, as
//	                                    final_info; null when the runtime sent none (and on a
//	                                    step where a lane rolled)
//	raw_observation_blob  binary, null  the lane's observation before transform_observation, in
//	                                    blob form; null when it equals observation_blob or the
//	                                    runtime sent none (no doubled bytes)
//	raw_action_blob       binary, null  the lane's action before transform_action; null likewise
//	predict_ms            double, null  the step's predict wall time (StepCompleted.predict_ms)
//	step_ms               double, null  the step's env round trip (StepCompleted.step_ms)
//	observation_infos     string, null  the infos of the observation the row's observation_blob
//	                                    is (ObservationEmitted.infos) as JSON text: rlmesh 0.1
//	                                    sends them with a reset observation, so an episode's
//	                                    first row holds its reset infos (under NEXT_STEP, the
//	                                    roll's infos); null when the runtime sent none
//
// episodes: after every version 2 column (EpisodeRow):
//
//	seed            int64, null   the reset seed (EpisodeStarted.seed, else EpisodeCompleted.seed)
//	trial_index     uint64, null  the trial ordinal (null under NEXT_STEP autoreset)
//	success_source  string, null  where success came from: "runtime" (EpisodeCompleted.success,
//	                              the runtime's own reading), "final_info" (rlrec's reading of
//	                              is_success / success in final_info, for a runtime that sent
//	                              none), null when success is null
//	lane            int64, null   as in steps
//	predict_ms      double, null  the runtime's per-step mean over the episode
//	step_ms         double, null  likewise for the env step
//
// sessions: after every version 2 column (SessionRow):
//
//	surplus_steps  int64, null  lane-steps of surplus episodes: rlmesh 0.1 runs the lanes
//	                            beyond the remaining max_episodes budget, whose episodes
//	                            appear in id vectors but never get EpisodeStarted or
//	                            EpisodeCompleted. They are scored by no one, so no episode
//	                            row or steps row holds them; their lane-steps are counted
//	                            here and in dropped_steps, and an id that never started is
//	                            no problem in a recording of rlmesh 0.1 (one whose
//	                            StepCompleted events carry per-lane flags, or whose events
//	                            carry a route lane)
//
// logs: after every version 2 column (LogRow):
//
//	lane  int64, null  the Log event's route lane (a lane-served env's per-lane logs)
//
// Relay advisories (rlmesh 0.1's RelayAdvisory event) are rows of the
// logs table with source SourceEvent (see EventLogMessage): a relay
// sends each distinct advisory once, a handful per run, which a table
// of their own would hold in files of one row.

// Column names of schema version 3. ColLane, ColPredictMs and ColStepMs
// name a column of both the steps and the episodes table.
const (
	ColLane               = "lane"
	ColInfos              = "infos"
	ColRawObservationBlob = "raw_observation_blob"
	ColRawActionBlob      = "raw_action_blob"
	ColPredictMs          = "predict_ms"
	ColStepMs             = "step_ms"
	ColObservationInfos   = "observation_infos"
	ColSeed               = "seed"
	ColTrialIndex         = "trial_index"
	ColSuccessSource      = "success_source"
	ColSurplusSteps       = "surplus_steps"
)

// Values of the episodes table's success_source column. They are
// persisted: do not change them.
const (
	SuccessFromRuntime   = "runtime"
	SuccessFromFinalInfo = "final_info"
)

// Offsets of the version 3 steps columns from StepsTable.V3Index. They are
// part of the file layout: do not change them.
const (
	V3StepsLane               = 0
	V3StepsInfos              = 1
	V3StepsRawObservationBlob = 2
	V3StepsRawActionBlob      = 3
	V3StepsPredictMs          = 4
	V3StepsStepMs             = 5
	V3StepsObservationInfos   = 6
	NumV3StepsColumns         = 7
)

// V3StepsColumns returns the steps columns schema version 3 adds, in file
// order (at StepsTable.V3Index + V3StepsX).
func V3StepsColumns() []StepsColumn {
	return []StepsColumn{
		{ColLane, parquet.Optional(parquet.Int(64))},
		{ColInfos, parquet.Optional(parquet.String())},
		{ColRawObservationBlob, parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), plainEnc))},
		{ColRawActionBlob, parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), plainEnc))},
		{ColPredictMs, parquet.Optional(parquet.Leaf(parquet.DoubleType))},
		{ColStepMs, parquet.Optional(parquet.Leaf(parquet.DoubleType))},
		{ColObservationInfos, parquet.Optional(parquet.String())},
	}
}
