package recorder_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/recorder"
)

// TestOptionsRefused: Open refuses an option value it cannot work with,
// with ErrInvalidOption, and opens nothing.
func TestOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  recorder.Option
	}{
		{"sync interval zero", recorder.WithSyncInterval(0)},
		{"sync interval negative", recorder.WithSyncInterval(-time.Second)},
		{"sync policy unknown", recorder.WithSyncPolicy(recorder.SyncPolicy(99))},
		{"episode batch delay zero", recorder.WithEpisodeBatchDelay(0)},
		{"memory budget below 16 MiB", recorder.WithMemoryBudget(16<<20 - 1)},
		{"row group of no rows", recorder.WithRowGroupRows(0)},
		{"compression unknown", recorder.WithCompression("lz4")},
		{"nil clock", recorder.WithClock(nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := recorder.Open("root", recorder.WithFS(vfs.NewMem()), tc.opt)
			if !errors.Is(err, recorder.ErrInvalidOption) {
				if err == nil {
					rec.Close(context.Background())
				}
				t.Fatalf("Open: %v, want ErrInvalidOption", err)
			}
		})
	}
}

// TestSyncInterval: under SyncGroup, with nobody waiting, the log makes
// what hooks appended durable on its own every WithSyncInterval.
func TestSyncInterval(t *testing.T) {
	ctx := context.Background()
	rec, err := recorder.Open("root", recorder.WithFS(vfs.NewMem()), recorder.WithSyncInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close(ctx)
	if err := rec.OnSessionStarted(ctx, &events.SessionStarted{SessionID: "s", EnvID: "env"}); err != nil {
		t.Fatal(err)
	}
	// The deadline only bounds a failure: the log syncs every millisecond.
	for deadline := time.Now().Add(30 * time.Second); !rec.LogSynced(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the log was not synced 30 s after an append, with a sync interval of 1 ms")
		}
	}
}
