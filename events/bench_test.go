package events

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

func uuidLike(i int) string {
	return fmt.Sprintf("01890a5d-ac96-774b-bcce-b302099a%04x", i)
}

func laneIDs(n int) (ids, recordIDs []string) {
	for i := range n {
		ids = append(ids, uuidLike(i))
		recordIDs = append(recordIDs, fmt.Sprintf("ep-%06d", i+1))
	}
	return ids, recordIDs
}

var benchRoute = RuntimeEnvContext{EnvID: "CartPole-v1", EnvComponentID: "env-0", ModelComponentID: "policy-0"}

// cartpoleAction is a 16-lane ActionReceived: Discrete(2) as int64, a
// 128-byte slab.
func cartpoleAction() *ActionReceived {
	ids, rids := laneIDs(16)
	return &ActionReceived{
		SessionID: "0189f7c4-6b1e-7cc2-9a57-3f1a2b3c4d5e", Route: benchRoute,
		EpisodeID: ids[0], EpisodeRecordID: rids[0], EpisodeIDs: ids, EpisodeRecordIDs: rids,
		Step: 1234,
		ActionSpace: &spacesv1.SpaceSpec{Dtype: spacesv1.DataType_DATA_TYPE_INT64,
			Spec: &spacesv1.SpaceSpec_Discrete{Discrete: &spacesv1.DiscreteSpec{N: 2}}},
		Action: [][]byte{make([]byte, 16*8)},
	}
}

// imageObservation is an 8-lane 84x84x3 uint8 ObservationEmitted.
func imageObservation() *ObservationEmitted {
	ids, rids := laneIDs(8)
	slab := make([]byte, 8*84*84*3)
	for i := range slab {
		slab[i] = byte(i * 7)
	}
	return &ObservationEmitted{
		SessionID: "0189f7c4-6b1e-7cc2-9a57-3f1a2b3c4d5e", Route: benchRoute,
		EpisodeID: ids[0], EpisodeRecordID: rids[0], EpisodeIDs: ids, EpisodeRecordIDs: rids,
		Step: 1234, NumEnvs: 8,
		ObservationSpace: &spacesv1.SpaceSpec{Shape: []int64{84, 84, 3}, Dtype: spacesv1.DataType_DATA_TYPE_UINT8,
			Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Uniform{
				Uniform: &spacesv1.UniformBounds{Low: []byte{0}, High: []byte{255}}}}}},
		Observation: [][]byte{slab},
	}
}

var benchTime = time.Unix(1_700_000_000, 123456789)

func benchAppendMarshal(b *testing.B, ev Event) {
	buf, err := AppendMarshal(nil, ev, benchTime)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf, err = AppendMarshal(buf[:0], ev, benchTime)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func benchUnmarshal(b *testing.B, ev Event) {
	buf, err := AppendMarshal(nil, ev, benchTime)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendMarshal(b *testing.B) {
	b.Run("cartpole16", func(b *testing.B) { benchAppendMarshal(b, cartpoleAction()) })
	b.Run("image8", func(b *testing.B) { benchAppendMarshal(b, imageObservation()) })
}

func BenchmarkUnmarshal(b *testing.B) {
	b.Run("cartpole16", func(b *testing.B) { benchUnmarshal(b, cartpoleAction()) })
	b.Run("image8", func(b *testing.B) { benchUnmarshal(b, imageObservation()) })
}

// cartpoleSteps is one step of a 16-lane cartpole session: the action,
// the rewards and the next observation (4 float32 per lane).
func cartpoleSteps() []Event {
	ids, rids := laneIDs(16)
	act := cartpoleAction()
	return []Event{
		act,
		&StepCompleted{SessionID: act.SessionID, Route: benchRoute, EpisodeID: ids[0], EpisodeRecordID: rids[0],
			Step: 1234, Rewards: make([]float64, 16)},
		&ObservationEmitted{SessionID: act.SessionID, Route: benchRoute, EpisodeID: ids[0], EpisodeRecordID: rids[0],
			EpisodeIDs: ids, EpisodeRecordIDs: rids, Step: 1234, NumEnvs: 16,
			ObservationSpace: &spacesv1.SpaceSpec{Shape: []int64{4}, Dtype: spacesv1.DataType_DATA_TYPE_FLOAT32,
				Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}},
			Observation: [][]byte{make([]byte, 16*4*4)}},
	}
}

// BenchmarkStream measures write and read throughput of a stream; one op
// is one event.
func BenchmarkStream(b *testing.B) {
	for _, bc := range []struct {
		name   string
		events []Event
	}{
		{"cartpole16", cartpoleSteps()},
		{"image8", []Event{imageObservation()}},
	} {
		var stream bytes.Buffer
		w := NewStreamWriter(&stream)
		for _, ev := range bc.events {
			if err := w.WriteAt(ev, benchTime); err != nil {
				b.Fatal(err)
			}
		}
		perEvent := int64(stream.Len() / len(bc.events))
		b.Run(bc.name+"/write", func(b *testing.B) {
			w := NewStreamWriter(io.Discard)
			b.SetBytes(perEvent)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := w.WriteAt(bc.events[i%len(bc.events)], benchTime); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(bc.name+"/read", func(b *testing.B) {
			// Read a stream of many repetitions, restarting when it ends.
			var big bytes.Buffer
			for range 64 {
				big.Write(stream.Bytes())
			}
			src := bytes.NewReader(big.Bytes())
			r := NewStreamReader(src, 0)
			b.SetBytes(perEvent)
			b.ReportAllocs()
			for b.Loop() {
				if !r.Next() {
					if err := r.Err(); err != nil {
						b.Fatal(err)
					}
					src.Reset(big.Bytes())
					r = NewStreamReader(src, 0)
					if !r.Next() {
						b.Fatal(r.Err())
					}
				}
			}
		})
	}
}
