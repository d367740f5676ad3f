package logcount

import (
	"log/slog"
	"sync"
	"testing"
)

func TestCount(t *testing.T) {
	h := &Handler{}
	logger := slog.New(h).With("root", "r").WithGroup("g")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			logger.Info("completed")
			logger.Debug("aborted", "n", 1)
		})
	}
	wg.Wait()
	for msg, want := range map[string]int{"completed": 8, "aborted": 8, "never": 0} {
		if got := h.Count(msg); got != want {
			t.Errorf("Count(%q) = %d, want %d", msg, got, want)
		}
	}
}
