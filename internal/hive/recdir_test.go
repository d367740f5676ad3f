package hive

import (
	"strings"
	"testing"
)

func TestRecordingDirOf(t *testing.T) {
	odd := Recording{SessionID: "a/b c%", EnvID: "env:1"}
	long := Recording{SessionID: strings.Repeat("é", 150), EnvID: "r"}
	for _, tc := range []struct {
		name string
		rel  string
		rec  *Recording // nil: no recording's
	}{
		{"part of a recording partition", "sessions/session_id=s/env_id=r/part-00000.parquet", &Recording{SessionID: "s", EnvID: "r"}},
		{"recording partition listed", "logs/session_id=s/env_id=r/", &Recording{SessionID: "s", EnvID: "r"}},
		{"recording partition named", "telemetry/session_id=s/env_id=r", &Recording{SessionID: "s", EnvID: "r"}},
		{"episode partition part", "steps/session_id=s/env_id=r/episode_record_id=ep-000001/part-00000.parquet", &Recording{SessionID: "s", EnvID: "r"}},
		{"episode partition listed", "steps/session_id=s/env_id=r/episode_record_id=ep-000001/", &Recording{SessionID: "s", EnvID: "r"}},
		{"escaped ids", EpisodePartition("steps", odd, "e").File(3), &odd},
		{"cut id", RecordingPartition("episodes", long).File(0), &long},
		{"empty ids", "episodes/session_id=/env_id=/part-00000.parquet", &Recording{}},
		{"claim", StateDir + "/" + ClaimName(odd), &odd},
		{"layout file", StateDir + "/" + LayoutName, nil},
		{"claims directory", StateDir + "/" + ClaimsDir + "/", nil},
		{"claims of a session id", StateDir + "/" + ClaimsDir + "/session_id=s/", nil},
		{"other state", StateDir + "/log/session_id=s/env_id=r", nil},
		{"ROOT", "", nil},
		{"table", "steps/", nil},
		{"table with a session id", "steps/session_id=s/", nil},
		{"unknown table", "frames/session_id=s/env_id=r/part-00000.parquet", nil},
		{"keys swapped", "steps/env_id=r/session_id=s/part-00000.parquet", nil},
		{"bad escape", "steps/session_id=%G1/env_id=r/", nil},
		{"escape cut short", "steps/session_id=s/env_id=r%4/", nil},
		{"key prefix only", "steps/session_idx=s/env_id=r/", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, ok := RecordingDirOf(tc.rel)
			if tc.rec == nil {
				if ok {
					t.Errorf("RecordingDirOf(%q) = %q, want no recording's", tc.rel, dir)
				}
				return
			}
			if !ok || dir != RecordingDir(*tc.rec) {
				t.Errorf("RecordingDirOf(%q) = %q, %v; want %q", tc.rel, dir, ok, RecordingDir(*tc.rec))
			}
		})
	}
}

func BenchmarkRecordingDirOf(b *testing.B) {
	rel := EpisodePartition("steps", Recording{SessionID: "0190a1b2-7c3d-7e4f-8a9b-0c1d2e3f4a5b", EnvID: "env:0"}, "ep-000123").File(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := RecordingDirOf(rel); !ok {
			b.Fatal("no recording")
		}
	}
}
