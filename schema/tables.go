package schema

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Table files. Everything in this file is the on-disk contract of rlrec's
// Parquet output (docs/format/steps.md and the other tables' documents): table names, column names, column
// types, metadata keys. Do not change any of it without bumping
// SchemaVersion.

// SchemaVersion is the version of the table layout rlrec writes, stored in
// every file under MetaSchemaVersion. Version 3 (rlmesh 0.1) adds columns
// to version 2 and changes none (version3.go); readers accept both
// (KnownSchemaVersion). Every file of one recording has one version.
const SchemaVersion = "3"

// SchemaVersion2 is the previous version, which readers still accept.
const SchemaVersion2 = "2"

// KnownSchemaVersion reports whether v is a version this rlrec reads.
func KnownSchemaVersion(v string) bool { return v == SchemaVersion || v == SchemaVersion2 }

// Key-value metadata keys of every table file.
const (
	MetaSchemaVersion   = "rlrec.schema_version"
	MetaLayout          = "rlrec.layout" // the ROOT's steps layout: "episode" or "session"
	MetaSessionID       = "rlrec.session_id"
	MetaEnvID           = "rlrec.env_id"
	MetaEpisodeRecordID = "rlrec.episode_record_id" // steps files of layout "episode"
	// MetaLogRows and MetaTelemetryRows, in a sessions file, count the
	// rows of the recording's logs and telemetry files written up to and
	// with it (decimal), so that a missing part file is seen.
	MetaLogRows       = "rlrec.log_rows"
	MetaTelemetryRows = "rlrec.telemetry_rows"
	// MetaLastSequence, in a sessions, logs or telemetry file of a
	// recording whose events came numbered (rlrec serve's clients), is
	// the highest sequence number among the recording's events applied
	// when the file's rows were taken (decimal). Once a recording has
	// ended and its events left the log, every event up to the highest
	// of its files' numbers is in its published files, and a server
	// started on the ROOT later drops resent events up to it. Optional:
	// files of unnumbered events have none, and readers that do not know
	// it ignore it.
	MetaLastSequence = "rlrec.last_sequence"
	// MetaRunNonce, in a sessions, logs or telemetry file of a recording
	// whose events came numbered, is the nonce of the run that recorded it
	// (eventsv1.Event.run_nonce) in hex, or "rlrec-derived:" and hex for a
	// run that sent none (the hash of its first event). A server started
	// on the ROOT later refuses another run's events under the
	// recording's ids. Optional: readers that do not know it ignore it.
	MetaRunNonce = "rlrec.run_nonce"
	// MetaStoreRequests, in a sessions file of a ROOT in object storage,
	// counts the requests the writer had sent for the recording when it
	// wrote the file's row: its claim, its listings, the puts of the
	// files published before, each once however often it was retried,
	// as one JSON
	// object of the count by op ("put", "upload_part", "list", ...; the
	// ops not sent left out), then "total" and "attempts" (HTTP
	// requests, retries included): {"put":12,"list":4,"total":16,
	// "attempts":16}. The writer publishes the recording's earlier files
	// before it counts; the puts of the final write itself (the sessions
	// file and the logs and telemetry files written with it) come after
	// and are not in it. A recording
	// finished by recovery counts the recovering process's requests
	// only. Absent in a ROOT on disk and in files written before rlrec
	// kept it.
	MetaStoreRequests    = "rlrec.store_requests"
	MetaObservationSpace = "rlrec.observation_space" // steps and episodes files: protojson SpaceSpec
	MetaActionSpace      = "rlrec.action_space"      // steps and episodes files: protojson SpaceSpec
)

// Table names: the first directory level under ROOT.
const (
	TableSteps     = "steps"
	TableEpisodes  = "episodes"
	TableSessions  = "sessions"
	TableLogs      = "logs"
	TableTelemetry = "telemetry"
)

// Partition columns. They live in the directory names only, never inside
// the files; episode_record_id is a partition column of the steps table in
// layout "episode" and a file column of the episodes table, and of the
// steps table in layout "session".
const (
	ColSessionID       = "session_id"
	ColEnvID           = "env_id"
	ColEpisodeRecordID = "episode_record_id"
)

// Column names of the steps table, in file order; the typed observation and
// action columns follow them.
const (
	ColEpisodeID       = "episode_id"
	ColEpisodeIndex    = "episode_index"
	ColEnvIndex        = "env_index"
	ColStep            = "step"
	ColSessionStep     = "session_step"
	ColObservationBlob = "observation_blob"
	ColActionBlob      = "action_blob"
	ColReward          = "reward"
	ColIsFirst         = "is_first"
	ColIsLast          = "is_last"
	ColTerminated      = "terminated"
	ColTruncated       = "truncated"
	ColRecordedAt      = "recorded_at"
	// ColObservation and ColAction name the typed column of a single-leaf
	// space, and prefix the per-leaf columns ("observation.<path>") of
	// other spaces.
	ColObservation = "observation"
	ColAction      = "action"
)

// Column names of the episodes table (besides ColEpisodeID, ColEpisodeIndex,
// ColEnvIndex, ColTerminated and ColTruncated).
const (
	ColEnvComponentID       = "env_component_id"
	ColModelComponentID     = "model_component_id"
	ColStartedFromAutoReset = "started_from_auto_reset"
	ColStatus               = "status"
	ColStepCount            = "step_count"
	ColCumulativeReward     = "cumulative_reward"
	ColStepsRecorded        = "steps_recorded"
	ColRewardSum            = "reward_sum"
	ColSuccess              = "success"
	ColDurationMs           = "duration_ms"
	ColStartedAt            = "started_at"
	ColEndedAt              = "ended_at"
	ColFinalInfo            = "final_info"
	ColFinalObservationBlob = "final_observation_blob"
	ColStepsFile            = "steps_file"
)

// Column names of the sessions table (besides the route columns, ColStatus,
// ColStartedAt, ColEndedAt and ColStepsRecorded).
const (
	ColReason           = "reason"
	ColTotalSteps       = "total_steps"
	ColTotalEpisodes    = "total_episodes"
	ColEpisodesRecorded = "episodes_recorded"
	ColDroppedSteps     = "dropped_steps"
	// ColProblems counts the session's input that did not fit the
	// recording (unknown ids, slabs that do not split, ...), and
	// ColProblemSummary lists them as "kind=count" pairs.
	ColProblems       = "problems"
	ColProblemSummary = "problem_summary"
	// ColClock says whose clock the recording's times (recorded_at,
	// started_at, ended_at, log and telemetry times) are: ClockEvent,
	// ClockRecorder or ClockMixed.
	ColClock = "clock"
)

// Values of the sessions table's clock column. rlmesh's hook events carry
// no time: whoever receives a hook call stamps it. A producer that streams
// events (rlrec simulate, the Go client, the Python capture, rlrec replay)
// stamps each with the time of its hook call (time_unix_nano), and the
// recorder keeps it; an event that comes without one (a hook called on
// the recorder itself, a stream without times) gets the recorder's clock.
const (
	// ClockEvent: every event of the recording carried its time.
	ClockEvent = "event"
	// ClockRecorder: no event did; the recorder stamped its own clock.
	ClockRecorder = "recorder"
	// ClockMixed: some did, some did not.
	ClockMixed = "mixed"
)

// Column names of the logs and telemetry tables.
const (
	ColTime      = "time"
	ColLevel     = "level"
	ColMessage   = "message"
	ColSource    = "source"
	ColHorizon   = "horizon"
	ColOp        = "op"
	ColComponent = "component"
	ColMetric    = "metric"
	ColKind      = "kind"
	ColCount     = "count"
	ColAvg       = "avg"
	ColP50       = "p50"
	ColP95       = "p95"
	ColP99       = "p99"
)

// Status values of the episodes and sessions tables.
const (
	EpisodeCompleted  = "completed"
	EpisodeIncomplete = "incomplete"

	SessionEnded   = "ended"
	SessionFailed  = "failed"
	SessionCrashed = "crashed"
	SessionOpen    = "open"
)

// DefaultBinaryThreshold is the per-lane leaf size, in bytes, above which a
// typed column holds the raw leaf bytes (binary) instead of decoded values.
const DefaultBinaryThreshold = 4096

// EpisodeRow is one row of the episodes table. Its parquet tags define the
// table's columns and their order; pointers are nullable columns.
//
// Decisions where the contract is silent: ended_at and duration_ms are null
// when the episode never ended (an incomplete episode whose end is
// unknown); final_info is null when the runtime sent no final info;
// steps_file (the steps file's path relative to ROOT, "/" separators) is
// null for an episode with no recorded step, which has no steps file.
type EpisodeRow struct {
	EpisodeRecordID      string     `parquet:"episode_record_id"`
	EpisodeID            string     `parquet:"episode_id"`
	EpisodeIndex         int64      `parquet:"episode_index"`
	EnvIndex             int32      `parquet:"env_index"`
	EnvComponentID       string     `parquet:"env_component_id,dict"`
	ModelComponentID     string     `parquet:"model_component_id,dict"`
	StartedFromAutoReset bool       `parquet:"started_from_auto_reset"`
	Status               string     `parquet:"status,dict"`
	StepCount            *int64     `parquet:"step_count,optional"`
	CumulativeReward     *float64   `parquet:"cumulative_reward,optional"`
	StepsRecorded        int64      `parquet:"steps_recorded"`
	RewardSum            float64    `parquet:"reward_sum"`
	Terminated           bool       `parquet:"terminated"`
	Truncated            bool       `parquet:"truncated"`
	Success              *bool      `parquet:"success,optional"`
	DurationMs           *int64     `parquet:"duration_ms,optional"`
	StartedAt            time.Time  `parquet:"started_at,timestamp(microsecond:utc)"`
	EndedAt              *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	FinalInfo            *string    `parquet:"final_info,optional"`
	FinalObservationBlob []byte     `parquet:"final_observation_blob,optional,plain"`
	StepsFile            *string    `parquet:"steps_file,optional"`
	// The columns of schema version 3 (version3.go), after every column of
	// version 2.
	Seed          *int64   `parquet:"seed,optional"`
	TrialIndex    *uint64  `parquet:"trial_index,optional"`
	SuccessSource *string  `parquet:"success_source,optional,dict"`
	Lane          *int64   `parquet:"lane,optional"`
	PredictMs     *float64 `parquet:"predict_ms,optional"`
	StepMs        *float64 `parquet:"step_ms,optional"`
}

// EpisodeRowV2 is an episodes row of a schema version 2 file: EpisodeRow
// without the version 3 columns.
type EpisodeRowV2 struct {
	EpisodeRecordID      string     `parquet:"episode_record_id"`
	EpisodeID            string     `parquet:"episode_id"`
	EpisodeIndex         int64      `parquet:"episode_index"`
	EnvIndex             int32      `parquet:"env_index"`
	EnvComponentID       string     `parquet:"env_component_id,dict"`
	ModelComponentID     string     `parquet:"model_component_id,dict"`
	StartedFromAutoReset bool       `parquet:"started_from_auto_reset"`
	Status               string     `parquet:"status,dict"`
	StepCount            *int64     `parquet:"step_count,optional"`
	CumulativeReward     *float64   `parquet:"cumulative_reward,optional"`
	StepsRecorded        int64      `parquet:"steps_recorded"`
	RewardSum            float64    `parquet:"reward_sum"`
	Terminated           bool       `parquet:"terminated"`
	Truncated            bool       `parquet:"truncated"`
	Success              *bool      `parquet:"success,optional"`
	DurationMs           *int64     `parquet:"duration_ms,optional"`
	StartedAt            time.Time  `parquet:"started_at,timestamp(microsecond:utc)"`
	EndedAt              *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	FinalInfo            *string    `parquet:"final_info,optional"`
	FinalObservationBlob []byte     `parquet:"final_observation_blob,optional,plain"`
	StepsFile            *string    `parquet:"steps_file,optional"`
}

// Upgrade returns the row as a version 3 row: its version 3 columns null.
func (r EpisodeRowV2) Upgrade() EpisodeRow {
	return EpisodeRow{EpisodeRecordID: r.EpisodeRecordID, EpisodeID: r.EpisodeID, EpisodeIndex: r.EpisodeIndex,
		EnvIndex: r.EnvIndex, EnvComponentID: r.EnvComponentID, ModelComponentID: r.ModelComponentID,
		StartedFromAutoReset: r.StartedFromAutoReset, Status: r.Status, StepCount: r.StepCount,
		CumulativeReward: r.CumulativeReward, StepsRecorded: r.StepsRecorded, RewardSum: r.RewardSum,
		Terminated: r.Terminated, Truncated: r.Truncated, Success: r.Success, DurationMs: r.DurationMs,
		StartedAt: r.StartedAt, EndedAt: r.EndedAt, FinalInfo: r.FinalInfo,
		FinalObservationBlob: r.FinalObservationBlob, StepsFile: r.StepsFile}
}

// SessionRow is one row of the sessions table. total_steps and
// total_episodes are as the runtime reported them at SessionEnded, null if
// it never did; reason is null when there is none; ended_at is null for an
// open session.
type SessionRow struct {
	EnvComponentID   string     `parquet:"env_component_id"`
	ModelComponentID string     `parquet:"model_component_id"`
	Status           string     `parquet:"status"`
	Reason           *string    `parquet:"reason,optional"`
	TotalSteps       *int64     `parquet:"total_steps,optional"`
	TotalEpisodes    *int64     `parquet:"total_episodes,optional"`
	StartedAt        time.Time  `parquet:"started_at,timestamp(microsecond:utc)"`
	EndedAt          *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	EpisodesRecorded int64      `parquet:"episodes_recorded"`
	StepsRecorded    int64      `parquet:"steps_recorded"`
	DroppedSteps     int64      `parquet:"dropped_steps"`
	Problems         int64      `parquet:"problems"`
	ProblemSummary   *string    `parquet:"problem_summary,optional"`
	Clock            string     `parquet:"clock,dict"`
	// SurplusSteps (schema version 3) counts the lane-steps of surplus
	// episodes (version3.go); null in version 2 files.
	SurplusSteps *int64 `parquet:"surplus_steps,optional"`
}

// SessionRowV2 is a sessions row of a schema version 2 file: SessionRow
// without surplus_steps.
type SessionRowV2 struct {
	EnvComponentID   string     `parquet:"env_component_id"`
	ModelComponentID string     `parquet:"model_component_id"`
	Status           string     `parquet:"status"`
	Reason           *string    `parquet:"reason,optional"`
	TotalSteps       *int64     `parquet:"total_steps,optional"`
	TotalEpisodes    *int64     `parquet:"total_episodes,optional"`
	StartedAt        time.Time  `parquet:"started_at,timestamp(microsecond:utc)"`
	EndedAt          *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	EpisodesRecorded int64      `parquet:"episodes_recorded"`
	StepsRecorded    int64      `parquet:"steps_recorded"`
	DroppedSteps     int64      `parquet:"dropped_steps"`
	Problems         int64      `parquet:"problems"`
	ProblemSummary   *string    `parquet:"problem_summary,optional"`
	Clock            string     `parquet:"clock,dict"`
}

// Upgrade returns the row as a version 3 row (surplus_steps null).
func (r SessionRowV2) Upgrade() SessionRow {
	return SessionRow{EnvComponentID: r.EnvComponentID, ModelComponentID: r.ModelComponentID, Status: r.Status,
		Reason: r.Reason, TotalSteps: r.TotalSteps, TotalEpisodes: r.TotalEpisodes, StartedAt: r.StartedAt,
		EndedAt: r.EndedAt, EpisodesRecorded: r.EpisodesRecorded, StepsRecorded: r.StepsRecorded,
		DroppedSteps: r.DroppedSteps, Problems: r.Problems, ProblemSummary: r.ProblemSummary, Clock: r.Clock}
}

// SessionRowBeforeClock is a sessions row of a file written before the
// clock column was added (same schema version, one column fewer).
type SessionRowBeforeClock struct {
	EnvComponentID   string     `parquet:"env_component_id"`
	ModelComponentID string     `parquet:"model_component_id"`
	Status           string     `parquet:"status"`
	Reason           *string    `parquet:"reason,optional"`
	TotalSteps       *int64     `parquet:"total_steps,optional"`
	TotalEpisodes    *int64     `parquet:"total_episodes,optional"`
	StartedAt        time.Time  `parquet:"started_at,timestamp(microsecond:utc)"`
	EndedAt          *time.Time `parquet:"ended_at,optional,timestamp(microsecond:utc)"`
	EpisodesRecorded int64      `parquet:"episodes_recorded"`
	StepsRecorded    int64      `parquet:"steps_recorded"`
	DroppedSteps     int64      `parquet:"dropped_steps"`
	Problems         int64      `parquet:"problems"`
	ProblemSummary   *string    `parquet:"problem_summary,optional"`
}

// LogRow is one row of the logs table. level is "debug", "info", "warn" or
// "error"; source is null when the event had none.
type LogRow struct {
	Time    time.Time `parquet:"time,timestamp(microsecond:utc)"`
	Level   string    `parquet:"level,dict"`
	Message string    `parquet:"message"`
	Source  *string   `parquet:"source,optional,dict"`
	// Lane (schema version 3) is the route lane of a lane-served env's
	// Log event (rlmesh 0.1 route.lane), null otherwise; a file written
	// before version 3 gained it has no such column (LogsSchemaV2).
	Lane *int64 `parquet:"lane,optional"`
}

// LogRowV2 is a logs row of a file without the lane column.
type LogRowV2 struct {
	Time    time.Time `parquet:"time,timestamp(microsecond:utc)"`
	Level   string    `parquet:"level,dict"`
	Message string    `parquet:"message"`
	Source  *string   `parquet:"source,optional,dict"`
}

// TelemetryRow is one row of the telemetry table: one metric of one
// snapshot. horizon is "window" or "session"; kind is "duration_ms", "bytes"
// or "count". count is stored signed (int64) for ease of querying.
type TelemetryRow struct {
	Time      time.Time `parquet:"time,timestamp(microsecond:utc)"`
	Horizon   string    `parquet:"horizon,dict"`
	Op        string    `parquet:"op,dict"`
	Component string    `parquet:"component,dict"`
	Metric    string    `parquet:"metric,dict"`
	Kind      string    `parquet:"kind,dict"`
	Count     int64     `parquet:"count"`
	Avg       float64   `parquet:"avg"`
	P50       float64   `parquet:"p50"`
	P95       float64   `parquet:"p95"`
	P99       float64   `parquet:"p99"`
}

// Schemas of the fixed tables.
var (
	EpisodesSchema = parquet.SchemaOf(EpisodeRow{})
	// EpisodesSchemaV2 is the episodes table of schema version 2.
	EpisodesSchemaV2 = parquet.SchemaOf(EpisodeRowV2{})
	SessionsSchema   = parquet.SchemaOf(SessionRow{})
	// SessionsSchemaV2 is the sessions table of schema version 2.
	SessionsSchemaV2 = parquet.SchemaOf(SessionRowV2{})
	// SessionsSchemaBeforeClock is the sessions table as rlrec wrote it
	// before the clock column: readers and rlrec verify accept such files
	// (their clock reads as "", unknown).
	SessionsSchemaBeforeClock = parquet.SchemaOf(SessionRowBeforeClock{})
	LogsSchema                = parquet.SchemaOf(LogRow{})
	LogsSchemaV2              = parquet.SchemaOf(LogRowV2{})
	TelemetrySchema           = parquet.SchemaOf(TelemetryRow{})
)

// ColumnForm is how a typed steps column stores a leaf. Values appear in
// inspect output: do not change them.
type ColumnForm uint8

const (
	// FormScalar is one value of the leaf's column type (Box shape [],
	// Discrete).
	FormScalar ColumnForm = 1
	// FormList is a LIST of the leaf's column type (other Box,
	// MultiDiscrete, MultiBinary).
	FormList ColumnForm = 2
	// FormString is the leaf's UTF-8 text (Text).
	FormString ColumnForm = 3
	// FormBinary is the raw leaf bytes, for leaves whose per-lane size
	// exceeds the binary threshold.
	FormBinary ColumnForm = 4
)

// TypedColumn is one typed column of the steps table: which leaf it holds
// and how.
type TypedColumn struct {
	// Name is the column name: "observation", "action",
	// "observation.<path>" or "action.<path>" (ColumnName of the leaf's
	// Path; SplitColumnName gives back the keys).
	Name string
	// Index is the column's leaf index in the file schema.
	Index int
	// Leaf is the leaf the column holds (a copy of the layout's leaf).
	Leaf Leaf
	// Form says how the leaf is stored.
	Form ColumnForm
	// Kind is the parquet physical type of the column's values: Boolean,
	// Int32, Int64, Float or Double for FormScalar and FormList (of the
	// list elements), ByteArray for FormString and FormBinary.
	Kind parquet.Kind
}

// StepsTable is the schema of a steps file for one pair of spaces.
type StepsTable struct {
	Schema *parquet.Schema
	// Packed is set for the steps files of layout "session", which pack
	// whole episodes and carry the column episode_record_id at
	// StepsColEpisodeRecordID.
	Packed bool
	// Observation and Action list the typed columns, in leaf order.
	Observation []TypedColumn
	Action      []TypedColumn
	// Version is the schema version the table is of; from version 3 on,
	// the columns V3StepsColumns lists follow the typed ones, from
	// V3Index on.
	Version string
	V3Index int
}

// Leaf column indexes of the fixed steps columns, in file order; the typed
// columns follow from NumFixedStepsColumns on. They are part of the file
// layout: do not change them.
const (
	StepsColEpisodeID       = 0
	StepsColEpisodeIndex    = 1
	StepsColEnvIndex        = 2
	StepsColStep            = 3
	StepsColSessionStep     = 4
	StepsColObservationBlob = 5
	StepsColActionBlob      = 6
	StepsColReward          = 7
	StepsColIsFirst         = 8
	StepsColIsLast          = 9
	StepsColTerminated      = 10
	StepsColTruncated       = 11
	StepsColRecordedAt      = 12
	// StepsColEpisodeRecordID is in packed steps files (layout
	// "session") only.
	StepsColEpisodeRecordID = 13
)

// NumFixedStepsColumns is the number of steps columns before the typed
// ones, in the files of layout "episode"; a packed file (layout
// "session") has one more, episode_record_id.
const NumFixedStepsColumns = 13

// StepsColumn is one fixed column of the steps table: its name and its
// Parquet node (type, logical type, repetition, encoding).
type StepsColumn struct {
	Name string
	Node parquet.Node
}

// FixedStepsColumns returns the fixed columns of the steps table in file
// order: the column at index StepsColX is the one StepsColX names. Readers
// and writers of other formats take the list from here rather than
// writing it again.
func FixedStepsColumns() []StepsColumn {
	fields := stepsFixedFields()
	cols := make([]StepsColumn, len(fields))
	for i, f := range fields {
		cols[i] = StepsColumn{Name: f.name, Node: f.node}
	}
	return cols
}

// StepsSchema returns the steps table schema for the given observation and
// action layouts. A leaf at the root of its space (Path "") gets the column
// "observation" / "action"; every other leaf gets "observation.<path>" /
// "action.<path>", also when it is the only leaf of a Dict or Tuple, so a
// column's name depends on its leaf alone (see ColumnName; the path
// escapes a key's own "%" and "." as "%25" and "%2E", so a key "pos.x"
// gives "observation.pos%2Ex"). A nil layout gives no typed columns for that side.
// binaryThreshold is the per-lane leaf size above which a fixed-size leaf is
// stored as binary; 0 means DefaultBinaryThreshold. Text leaves are always
// strings.
func StepsSchema(obs, act *Layout, binaryThreshold int) (*StepsTable, error) {
	return stepsSchema(obs, act, binaryThreshold, false, SchemaVersion)
}

// StepsSchemaOf is StepsSchema (or PackedStepsSchema, when packed) of the
// given schema version: a version 2 table has no version 3 columns.
func StepsSchemaOf(version string, obs, act *Layout, binaryThreshold int, packed bool) (*StepsTable, error) {
	if !KnownSchemaVersion(version) {
		return nil, fmt.Errorf("schema: steps table of unknown schema version %q", version)
	}
	return stepsSchema(obs, act, binaryThreshold, packed, version)
}

// PackedStepsSchema is StepsSchema for the packed steps files of layout
// "session": the fixed columns end with episode_record_id
// (StepsColEpisodeRecordID), since the file holds many episodes.
func PackedStepsSchema(obs, act *Layout, binaryThreshold int) (*StepsTable, error) {
	return stepsSchema(obs, act, binaryThreshold, true, SchemaVersion)
}

func stepsSchema(obs, act *Layout, binaryThreshold int, packed bool, version string) (*StepsTable, error) {
	if binaryThreshold <= 0 {
		binaryThreshold = DefaultBinaryThreshold
	}
	fields := stepsFixedFields()
	if packed {
		fields = append(fields, orderedField{ColEpisodeRecordID, parquet.Encoded(parquet.String(), dictEnc)})
	}
	t := &StepsTable{Packed: packed, Version: version}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		seen[f.name] = true
	}
	var err error
	if t.Observation, fields, err = typedColumns(fields, seen, ColObservation, obs, binaryThreshold); err != nil {
		return nil, err
	}
	if t.Action, fields, err = typedColumns(fields, seen, ColAction, act, binaryThreshold); err != nil {
		return nil, err
	}
	t.V3Index = -1
	if version != SchemaVersion2 {
		t.V3Index = len(fields)
		for _, c := range V3StepsColumns() {
			if seen[c.Name] {
				return nil, fmt.Errorf("schema: steps column %q appears twice", c.Name)
			}
			fields = append(fields, orderedField{c.Name, c.Node})
		}
	}
	t.Schema = parquet.NewSchema(TableSteps, newOrderedGroup(fields))
	return t, nil
}

var (
	plainEnc = &parquet.Plain
	dictEnc  = &parquet.RLEDictionary
)

func stepsFixedFields() []orderedField {
	ts := parquet.Timestamp(parquet.Microsecond)
	return []orderedField{
		{ColEpisodeID, parquet.Encoded(parquet.String(), dictEnc)},
		{ColEpisodeIndex, parquet.Int(64)},
		{ColEnvIndex, parquet.Int(32)},
		{ColStep, parquet.Int(64)},
		{ColSessionStep, parquet.Int(64)},
		{ColObservationBlob, parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), plainEnc))},
		{ColActionBlob, parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), plainEnc))},
		{ColReward, parquet.Leaf(parquet.DoubleType)},
		{ColIsFirst, parquet.Leaf(parquet.BooleanType)},
		{ColIsLast, parquet.Leaf(parquet.BooleanType)},
		{ColTerminated, parquet.Leaf(parquet.BooleanType)},
		{ColTruncated, parquet.Leaf(parquet.BooleanType)},
		{ColRecordedAt, ts},
	}
}

func typedColumns(fields []orderedField, seen map[string]bool, prefix string, l *Layout, threshold int) ([]TypedColumn, []orderedField, error) {
	if l == nil {
		return nil, fields, nil
	}
	cols := make([]TypedColumn, 0, len(l.Leaves))
	for _, leaf := range l.Leaves {
		name := ColumnName(prefix, leaf.Path)
		if seen[name] {
			return nil, nil, fmt.Errorf("schema: steps column %q appears twice; leaf paths must be unique", name)
		}
		seen[name] = true
		col := TypedColumn{Name: name, Index: len(fields), Leaf: leaf}
		node, err := typedNode(&col, threshold)
		if err != nil {
			return nil, nil, fmt.Errorf("schema: steps column %q: %w", name, err)
		}
		fields = append(fields, orderedField{name, node})
		cols = append(cols, col)
	}
	return cols, fields, nil
}

// typedNode sets col.Form and col.Kind and returns the column's node. Every
// typed column is optional: it is null when the step has no value for its
// side (no observation seen yet).
func typedNode(col *TypedColumn, threshold int) (parquet.Node, error) {
	leaf := &col.Leaf
	switch {
	case leaf.Kind == KindText:
		col.Form, col.Kind = FormString, parquet.ByteArray
		return parquet.Optional(parquet.String()), nil
	case leaf.Stride > int64(threshold):
		col.Form, col.Kind = FormBinary, parquet.ByteArray
		return parquet.Optional(parquet.Encoded(parquet.Leaf(parquet.ByteArrayType), plainEnc)), nil
	}
	var elem parquet.Node
	switch leaf.Kind {
	case KindDiscrete:
		col.Form = FormScalar
		elem = parquet.Int(64)
	case KindMultiBinary:
		col.Form = FormList
		elem = parquet.Leaf(parquet.BooleanType)
	case KindBox, KindMultiDiscrete:
		col.Form = FormList
		if leaf.Kind == KindBox && len(leaf.Shape) == 0 {
			col.Form = FormScalar
		}
		var err error
		if elem, err = dtypeNode(leaf.DType); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown leaf kind %d", leaf.Kind)
	}
	col.Kind = elem.Type().Kind()
	if col.Form == FormScalar {
		return parquet.Optional(elem), nil
	}
	return parquet.Optional(parquet.List(elem)), nil
}

// dtypeNode maps an element dtype to its column type: unsigned integers to
// the parquet unsigned INT logical types (UINT_8 .. UINT_64, which DuckDB
// reads as UTINYINT .. UBIGINT and pandas as uint8 .. uint64), float16
// widened to float.
func dtypeNode(dt spacesv1.DataType) (parquet.Node, error) {
	switch dt {
	case spacesv1.DataType_DATA_TYPE_BOOL:
		return parquet.Leaf(parquet.BooleanType), nil
	case spacesv1.DataType_DATA_TYPE_UINT8:
		return parquet.Uint(8), nil
	case spacesv1.DataType_DATA_TYPE_UINT16:
		return parquet.Uint(16), nil
	case spacesv1.DataType_DATA_TYPE_UINT32:
		return parquet.Uint(32), nil
	case spacesv1.DataType_DATA_TYPE_UINT64:
		return parquet.Uint(64), nil
	case spacesv1.DataType_DATA_TYPE_INT8:
		return parquet.Int(8), nil
	case spacesv1.DataType_DATA_TYPE_INT16:
		return parquet.Int(16), nil
	case spacesv1.DataType_DATA_TYPE_INT32:
		return parquet.Int(32), nil
	case spacesv1.DataType_DATA_TYPE_INT64:
		return parquet.Int(64), nil
	case spacesv1.DataType_DATA_TYPE_FLOAT16, spacesv1.DataType_DATA_TYPE_FLOAT32:
		return parquet.Leaf(parquet.FloatType), nil
	case spacesv1.DataType_DATA_TYPE_FLOAT64:
		return parquet.Leaf(parquet.DoubleType), nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownDType, DTypeName(dt))
}

// orderedField is a named child of an orderedGroup.
type orderedField struct {
	name string
	node parquet.Node
}

// orderedGroup is a parquet group node whose fields keep the order they
// were given in (parquet.Group sorts them by name), so that the steps
// columns appear in the documented order.
type orderedGroup struct {
	fields []parquet.Field
	gotype reflect.Type
}

func newOrderedGroup(fields []orderedField) *orderedGroup {
	g := &orderedGroup{fields: make([]parquet.Field, len(fields))}
	sf := make([]reflect.StructField, len(fields))
	for i, f := range fields {
		g.fields[i] = &groupField{Node: f.node, name: f.name, index: i}
		sf[i] = reflect.StructField{
			Name: "F" + strconv.Itoa(i),
			Type: f.node.GoType(),
			Tag:  reflect.StructTag(`parquet:` + strconv.Quote(f.name)),
		}
	}
	g.gotype = reflect.StructOf(sf)
	return g
}

func (g *orderedGroup) ID() int                           { return 0 }
func (g *orderedGroup) String() string                    { return sprintNode(g) }
func (g *orderedGroup) Type() parquet.Type                { return parquet.Group{}.Type() }
func (g *orderedGroup) Optional() bool                    { return false }
func (g *orderedGroup) Repeated() bool                    { return false }
func (g *orderedGroup) Required() bool                    { return true }
func (g *orderedGroup) Leaf() bool                        { return false }
func (g *orderedGroup) Fields() []parquet.Field           { return g.fields }
func (g *orderedGroup) Encoding() encoding.Encoding       { return nil }
func (g *orderedGroup) Compression() compress.Codec       { return nil }
func (g *orderedGroup) GoType() reflect.Type              { return g.gotype }
func (f *groupField) Name() string                        { return f.name }
func (f *groupField) Value(v reflect.Value) reflect.Value { return v.Field(f.index) }

type groupField struct {
	parquet.Node
	name  string
	index int
}

func sprintNode(n parquet.Node) string {
	var b strings.Builder
	_ = parquet.PrintSchema(&b, "", n)
	return b.String()
}
