package sim

import "google.golang.org/protobuf/encoding/protowire"

// wireSizes computes the request.bytes and response.bytes telemetry: the
// encoded sizes the rlmesh messages of each call would have (PredictRequest
// and PredictResponse, StepRequest and StepResponse, ResetRequest and
// ResetResponse) with their payloads, ids and rewards. Timeouts, infos and
// the metadata of completed episodes are left out.
type wireSizes struct {
	context int // an AdapterContext field with the session and env ids
	id      int // one episode id, a 36-character UUID string
}

func newWireSizes(sessionID, envID string) wireSizes {
	ctx := 1 + protowire.SizeBytes(len(sessionID)) + 1 + protowire.SizeBytes(len(envID))
	return wireSizes{context: 1 + protowire.SizeBytes(ctx), id: 1 + protowire.SizeBytes(36)}
}

// valueField is the size of a SpaceValue of leaves as a message field.
func valueField(leaves [][]byte) int {
	n := 0
	for _, l := range leaves {
		n += 1 + protowire.SizeBytes(len(l))
	}
	return 1 + protowire.SizeBytes(n)
}

// predictRequest: the context, the observation and one EpisodeInfo (an
// episode id) per lane.
func (w wireSizes) predictRequest(obs [][]byte, lanes int) int {
	return w.predictRequestLen(valueField(obs), lanes)
}

// predictRequestLen is predictRequest for an observation field of
// obsField bytes (valueField).
func (w wireSizes) predictRequestLen(obsField, lanes int) int {
	return w.context + obsField + lanes*(1+protowire.SizeBytes(w.id))
}

// predictResponse: the context and one action frame.
func (w wireSizes) predictResponse(action [][]byte) int {
	return w.context + valueField(action)
}

// stepRequest: the action and every lane's episode id.
func (w wireSizes) stepRequest(action [][]byte, lanes int) int {
	return valueField(action) + lanes*w.id
}

// stepResponse: the observation, the packed rewards (none when the vector
// is empty) and the terminated and truncated masks, a byte per lane each.
func (w wireSizes) stepResponse(obs [][]byte, rewards, lanes int) int {
	n := valueField(obs) + 2*(1+protowire.SizeBytes(lanes))
	if rewards > 0 {
		n += 1 + protowire.SizeBytes(8*rewards)
	}
	return n
}

// resetRequest: the episode ids of the lanes reset and, for a partial
// reset, their indices (packed, one byte each for lanes below 128).
func (w wireSizes) resetRequest(lanes int, partial bool) int {
	n := lanes * w.id
	if partial {
		n += 1 + protowire.SizeBytes(lanes)
	}
	return n
}

// resetResponse: the observation.
func (w wireSizes) resetResponse(obs [][]byte) int { return valueField(obs) }
