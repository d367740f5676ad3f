package main

import (
	"path/filepath"
	"slices"
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
// component id or the component name, with or without --session; a
// command that can take several recordings takes every one it names, and
// one that reads one refuses a name two recordings share with an error
// listing each choice.
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
		{"inspect a shared name", []string{"inspect", root, "--session", "shared", "--env", "cartpole"}, 0, []string{"recording session shared env " + cp[0], "recording session shared env " + cp[1]}},
		{"inspect a name without session", []string{"inspect", root, "--env", "cartpole"}, 0, []string{"recording session shared env " + cp[0], "recording session shared env " + cp[1]}},
		{"inspect unknown env", []string{"inspect", root, "--session", "shared", "--env", "nope"}, 1, []string{`no env "nope"`, pp, cp[0], cp[1], "env/pick-place"}},
		{"inspect a session of three", []string{"inspect", root, "--session", "shared"}, 0, []string{"spaces of session shared", pp, cp[0], cp[1]}},
		{"inspect episode of a shared name", []string{"inspect", root, "--env", "cartpole", "--episode", "ep-000001"}, 1, []string{"ambiguous", "--session shared --env " + cp[0], "--session shared --env " + cp[1]}},
		{"inspect episode by name", []string{"inspect", root, "--env", "pick-place", "--episode", "ep-000001"}, 0, []string{"episode ep-000001"}},
		{"replay by name", []string{"replay", root, "--session", "shared", "--env", "pick-place"}, 0, []string{`"observation"`}},
		{"replay by name without session", []string{"replay", root, "--env", "pick-place"}, 0, []string{`"observation"`}},
		{"replay a shared name", []string{"replay", root, "--env", "cartpole"}, 0, []string{`"env_id":"` + cp[0], `"env_id":"` + cp[1]}},
		{"replay a session of three", []string{"replay", root, "--session", "shared"}, 0, []string{`"env_id":"` + pp, `"env_id":"` + cp[0], `"env_id":"` + cp[1]}},
		{"replay arrow of a shared name", []string{"replay", root, "--env", "cartpole", "--format", "arrow", "-o", filepath.Join(t.TempDir(), "x.arrows")}, 1, []string{"ambiguous", "2 recordings", "--session shared --env " + cp[0], "--session shared --env " + cp[1]}},
		{"replay an episode of a shared name", []string{"replay", root, "--env", "cartpole", "--episode", "ep-000001"}, 1, []string{"ambiguous", "--session shared --env " + cp[0]}},
		{"replay neither", []string{"replay", root}, 2, []string{"--session or --env is required"}},
		{"stats by name", []string{"stats", root, "--session", "shared", "--env", "pick-place"}, 0, []string{"observation"}},
		{"stats a shared name", []string{"stats", root, "--env", "cartpole"}, 0, []string{"overall", cp[0], cp[1]}},
		{"export by name", []string{"export", root, "--format", "lerobot", "-o", filepath.Join(t.TempDir(), "x"), "--session", "shared", "--env", "pick-place", "--fps", "10"}, 0, []string{"1 episode"}},
		{"export a shared name", []string{"export", root, "--format", "lerobot", "-o", filepath.Join(t.TempDir(), "x"), "--env", "cartpole"}, 0, []string{"2 episodes"}},
		{"export of different spaces", []string{"export", root, "--format", "lerobot", "-o", filepath.Join(t.TempDir(), "x"), "--fps", "10"}, 1, []string{"export one env at a time, --env cartpole (2 recordings) or --env pick-place (1 recording)"}},
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

// TestCopyEnvByName: copy's --env takes a component name too, with or
// without --session, and copies every recording of it.
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

// TestCopyEnvSharedName: copy --env NAME without --session copies every
// recording that runs the env.
func TestCopyEnvSharedName(t *testing.T) {
	root, ids := sharedSessionRoot(t)
	dst := filepath.Join(t.TempDir(), "dst")
	code, out, errOut := runCmd(t, "copy", root, dst, "--env", "cartpole")
	if code != 0 || !strings.Contains(out, "2 recordings") {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	d, err := dataset.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var got []string
	for _, r := range d.Recordings() {
		got = append(got, r.EnvID)
	}
	slices.Sort(got)
	want := slices.Sorted(slices.Values(ids["cartpole"]))
	if !slices.Equal(got, want) {
		t.Errorf("copied env ids %v, want the cartpole runs %v", got, want)
	}
}
