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

// actionOf is an ActionReceived whose action is one leaf of n bytes.
func actionOf(n int) *events.ActionReceived {
	spec := &spacesv1.SpaceSpec{Shape: []int64{int64(n)}, Dtype: spacesv1.DataType_DATA_TYPE_UINT8,
		Spec: &spacesv1.SpaceSpec_Box{Box: &spacesv1.BoxSpec{Bounds: &spacesv1.BoxSpec_Unbounded{Unbounded: true}}}}
	return &events.ActionReceived{SessionID: "s", EpisodeRecordIDs: []string{"ep-000001"}, Step: 0,
		ActionSpace: spec, Action: [][]byte{make([]byte, n)}}
}

// TestMaxEventSize: by default an event may take a sixteenth of the memory
// budget, so that the several copies one event costs while it is logged,
// assembled and written stay within the budget; a larger one is refused,
// and WithMaxEventSize moves the bound.
func TestMaxEventSize(t *testing.T) {
	const budget = 64 << 20 // a maximum event of 4 MiB
	for _, tc := range []struct {
		name    string
		opts    []recorder.Option
		size    int
		refused bool
	}{
		{"under-the-default", nil, 3 << 20, false},
		{"over-the-default", nil, 5 << 20, true},
		{"raised", []recorder.Option{recorder.WithMaxEventSize(8 << 20)}, 5 << 20, false},
		{"lowered", []recorder.Option{recorder.WithMaxEventSize(1 << 20)}, 2 << 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			opts := append([]recorder.Option{recorder.WithFS(vfs.NewMem()), recorder.WithMemoryBudget(budget)}, tc.opts...)
			rec, err := recorder.Open("root", opts...)
			if err != nil {
				t.Fatal(err)
			}
			if err := rec.OnSessionStarted(ctx, &events.SessionStarted{SessionID: "s", EnvID: "env"}); err != nil {
				t.Fatal(err)
			}
			err = rec.OnActionReceived(ctx, actionOf(tc.size))
			if got := errors.Is(err, recorder.ErrEventTooLarge); got != tc.refused {
				t.Errorf("event of %d bytes: %v, want refused %v", tc.size, err, tc.refused)
			}
			if err := rec.Close(ctx); err != nil {
				t.Fatalf("close: %v", err)
			}
		})
	}
}

func TestMaxEventSizeOption(t *testing.T) {
	for _, n := range []int64{-1, 256<<20 + 1} {
		if _, err := recorder.Open("root", recorder.WithFS(vfs.NewMem()), recorder.WithMaxEventSize(n)); !errors.Is(err, recorder.ErrInvalidOption) {
			t.Errorf("WithMaxEventSize(%d): %v, want ErrInvalidOption", n, err)
		}
	}
}
