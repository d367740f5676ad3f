package recorder_test

import (
	"context"
	"errors"
	"testing"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// An event too large for one log record is refused with a clear error, and
// the recorder goes on recording.
func TestOversizedEventIsRefused(t *testing.T) {
	ctx := context.Background()
	rec, err := recorder.Open("root", recorder.WithFS(vfs.NewMem()))
	if err != nil {
		t.Fatal(err)
	}
	spec := &spacesv1.SpaceSpec{Shape: []int64{257 << 20}, Dtype: spacesv1.DataType_DATA_TYPE_UINT8,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	huge := &events.ActionReceived{SessionID: "s", EpisodeRecordIDs: []string{"ep-000001"}, Step: 1,
		ActionSpace: spec, Action: [][]byte{make([]byte, 257<<20)}}
	if err := rec.OnActionReceived(ctx, huge); !errors.Is(err, recorder.ErrEventTooLarge) {
		t.Fatalf("oversized event: got %v, want ErrEventTooLarge", err)
	}
	if err := rec.OnSessionStarted(ctx, &events.SessionStarted{SessionID: "s", EnvID: "env"}); err != nil {
		t.Fatalf("event after the oversized one: %v", err)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}
