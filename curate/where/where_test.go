package where

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/schema"
)

func ptr[T any](v T) *T { return &v }

// episode is a completed, successful episode of 12 steps; mod changes it.
func episode(mod func(e *dataset.Episode)) *dataset.Episode {
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	e := &dataset.Episode{
		Recording:       dataset.Recording{SessionID: "sess-1", EnvID: "env-a"},
		EpisodeRecordID: "ep-000003",
		Row: schema.EpisodeRow{
			EpisodeRecordID:  "ep-000003",
			EpisodeID:        "e3",
			EpisodeIndex:     3,
			EnvIndex:         1,
			EnvComponentID:   "cartpole",
			ModelComponentID: "policy",
			Status:           schema.EpisodeCompleted,
			StepCount:        ptr(int64(12)),
			CumulativeReward: ptr(12.5),
			StepsRecorded:    12,
			RewardSum:        12.5,
			Terminated:       true,
			Success:          ptr(true),
			DurationMs:       ptr(int64(40)),
			StartedAt:        start,
			EndedAt:          ptr(start.Add(40 * time.Millisecond)),
			FinalInfo:        ptr(`{"is_success":true}`),
			StepsFile:        ptr("steps/session_id=sess-1/env_id=env-a/episode_record_id=ep-000003/part-00000.parquet"),
		},
	}
	if mod != nil {
		mod(e)
	}
	return e
}

func incomplete(e *dataset.Episode) {
	e.Row.Status = schema.EpisodeIncomplete
	e.Row.StepCount, e.Row.CumulativeReward, e.Row.Success, e.Row.DurationMs, e.Row.EndedAt, e.Row.FinalInfo = nil, nil, nil, nil, nil, nil
	e.Row.Terminated = false
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		filter string
		ep     func(*dataset.Episode)
		want   bool
	}{
		{"the brief's example", "status = 'completed' AND success = true AND step_count > 10", nil, true},
		{"step count not above", "step_count > 12", nil, false},
		{"step count at least", "step_count >= 12", nil, true},
		{"not equal with <>", "status <> 'incomplete'", nil, true},
		{"double equals", "env_index == 1", nil, true},
		{"keywords in lower case", "status = 'completed' and not truncated", nil, true},
		{"column name case-insensitive", "STATUS = 'completed'", nil, true},
		{"quoted column", `"status" = 'completed'`, nil, true},
		{"string compares bytewise", "episode_record_id < 'ep-000010'", nil, true},
		{"string quote escaped", "final_info = '{\"is_success\":true}'", nil, true},
		{"apostrophe in string", "model_component_id = 'it''s'", func(e *dataset.Episode) { e.Row.ModelComponentID = "it's" }, true},
		{"int column against fraction", "step_count < 12.5", nil, true},
		{"int column against exponent", "step_count = 1.2e1", nil, true},
		{"negative number", "reward_sum > -1", nil, true},
		{"float column against integer", "cumulative_reward > 12", nil, true},
		{"float equality", "reward_sum = 12.5", nil, true},
		{"NaN above everything", "reward_sum > 1e300", func(e *dataset.Episode) { e.Row.RewardSum = math.NaN() }, true},
		{"huge integer literal", "episode_index < 99999999999999999999", nil, true},
		{"bare bool column", "terminated", nil, true},
		{"NOT bare bool column", "NOT terminated", nil, false},
		{"bool false", "truncated = false", nil, true},
		{"bool not equal", "truncated != true", nil, true},
		{"OR", "status = 'incomplete' OR env_index = 1", nil, true},
		{"AND binds tighter than OR", "env_index = 0 AND status = 'incomplete' OR env_index = 1", nil, true},
		{"parentheses", "env_index = 0 AND (status = 'incomplete' OR env_index = 1)", nil, false},
		{"NOT binds tighter than AND", "NOT env_index = 0 AND terminated", nil, true},
		{"double NOT", "NOT NOT terminated", nil, true},
		{"IN", "env_index IN (0, 1, 2)", nil, true},
		{"NOT IN", "status NOT IN ('completed')", nil, false},
		{"IS NULL", "success IS NULL", incomplete, true},
		{"IS NOT NULL", "ended_at IS NOT NULL", nil, true},
		{"null comparison is unknown", "success = true", incomplete, false},
		{"NOT of unknown is unknown", "NOT success = true", incomplete, false},
		{"unknown OR true", "step_count > 10 OR env_index = 1", incomplete, true},
		{"unknown AND false", "NOT (step_count > 10 AND env_index = 0)", incomplete, true},
		{"unknown AND true stays unknown", "NOT (step_count > 10 AND env_index = 1)", incomplete, false},
		{"NULL in IN is unknown", "NOT (step_count IN (1, 2))", incomplete, false},
		{"timestamp RFC 3339", "started_at >= '2026-03-01T12:00:00Z'", nil, true},
		{"timestamp with offset", "started_at = '2026-03-01T13:00:00+01:00'", nil, true},
		{"timestamp space form", "ended_at > '2026-03-01 12:00:00.039999'", nil, true},
		{"timestamp date", "ended_at < '2026-03-02'", nil, true},
		{"session id", "session_id = 'sess-1' AND env_id = 'env-a'", nil, true},
		{"steps file null", "steps_file IS NULL", func(e *dataset.Episode) { e.Row.StepsFile = nil }, true},
		{"blanks and newlines", "\tstatus\n=\r'completed' ", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.filter)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.filter, err)
			}
			if got := f.Match(episode(tc.ep)); got != tc.want {
				t.Errorf("Match(%q) = %v, want %v (canonical %s)", tc.filter, got, tc.want, f)
			}
			// The canonical form parses to a filter that selects the same.
			g, err := Parse(f.String())
			if err != nil {
				t.Fatalf("Parse(canonical %q): %v", f, err)
			}
			if g.String() != f.String() {
				t.Errorf("canonical form is not stable: %q then %q", f, g)
			}
			if got := g.Match(episode(tc.ep)); got != tc.want {
				t.Errorf("canonical %q: Match = %v, want %v", g, got, tc.want)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"keywords upper", "a_ignored = 1", ""},
		{"precedence kept", "status = 'a' or status = 'b' and not terminated", "status = 'a' OR (status = 'b' AND (NOT terminated))"},
		{"left-nested AND", "terminated and truncated and success", "(terminated AND truncated) AND success"},
		{"operators normalised", "env_index <> 1 AND env_index == 2", "env_index != 1 AND env_index = 2"},
		{"numbers normalised", "reward_sum > 1e1 AND step_count = 3.0", "reward_sum > 10.0 AND step_count = 3"},
		{"bool literal", "success = true", "success = TRUE"},
		{"time in UTC", "started_at > '2026-03-01 13:00:00'", "started_at > '2026-03-01T13:00:00Z'"},
		{"in list", "env_index not in (1,2)", "env_index NOT IN (1, 2)"},
		{"quotes doubled", "status = 'it''s'", "status = 'it''s'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %s, want an error", tc.in, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		pos      int
		want     string // in the message
	}{
		{"empty", "", 0, "empty filter"},
		{"blank", "   ", 0, "empty filter"},
		{"unknown column", "colour = 'red'", 0, `unknown column "colour"`},
		{"string column against number", "status = 1", 9, "column status is string"},
		{"number column against string", "step_count > '10'", 13, "column step_count is integer"},
		{"bool column against number", "success = 1", 10, "TRUE or FALSE"},
		{"bool ordering", "success < true", 8, "= or != only"},
		{"equals NULL", "success = NULL", 10, "IS NULL"},
		{"NULL in IN list", "env_index IN (1, NULL)", 17, "use IS NULL"},
		{"bad time", "started_at > 'yesterday'", 13, "is no time"},
		{"time without quotes", "started_at > 2026", 13, "timestamp"},
		{"literal on the left", "10 < step_count", 0, "left of its comparison"},
		{"missing operand", "status = 'completed' AND", 24, "want a column"},
		{"dangling operator", "step_count >", 12, "got end of filter"},
		{"unclosed paren", "(terminated", 11, "want ) to close the ( at byte 0"},
		{"extra paren", "terminated)", 10, "after a complete filter"},
		{"two predicates", "terminated truncated", 11, "join conditions with AND or OR"},
		{"unterminated string", "status = 'done", 9, "unterminated string"},
		{"unterminated ident", `"status = 1`, 0, "unterminated quoted column name"},
		{"bang alone", "! terminated", 0, "'!' must be followed by '='"},
		{"bad character", "status ~ 'x'", 7, `unexpected character '~'`},
		{"number glued to word", "step_count > 10abc", 13, "bad number"},
		{"exponent without digits", "reward_sum > 1e", 13, "bad number"},
		{"non-bool column alone", "status", 6, "want a comparison"},
		{"IS without NULL", "success IS true", 11, "want NULL after IS"},
		{"NOT without IN", "env_index NOT 1", 14, "want IN"},
		{"IN without list", "env_index IN 1", 13, "want ( after IN"},
		{"IN list separator", "env_index IN (1 2)", 16, "want , or )"},
		{"empty IN list", "env_index IN ()", 14, "column env_index is integer"},
		{"too deep", strings.Repeat("(", MaxDepth+1) + "terminated" + strings.Repeat(")", MaxDepth+1), MaxDepth, "nested more than"},
		{"too many NOTs", strings.Repeat("NOT ", MaxDepth+1) + "terminated", 4 * MaxDepth, "nested more than"},
		{"binary column", "final_observation_blob IS NULL", 0, "unknown column"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse(tc.in)
			if err == nil {
				t.Fatalf("Parse(%q) = %s, want an error", tc.in, f)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is no *Error", err)
			}
			if pe.Pos != tc.pos {
				t.Errorf("Pos = %d, want %d (%v)", pe.Pos, tc.pos, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

func TestColumnsCoverEpisodeTable(t *testing.T) {
	// Every non-binary column of the episodes table, and the partition
	// columns, can be named.
	names := map[string]bool{schema.ColSessionID: true, schema.ColEnvID: true}
	for _, f := range schema.EpisodesSchema.Fields() {
		if f.Name() != schema.ColFinalObservationBlob {
			names[f.Name()] = true
		}
	}
	have := map[string]bool{}
	for _, c := range Columns() {
		have[c.Name] = true
		if !names[c.Name] {
			t.Errorf("filter column %s is no episodes column", c.Name)
		}
	}
	for n := range names {
		if !have[n] {
			t.Errorf("episodes column %s cannot be filtered on", n)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"status = 'completed' AND success = true AND step_count > 10",
		"NOT (env_index IN (0, 1) OR truncated) AND cumulative_reward >= -0.5e3",
		"ended_at IS NOT NULL AND started_at >= '2026-03-01T12:00:00Z'",
		`"episode_id" <> 'it''s' OR steps_file IS NULL`,
		"((((terminated))))",
		"reward_sum < 1e999",
	} {
		f.Add(s)
	}
	eps := []*dataset.Episode{episode(nil), episode(incomplete), episode(func(e *dataset.Episode) { e.Row.RewardSum = math.NaN() })}
	f.Fuzz(func(t *testing.T, src string) {
		flt, err := Parse(src)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Pos < 0 || pe.Pos > len(src) {
				t.Fatalf("Parse(%q): error %v has no position within the input", src, err)
			}
			return
		}
		canon := flt.String()
		g, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical form %q of %q does not parse: %v", canon, src, err)
		}
		if g.String() != canon {
			t.Fatalf("canonical form not stable: %q then %q", canon, g)
		}
		for _, e := range eps {
			if flt.Match(e) != g.Match(e) {
				t.Fatalf("%q and its canonical form %q select differently", src, canon)
			}
		}
	})
}
