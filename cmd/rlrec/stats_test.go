package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/stats"
)

func TestStatsCommand(t *testing.T) {
	code, out, errOut := runReadCmd(t, "stats", goldenRoot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "stats.txt", out)

	code, out, errOut = runReadCmd(t, "stats", goldenRoot, "--session", "golden-cartpole", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "stats-cartpole.json", out)
	var js struct {
		Recordings []struct {
			Features []struct {
				Feature string
				Mean    []any
			}
		}
		Overall []any
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Recordings) != 1 || len(js.Overall) != 1 || js.Recordings[0].Features[0].Feature != "reward" {
		t.Errorf("JSON holds %+v", js)
	}

	file := filepath.Join(t.TempDir(), "stats.parquet")
	code, out, errOut = runReadCmd(t, "stats", goldenRoot, "-o", file)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows, err := parquet.ReadFile[stats.Row](file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Wrote ") || len(rows) == 0 {
		t.Errorf("%d rows; stdout ends %q", len(rows), out[max(0, len(out)-80):])
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no ROOT", []string{"stats"}, 2, "want one ROOT"},
		{"unknown session", []string{"stats", goldenRoot, "--session", "nope"}, 1, `session "nope"`},
		{"unknown env", []string{"stats", goldenRoot, "--env", "x"}, 1, `no env "x" in `},
		{"not parquet", []string{"stats", goldenRoot, "-o", "stats.csv"}, 2, "*.parquet"},
		{"stdout", []string{"stats", goldenRoot, "-o", "-"}, 2, "takes a file name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runReadCmd(t, tc.args...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, want %d; stderr %q does not say %q", code, tc.code, errOut, tc.want)
			}
		})
	}
}
