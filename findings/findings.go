package findings

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// Root is what List needs of a ROOT.
type Root struct {
	// Path is the ROOT as the user named it; the remedies in findings
	// name it.
	Path string
	// Words words the remedies the problems ask for; nil: APIWords.
	Words Words
	// NeedsRecovery: the recorder's log holds records and no recorder
	// holds the lock (see State.NeedsRecovery).
	NeedsRecovery bool
	// RecorderWriting: a recorder holds ROOT's lock.
	RecorderWriting bool
	Recordings      []Recording
	Strays          []dataset.Stray
}

// Recording is what List needs of one recording: its sessions row's
// status and counters, and its episodes counted.
type Recording struct {
	dataset.Recording
	// Status is the sessions row's status (schema.SessionEnded, ...), ""
	// when the recording has no sessions row.
	Status         string
	Reason         *string
	Problems       int64
	ProblemSummary *string
	// EpisodesIncomplete counts its episodes rows whose status is not
	// completed.
	EpisodesIncomplete int64
	// Clock is the sessions row's clock column (schema.ClockEvent, ...),
	// "" when unknown (no row, or a row written before the column).
	Clock string
	// RepeatedCompletions are the record ids of the episodes rlmesh's env
	// server reported complete a second time (capped episodes under
	// disabled autoreset), in the order of the logs table.
	RepeatedCompletions []string
	// UnfinishedActions are the record ids of the episodes whose last
	// action no StepCompleted followed (kept as logs rows, not steps), one
	// per such action and lane, in the order of the logs table.
	UnfinishedActions []string
}

// ReadLogs sets what r's findings take from its logs rows: the repeated
// completions and the unfinished actions kept there (source
// schema.SourceEvent).
func (r *Recording) ReadLogs(logs []schema.LogRow) {
	r.RepeatedCompletions, r.UnfinishedActions = []string{}, []string{}
	for _, l := range logs {
		if l.Source == nil || *l.Source != schema.SourceEvent {
			continue
		}
		if u, err := schema.ParseUnfinishedAction(l.Message); err == nil {
			r.UnfinishedActions = append(r.UnfinishedActions, u.EpisodeRecordID)
			continue
		}
		ev, err := schema.ParseEventLog(r.SessionID, events.RuntimeEnvContext{EnvID: r.EnvID}, l.Message)
		if ec, ok := ev.(*events.EpisodeCompleted); err == nil && ok {
			r.RepeatedCompletions = append(r.RepeatedCompletions, ec.EpisodeRecordID)
		}
	}
}

// Finding is one problem or note.
type Finding struct {
	// Recording is the recording the finding is about, when OfRecording;
	// otherwise the finding is about the whole ROOT (its log, its lock,
	// a stray file).
	Recording   dataset.Recording
	OfRecording bool
	// Text is the sentence shown.
	Text string
}

// String returns f.Text.
func (f Finding) String() string { return f.Text }

// Name names a recording in findings: its env id too, as several
// recordings may share a session id.
func Name(rec dataset.Recording) string {
	return fmt.Sprintf("session %s env %s", rec.SessionID, rec.EnvID)
}

// List returns the problems (what went wrong, each with what to do) and
// the notes (what is as expected but easy to misread) of a ROOT: first
// those of the ROOT's state, then each recording's in the order of
// r.Recordings, then the stray files.
func List(r Root) (problems, notes []Finding) {
	recoverCmd := r.Words.Say(Action{Remedy: Recover, Root: r.Path})
	rootFinding := func(text string) Finding { return Finding{Text: text} }
	switch {
	case r.RecorderWriting:
		problems = append(problems, rootFinding(fmt.Sprintf("a recorder is writing %s now (it holds %s/%s): recordings it has not finished are missing or partial; inspect again once it has closed",
			r.Path, hive.StateDir, hive.LockName)))
	case r.NeedsRecovery:
		problems = append(problems, rootFinding(fmt.Sprintf("the recorder's log %s/%s/%s holds records it never wrote out: a recorder crashed or was killed, so episodes and sessions are missing or unfinished; %s to write them",
			r.Path, hive.StateDir, hive.LogDir, recoverCmd)))
	}
	for i := range r.Recordings {
		s := &r.Recordings[i]
		name := Name(s.Recording)
		of := func(text string) Finding { return Finding{Recording: s.Recording, OfRecording: true, Text: text} }
		if s.Problems > 0 {
			problems = append(problems, of(fmt.Sprintf("%s: %s in its input: %s", name, count(s.Problems, "problem"), deref(s.ProblemSummary))))
		}
		if n := len(s.RepeatedCompletions); n > 0 {
			first := s.RepeatedCompletions[0]
			notes = append(notes, of(fmt.Sprintf("%s: rlmesh's env server reported %s complete a second time (%s first; the repeats are in the logs table, source %s): "+
				"a runtime step or time cap truncated %s under disabled autoreset and the runtime reset the lane while rlmesh's env server still held it, "+
				"so the server reported it as interrupted on the next step, and each later episode of the lane lasted one step, its completion one step late, "+
				"until the env ended one itself; this is rlmesh's behaviour, recorded as it came, and total_episodes counts the repeats",
				name, count(int64(n), "episode"), first, schema.SourceEvent, first)))
		}
		if n := len(s.UnfinishedActions); n > 0 {
			notes = append(notes, of(fmt.Sprintf("%s: %s that no StepCompleted followed (for %s; kept in the logs table, source %s, message ActionReceived): "+
				"the runtime sent %s but the step never completed (the env step failed, or the recording stopped before it completed), so %s no step and %s no steps row",
				name, count(int64(n), "action"), strings.Join(firstFew(s.UnfinishedActions, 3), ", "), schema.SourceEvent,
				pick(n, "it", "them"), pick(n, "it is", "they are"), pick(n, "has", "have"))))
		}
		switch s.Clock {
		case schema.ClockRecorder:
			notes = append(notes, of(fmt.Sprintf("%s: its events came without their time, so its times are the recorder's clock: when the recorder received each event, not when the runtime called the hook (clock %q)",
				name, schema.ClockRecorder)))
		case schema.ClockMixed:
			notes = append(notes, of(fmt.Sprintf("%s: some of its events came without their time and were stamped with the recorder's clock, the rest carry the time of their hook call (clock %q)",
				name, schema.ClockMixed)))
		}
		reason := ""
		if s.Reason != nil && *s.Reason != "" {
			reason = " (" + *s.Reason + ")"
		}
		switch s.Status {
		case schema.SessionEnded:
			// The session reached its episode count: episodes still
			// running on other lanes then are incomplete by design.
			if s.EpisodesIncomplete > 0 {
				notes = append(notes, of(fmt.Sprintf("%s: %s still running when the session reached its episode count %s recorded as incomplete, as expected",
					name, count(s.EpisodesIncomplete, "episode"), isAre(s.EpisodesIncomplete))))
			}
		case schema.SessionFailed:
			problems = append(problems, of(fmt.Sprintf("%s: failed%s, with %s", name, reason, count(s.EpisodesIncomplete, "incomplete episode"))))
		case schema.SessionCrashed, schema.SessionOpen:
			what := "crashed: the recorder stopped before the session ended"
			if s.Status == schema.SessionOpen {
				what = "open: the recorder closed before the session ended"
			}
			if r.NeedsRecovery || r.RecorderWriting {
				problems = append(problems, of(fmt.Sprintf("%s: %s%s, with %s; %s to write out what its log holds, then %s",
					name, what, reason, count(s.EpisodesIncomplete, "incomplete episode"), recoverCmd, r.Words.Say(Action{Remedy: Verify, Root: r.Path}))))
				break
			}
			// The log holds nothing more: recovery has written out all
			// there was, and the incomplete episodes are final.
			notes = append(notes, of(fmt.Sprintf("%s: %s%s; recovered: its %s %s recorded as the log had them",
				name, what, reason, count(s.EpisodesIncomplete, "incomplete episode"), isAre(s.EpisodesIncomplete))))
		default:
			fix := "its recorder may not have closed; " + recoverCmd
			switch {
			case r.RecorderWriting:
				fix = "a recorder is still writing it"
			case !r.NeedsRecovery:
				fix = "its recorder did not close, and the log holds nothing more of it: recovery cannot add its row"
			}
			problems = append(problems, of(fmt.Sprintf("%s: no sessions row (%s)", name, fix)))
		}
	}
	for _, st := range r.Strays {
		problems = append(problems, rootFinding(fmt.Sprintf("stray %s: %s", st.Path, st.Reason)))
	}
	return problems, notes
}

// pick returns one for n == 1 and many otherwise.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// firstFew returns the first n of ids, and "..." after them when there
// are more.
func firstFew(ids []string, n int) []string {
	if len(ids) <= n {
		return ids
	}
	return append(append([]string{}, ids[:n]...), "...")
}

func isAre(n int64) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// count renders "1 episode", "3 episodes".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	if strings.HasSuffix(thing, "ch") || strings.HasSuffix(thing, "s") {
		return strconv.FormatInt(n, 10) + " " + thing + "es"
	}
	return strconv.FormatInt(n, 10) + " " + thing + "s"
}
