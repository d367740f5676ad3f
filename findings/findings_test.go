package findings

import (
	"strings"
	"testing"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema"
)

func TestList(t *testing.T) {
	rec := dataset.Recording{SessionID: "s1", EnvID: "e1"}
	reason := "env step failed"
	summary := "unknown_episode=2"
	tests := []struct {
		name     string
		root     Root
		problems []string // substrings, in order
		notes    []string
		ofRec    bool // every finding names rec
		api      bool // the default words (APIWords), not cliWords
	}{
		{name: "ended, all complete", root: Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionEnded}}}},
		{name: "ended with incomplete episodes is a note", ofRec: true,
			root:  Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionEnded, EpisodesIncomplete: 3}}},
			notes: []string{"session s1 env e1: 3 episodes still running when the session reached its episode count are recorded as incomplete"}},
		{name: "one incomplete episode", ofRec: true,
			root:  Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionEnded, EpisodesIncomplete: 1}}},
			notes: []string{"1 episode still running", "is recorded as incomplete"}},
		{name: "input problems", ofRec: true,
			root:     Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionEnded, Problems: 2, ProblemSummary: &summary}}},
			problems: []string{"session s1 env e1: 2 problems in its input: unknown_episode=2"}},
		{name: "failed", ofRec: true,
			root:     Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionFailed, Reason: &reason, EpisodesIncomplete: 1}}},
			problems: []string{"failed (env step failed), with 1 incomplete episode"}},
		{name: "crashed", // with the ROOT-level recovery problem too
			root:     Root{Path: "R", NeedsRecovery: true, Recordings: []Recording{{Recording: rec, Status: schema.SessionCrashed}}},
			problems: []string{"crashed: the recorder stopped before the session ended", "run 'rlrec recover R'", "'rlrec verify R'"}},
		{name: "open", // with the ROOT-level recovery problem too
			root:     Root{Path: "R", NeedsRecovery: true, Recordings: []Recording{{Recording: rec, Status: schema.SessionOpen}}},
			problems: []string{"open: the recorder closed before the session ended"}},
		{name: "crashed and recovered", ofRec: true,
			root:  Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionCrashed, EpisodesIncomplete: 1}}},
			notes: []string{"crashed: the recorder stopped before the session ended; recovered: its 1 incomplete episode is recorded as the log had them"}},
		{name: "no sessions row", // with the ROOT-level recovery problem too
			root:     Root{Path: "R", NeedsRecovery: true, Recordings: []Recording{{Recording: rec}}},
			problems: []string{"session s1 env e1: no sessions row (its recorder may not have closed; run 'rlrec recover R')"}},
		{name: "no sessions row after recovery", ofRec: true,
			root:     Root{Path: "R", Recordings: []Recording{{Recording: rec}}},
			problems: []string{"session s1 env e1: no sessions row (its recorder did not close, and the log holds nothing more of it: recovery cannot add its row)"}},
		{name: "no sessions row while writing",
			root:     Root{Path: "R", RecorderWriting: true, Recordings: []Recording{{Recording: rec}}},
			problems: []string{"a recorder is writing R now", "no sessions row (a recorder is still writing it)"}},
		{name: "needs recovery",
			root:     Root{Path: "R", NeedsRecovery: true},
			problems: []string{"the recorder's log R/_rlrec/log holds records it never wrote out", "run 'rlrec recover R' to write them"}},
		{name: "needs recovery, in the Go API's words", api: true,
			root:     Root{Path: "R", NeedsRecovery: true, Recordings: []Recording{{Recording: rec, Status: schema.SessionCrashed}}},
			problems: []string{"recover R (open it with recorder.Open) to write them", "recover R (open it with recorder.Open) to write out what its log holds, then check R (verify.Root)"}},
		{name: "failed with an unfinished action", ofRec: true,
			root: Root{Path: "R", Recordings: []Recording{{Recording: rec, Status: schema.SessionFailed, Reason: &reason,
				UnfinishedActions: []string{"ep-000004", "ep-000005"}}}},
			problems: []string{"failed (env step failed)"},
			notes: []string{"session s1 env e1: 2 actions that no StepCompleted followed (for ep-000004, ep-000005; kept in the logs table, source rlrec/event, message ActionReceived)",
				"so they are no step and have no steps row"}},
		{name: "stray",
			root:     Root{Path: "R", Strays: []dataset.Stray{{Path: "steps/x.csv", Reason: "not a part file"}}},
			problems: []string{"stray steps/x.csv: not a part file"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := tc.root
			if !tc.api {
				root.Words = cliWords
			}
			problems, notes := List(root)
			check := func(kind string, got []Finding, want []string) {
				t.Helper()
				joined := ""
				for _, f := range got {
					joined += f.Text + "\n"
					if tc.ofRec && (!f.OfRecording || f.Recording != rec) {
						t.Errorf("%s %q: not attached to recording %v", kind, f.Text, rec)
					}
				}
				if len(want) == 0 && len(got) > 0 {
					t.Errorf("%s: got %q, want none", kind, joined)
				}
				rest := joined
				for _, w := range want {
					i := strings.Index(rest, w)
					if i < 0 {
						t.Errorf("%s: %q not found (in order) in:\n%s", kind, w, joined)
						return
					}
					rest = rest[i+len(w):]
				}
			}
			check("problems", problems, tc.problems)
			check("notes", notes, tc.notes)
		})
	}
}

func TestReadStateEmpty(t *testing.T) {
	st := ReadState(t.TempDir())
	if st.LogRecords || st.Writing || st.NeedsRecovery() {
		t.Fatalf("an empty directory: got %+v, want the zero state", st)
	}
}

// cliWords words remedies as the CLI does.
func cliWords(a Action) string {
	switch a.Remedy {
	case Recover:
		return "run 'rlrec recover " + a.Root + "'"
	case Verify:
		return "run 'rlrec verify " + a.Root + "'"
	}
	return "?"
}

// TestReadLogs: the unfinished actions and repeated completions of a
// recording's logs rows, and nothing from other rows.
func TestReadLogs(t *testing.T) {
	src, other := schema.SourceEvent, "runtime"
	u := schema.UnfinishedAction{EpisodeRecordID: "ep-000002", EnvIndex: 1, Step: 3, Action: []byte{0x0a, 0x00}}
	rep, _ := schema.EventLogMessage(&events.EpisodeCompleted{EpisodeRecordID: "ep-000001", Truncated: true})
	logs := []schema.LogRow{
		{Message: "env reset complete in 3ms (1 episode(s) ready)", Source: &other},
		{Message: u.Message(), Source: &src},
		{Message: rep, Source: &src},
		{Message: u.Message(), Source: &other}, // not an event row
		{Message: "EnvConnected {}", Source: &src},
	}
	r := Recording{Recording: dataset.Recording{SessionID: "s", EnvID: "e"}}
	r.ReadLogs(logs)
	if got := strings.Join(r.UnfinishedActions, ","); got != "ep-000002" {
		t.Errorf("unfinished actions %q, want ep-000002", got)
	}
	if got := strings.Join(r.RepeatedCompletions, ","); got != "ep-000001" {
		t.Errorf("repeated completions %q, want ep-000001", got)
	}
}
