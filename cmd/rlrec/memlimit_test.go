package main

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/rlrec/rlrec/recorder"
)

func TestLimitMemory(t *testing.T) {
	for _, tc := range []struct {
		name, env string
		want      int64
	}{
		{"no GOMEMLIMIT: the recorder's limit", "", recorder.GCMemoryLimit(recorder.DefaultMemoryBudget)},
		{"GOMEMLIMIT set: left alone", "1GiB", math.MaxInt64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := debug.SetMemoryLimit(math.MaxInt64)
			t.Cleanup(func() { debug.SetMemoryLimit(old) })
			t.Setenv("GOMEMLIMIT", tc.env)
			limitMemory()
			if got := debug.SetMemoryLimit(-1); got != tc.want {
				t.Fatalf("memory limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestRecordingCommandsLimitMemory(t *testing.T) {
	for _, c := range commands {
		want := c.Name == "demo" || c.Name == "ingest" || c.Name == "recover" || c.Name == "serve"
		if c.Records != want {
			t.Errorf("command %s: Records = %v, want %v", c.Name, c.Records, want)
		}
	}
}
