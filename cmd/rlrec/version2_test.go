package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// goldenRootV2 is the golden ROOT as rlrec wrote it at schema version 2
// (the files of testdata/golden-root before version 3), kept so that
// every command is checked to read a version 2 ROOT.
const goldenRootV2 = "../../testdata/golden-root-v2"

// TestVersion2Root runs every command that reads a ROOT on a ROOT of
// schema version 2: each must succeed, and what it reports must be what
// the same recording gives at version 3 (the golden ROOT, recorded from
// the same sessions).
func TestVersion2Root(t *testing.T) {
	// The fixture really is of version 2.
	err := filepath.Walk(goldenRootV2, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(p, ".parquet") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pf, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return err
		}
		if v, _ := pf.Lookup(schema.MetaSchemaVersion); v != schema.SchemaVersion2 {
			t.Errorf("%s: schema version %q", p, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // in stdout
		// same: the output equals the version 3 ROOT's (paths aside)
		same bool
	}{
		{"verify", []string{"verify", goldenRootV2}, "no problems", false},
		{"inspect", []string{"inspect", goldenRootV2}, "golden-cartpole", true},
		{"inspect session", []string{"inspect", goldenRootV2, "--session", "golden-all-leaves"}, "ep-000002", true},
		{"inspect json", []string{"inspect", goldenRootV2, "--session", "golden-cartpole", "--json"}, `"surplus_steps": null`, false},
		{"replay jsonl", []string{"replay", goldenRootV2, "--session", "golden-all-leaves"}, `"step":0`, true},
		{"replay events", []string{"replay", goldenRootV2, "--session", "golden-cartpole", "--format", "events", "-o", filepath.Join(out, "ev.bin")}, "", false},
		{"replay arrow", []string{"replay", goldenRootV2, "--session", "golden-cartpole", "--format", "arrow", "-o", filepath.Join(out, "a.arrows")}, "", false},
		{"stats", []string{"stats", goldenRootV2}, "reward", true},
		{"export", []string{"export", goldenRootV2, "--format", "lerobot", "-o", filepath.Join(out, "lerobot"), "--session", "golden-cartpole", "--fps", "30"}, "LeRobot v3.0", false},
		{"copy", []string{"copy", goldenRootV2, filepath.Join(out, "copy")}, "Copied 6 episodes (38 steps) of 2 recordings", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, got, errOut := runReadCmd(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, got, errOut)
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("stdout does not say %q:\n%s", tc.want, got)
			}
			if !tc.same {
				return
			}
			args := append([]string(nil), tc.args...)
			for i, a := range args {
				if a == goldenRootV2 {
					args[i] = goldenRoot
				}
			}
			_, want, _ := runReadCmd(t, args...)
			if withoutIDs(withoutSizes(strings.ReplaceAll(got, goldenRootV2, goldenRoot))) != withoutIDs(withoutSizes(want)) {
				t.Errorf("output differs from the version 3 ROOT's:\n%s\nwant\n%s", got, want)
			}
		})
	}
	// The copy is a ROOT of version 3, and verifies.
	if code, got, errOut := runReadCmd(t, "verify", filepath.Join(out, "copy")); code != 0 {
		t.Errorf("verify of the copy: exit %d\n%s%s", code, got, errOut)
	}
}

// episodeIDs matches the episode ids of replay's JSON lines.
var episodeIDs = regexp.MustCompile(`"episode_id":"[0-9a-f-]{36}"`)

// withoutIDs blanks the episode ids: the version 2 ROOT's were minted
// (UUIDv7) from the simulator's clock readings, the version 3 ROOT's from
// its simulated time, so their timestamps differ; the records are the
// same.
func withoutIDs(s string) string { return episodeIDs.ReplaceAllString(s, `"episode_id":""`) }

// withoutSizes drops the lines that give file sizes, which the version 3
// columns change.
func withoutSizes(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, "KiB") && !strings.Contains(l, " B\n") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
