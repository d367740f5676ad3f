package parquetout

import (
	"fmt"
	"strconv"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Metadata is what a file says about itself in its key-value metadata.
type Metadata struct {
	// Layout is stored under rlrec.layout in every file: the ROOT's steps
	// layout, "episode" when empty.
	Layout hive.Layout
	// SessionID and EnvID, the recording, are stored under
	// rlrec.session_id and rlrec.env_id in every file.
	SessionID string
	EnvID     string
	// EpisodeRecordID is stored under rlrec.episode_record_id in steps
	// files of layout "episode" (also when it is ""), the files of one
	// episode partition.
	EpisodeRecordID string
	// LogRows and TelemetryRows are stored under rlrec.log_rows and
	// rlrec.telemetry_rows in sessions files, when not nil.
	LogRows, TelemetryRows *int64
	// LastSequence is stored under rlrec.last_sequence in sessions, logs
	// and telemetry files, when not 0.
	LastSequence uint64
	// RunNonce is stored under rlrec.run_nonce in sessions, logs and
	// telemetry files, when not "" (schema.MetaRunNonce).
	RunNonce string
	// StoreRequests is stored as it is under rlrec.store_requests in
	// sessions files, when not "": the JSON (store.Requests.MarshalJSON)
	// of the recording's requests to its object store when its row was
	// written (its claim, listings, the puts of every file before), the
	// puts of the final write itself (the sessions file, the logs and
	// telemetry written with it) not among them (schema.MetaStoreRequests).
	// The caller that owns the store counts them; this package only
	// stores the value. "" for a ROOT on disk, so that its files' bytes
	// do not change.
	StoreRequests string
	// ObservationSpace and ActionSpace are stored as protojson under
	// rlrec.observation_space and rlrec.action_space in steps and episodes
	// files, when not nil.
	ObservationSpace *spacesv1.SpaceSpec
	ActionSpace      *spacesv1.SpaceSpec
}

type kvPair struct{ key, value string }

// spaceJSON holds the protojson of a file's spaces, computed once per
// format rather than once per file.
type spaceJSON struct {
	observation, action string
	has                 [2]bool
}

func newSpaceJSON(obs, act *spacesv1.SpaceSpec) (spaceJSON, error) {
	var s spaceJSON
	if obs != nil {
		b, err := schema.SpecJSON(obs)
		if err != nil {
			return s, fmt.Errorf("parquetout: observation space to JSON: %w", err)
		}
		s.observation, s.has[0] = string(b), true
	}
	if act != nil {
		b, err := schema.SpecJSON(act)
		if err != nil {
			return s, fmt.Errorf("parquetout: action space to JSON: %w", err)
		}
		s.action, s.has[1] = string(b), true
	}
	return s, nil
}

// keyValues returns the metadata pairs of a file of the given table.
func keyValues(table string, meta Metadata, spaces spaceJSON) []kvPair {
	layout := meta.Layout
	if layout == "" {
		layout = hive.LayoutEpisode
	}
	kv := []kvPair{
		{schema.MetaSchemaVersion, schema.SchemaVersion},
		{schema.MetaLayout, string(layout)},
		{schema.MetaSessionID, meta.SessionID},
		{schema.MetaEnvID, meta.EnvID},
	}
	if table == schema.TableSteps && layout == hive.LayoutEpisode {
		kv = append(kv, kvPair{schema.MetaEpisodeRecordID, meta.EpisodeRecordID})
	}
	if table == schema.TableSessions {
		if meta.LogRows != nil {
			kv = append(kv, kvPair{schema.MetaLogRows, strconv.FormatInt(*meta.LogRows, 10)})
		}
		if meta.TelemetryRows != nil {
			kv = append(kv, kvPair{schema.MetaTelemetryRows, strconv.FormatInt(*meta.TelemetryRows, 10)})
		}
		if meta.StoreRequests != "" {
			kv = append(kv, kvPair{schema.MetaStoreRequests, meta.StoreRequests})
		}
	}
	if meta.LastSequence != 0 && (table == schema.TableSessions || table == schema.TableLogs || table == schema.TableTelemetry) {
		kv = append(kv, kvPair{schema.MetaLastSequence, strconv.FormatUint(meta.LastSequence, 10)})
	}
	if meta.RunNonce != "" && (table == schema.TableSessions || table == schema.TableLogs || table == schema.TableTelemetry) {
		kv = append(kv, kvPair{schema.MetaRunNonce, meta.RunNonce})
	}
	if table == schema.TableSteps || table == schema.TableEpisodes {
		if spaces.has[0] {
			kv = append(kv, kvPair{schema.MetaObservationSpace, spaces.observation})
		}
		if spaces.has[1] {
			kv = append(kv, kvPair{schema.MetaActionSpace, spaces.action})
		}
	}
	return kv
}
