package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/sim"
)

// sharedSessionRoot records three runs under one session id, as rlmesh's
// local runner does: two of cartpole and one of pick-place. It returns
// the ROOT and the env ids by env name.
func sharedSessionRoot(t *testing.T) (string, map[string][]string) {
	t.Helper()
	var cfgs []sim.Config
	for i, env := range []string{"cartpole", "cartpole", "pick-place"} {
		cfgs = append(cfgs, sim.Config{Env: env, NumEnvs: 1, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: uint64(i + 1), SessionID: "shared"})
	}
	root := roottest.Record(t, cfgs)
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ids := map[string][]string{}
	for _, r := range d.Recordings() {
		name := componentName(envComponent(d, r))
		ids[name] = append(ids[name], r.EnvID)
	}
	if len(ids["cartpole"]) != 2 || len(ids["pick-place"]) != 1 {
		t.Fatalf("env ids %v", ids)
	}
	return root, ids
}

// TestEnvByName: wherever an env is selected, --env takes the env id, the
// component id or the component name; a name two recordings share is an
// error listing their env ids.
func TestEnvByName(t *testing.T) {
	root, ids := sharedSessionRoot(t)
	pp, cp := ids["pick-place"][0], ids["cartpole"]
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"inspect by name", []string{"inspect", root, "--session", "shared", "--env", "pick-place"}, 0, []string{pp, "pick-place"}},
		{"inspect by component id", []string{"inspect", root, "--session", "shared", "--env", "env/pick-place"}, 0, []string{pp}},
		{"inspect by env id", []string{"inspect", root, "--session", "shared", "--env", cp[1]}, 0, []string{cp[1], "cartpole"}},
		{"inspect ambiguous name", []string{"inspect", root, "--session", "shared", "--env", "cartpole"}, 1, []string{"ambiguous", cp[0], cp[1]}},
		{"inspect unknown env", []string{"inspect", root, "--session", "shared", "--env", "nope"}, 1, []string{`no env "nope"`, pp, cp[0], cp[1], "env/pick-place"}},
		{"inspect needs an env", []string{"inspect", root, "--session", "shared"}, 1, []string{"3 recordings", "--env"}},
		{"replay by name", []string{"replay", root, "--session", "shared", "--env", "pick-place"}, 0, []string{`"observation"`}},
		{"stats by name", []string{"stats", root, "--session", "shared", "--env", "pick-place"}, 0, []string{"observation"}},
		{"stats ambiguous", []string{"stats", root, "--session", "shared", "--env", "cartpole"}, 1, []string{"ambiguous"}},
		{"export by name", []string{"export", root, "--format", "lerobot", "-o", filepath.Join(t.TempDir(), "x"), "--session", "shared", "--env", "pick-place", "--fps", "10"}, 0, []string{"1 episode"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runReadCmd(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, out, errOut)
				}
			}
		})
	}
}

// TestCopyEnvByName: copy's --env takes a component name too.
func TestCopyEnvByName(t *testing.T) {
	root, ids := sharedSessionRoot(t)
	dst := filepath.Join(t.TempDir(), "dst")
	code, out, errOut := runCmd(t, "copy", root, dst, "--session", "shared", "--env", "pick-place")
	if code != 0 || !strings.Contains(out, "1 recording") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	d, err := dataset.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if recs := d.Recordings(); len(recs) != 1 || recs[0].EnvID != ids["pick-place"][0] {
		t.Errorf("copied %v, want the pick-place run %s", recs, ids["pick-place"][0])
	}
}
