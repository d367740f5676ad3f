package main

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
)

// TestMessages: messages that misled, each in the case that showed it.
func TestMessages(t *testing.T) {
	stream := readTestStream(t)
	var sid string // the session nanRewardRoot recorded
	tests := []struct {
		name string
		// root builds the ROOT the command runs on ("" in args).
		root func(t *testing.T) string
		args []string
		code int
		want []string // in stdout (code 0) or stderr
		not  []string
	}{
		{name: "replay of the empty session id", args: []string{"replay", goldenRoot, "--session", ""}, code: 1,
			want: []string{`session "" is not in`}, not: []string{"required"}},
		{name: "replay without --session or --env", args: []string{"replay", goldenRoot}, code: 2, want: []string{"--session or --env is required"}},
		{name: "inspect --json of a NaN reward", root: nanRewardRoot(stream, &sid), args: []string{"inspect", "--json", ""}, code: 0,
			want: []string{`"reward_sum": "NaN"`}},
		{name: "inspect --json --session of a NaN reward", root: nanRewardRoot(stream, &sid), args: []string{"inspect", "--json", "--session", "SID", ""}, code: 0,
			want: []string{`"reward_sum": "NaN"`, `"episode_record_id": "ep-000001"`}},
		{name: "recover of an empty log a killed recorder left", args: []string{"recover", ""}, code: 0,
			root: func(t *testing.T) string {
				src := filepath.Join(t.TempDir(), "live")
				rec, err := recorder.Open(src)
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(t.TempDir(), "killed")
				roottest.CopyDir(t, src, dst) // as a kill leaves it: the open marker there
				if err := rec.Close(context.Background()); err != nil {
					t.Fatal(err)
				}
				return dst
			},
			want: []string{"the log is empty, but the last recorder did not close"}, not: []string{"closed cleanly"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{}, tc.args...)
			if tc.root != nil {
				root := tc.root(t)
				for i, a := range args {
					switch a {
					case "":
						args[i] = root
					case "SID":
						args[i] = sid
					}
				}
			}
			code, out, errs := runCmd(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			got := out
			if code != 0 {
				got = errs
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("output lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("output says %q:\n%s", w, got)
				}
			}
		})
	}
}

// nanRewardRoot records the first recording of stream, with a NaN reward
// in its first step, and sets *sid to its session id.
func nanRewardRoot(stream []byte, sid *string) func(t *testing.T) string {
	return func(t *testing.T) string {
		root := filepath.Join(t.TempDir(), "r")
		rec, err := recorder.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		r := events.NewStreamReader(bytes.NewReader(stream), 0)
		*sid = ""
		done := false
		for r.Next() {
			ev := r.Event()
			id, _ := ev.Header()
			if *sid == "" {
				*sid = id
			}
			if id != *sid {
				continue // the first recording only
			}
			if s, ok := ev.(*events.StepCompleted); ok && !done && len(s.Rewards) > 0 {
				s.Rewards[0], done = math.NaN(), true
			}
			if err := rec.RecordAt(ctx, ev, r.Time()); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		if err := rec.Close(ctx); err != nil {
			t.Fatal(err)
		}
		return root
	}
}
