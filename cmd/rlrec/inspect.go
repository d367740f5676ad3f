package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"
	"github.com/rlrec/rlrec/schema"
)

// inspectOptions are the inspect command's flags.
type inspectOptions struct {
	logDir    string
	published bool
	session   string
	env       string
	episode   string
	json      bool
}

var inspectFlags inspectOptions

var cmdInspect = &Command{
	Name:      "inspect",
	UsageLine: "inspect ROOT [--session ID] [--env ENV] [--episode RECORD_ID] [--json] [--published] [--log-dir DIR]",
	Short:     "summarise the sessions, episodes, spaces and files of a ROOT",
	Long: `Inspect summarises a ROOT: its tables (files and bytes), its sessions
(status, environment, episodes, steps, reward, dropped steps and the input
problems the recorder counted), and stray files readers skip. With
--session it adds that session's spaces and episodes (length, return,
terminated/truncated/success, status); with --episode as well, only that
episode, with its final info. When standard output is a terminal, each
session shows a sparkline of its episode returns, as wide as the terminal.

Under "problems" it lists what needs doing: input problems, failed,
crashed or open sessions, stray files, and a ROOT whose recorder crashed
(records left in its log under _rlrec/log: run 'rlrec recover ROOT').
Such a ROOT makes inspect, like every command that reads a ROOT (replay,
stats, export, copy), exit 1 after saying so, unless --published: then it
reads what the files hold now. Sessions a recovery has finished are not
said to need it again. Under "notes" it explains what is as expected, such
as the incomplete episodes of a session that ended by reaching its episode
count (episodes still running on other lanes then).

--json prints the same as one JSON object with fixed field names, sorted
sessions and episodes, and null for values the tables hold as null:

  {"root", "needs_recovery", "recorder_writing", "log_dir",
   "store_requests", "store_requests_per_episode",
   "store_requests_recordings",
   "tables": [{"table", "files", "bytes"}],
   "strays": [{"path", "reason"}],
   "sessions": [{"session_id", "status", "reason", "env_id",
     "env_component_id", "model_component_id", "started_at", "ended_at",
     "total_steps", "total_episodes", "episodes_recorded",
     "episodes_completed", "episodes_incomplete", "steps_recorded",
     "dropped_steps", "surplus_steps", "problems", "problem_summary", "clock",
     "repeated_completions", "reward_sum", "mean_return",
     "store_requests", "store_requests_per_episode",
     "spaces": {"observation": [{"path", "space"}], "action": [...]},
     "episodes": [{"episode_record_id", "episode_id", "episode_index",
       "env_index", "status", "started_from_auto_reset", "step_count",
       "steps_recorded", "return", "reward_sum", "terminated",
       "truncated", "success", "success_source", "duration_ms", "started_at",
       "ended_at", "final_info", "seed", "trial_index", "lane", "predict_ms",
       "step_ms"}]}]}

The fields of schema version 3 (rlmesh 0.1) are null for recordings of
version 2: "surplus_steps" counts the lane-steps of surplus episodes (lanes
beyond the max_episodes budget, never started or completed, not recorded);
"success_source" says whether "success" is the runtime's own reading
("runtime") or rlrec's reading of final_info ("final_info"); "seed",
"trial_index" and "lane" are the episode's reset seed, trial ordinal and
route lane (of a lane-served env); "predict_ms" and "step_ms" the
runtime's per-step means over the episode.

"clock" says whose clock the recording's times are: "event" (every event
came with the time of its hook call), "recorder" (none did: the recorder
stamped its own clock, so times say when it received them) or "mixed";
inspect notes the last two. It is null for a sessions file written before
rlrec had the column.

"repeated_completions" lists the episodes rlmesh's env server reported
complete a second time (kept in the logs table, source "rlrec/event"):
after a runtime step or time cap under disabled autoreset, the runtime
resets the lane while the env server still holds the episode, so the
server reports it as interrupted on the next step, and from then on each
episode of the lane lasts one step and completes one step late. This is
rlmesh's behaviour, recorded as it came: inspect explains it under notes.

"store_requests" are the requests a recording written into an s3://
ROOT had sent to the object store when its sessions row was written, as
its sessions file keeps them: its claim, its listings and the puts of
every file before, by kind ("put", "list", "upload_part", ...), with
their "total" and the HTTP "attempts" (retries included); the puts of
the final write itself (the sessions file, the logs and telemetry files
written with it) come after and are not among them.
"store_requests_per_episode" is that total over the recording's
episodes recorded. At the top they are summed over the recordings that
have them ("store_requests_recordings" of them). They are absent, not
zero, for a ROOT directory and for files written before rlrec kept
them; inspect then prints no "object store requests" table.

"needs_recovery" is true when the recorder's log holds records and no
recorder is writing ROOT ("recorder_writing"): run 'rlrec recover ROOT'.
"spaces" and "episodes" are present with --session only; "return" is the
runtime's cumulative_reward, "mean_return" its mean over completed
episodes. "final_info" is the episode's final info as a JSON object (the
final_info column's text parsed). An integer outside +-(2^53-1) is
written as a JSON string of its digits, as readers that parse JSON
numbers as doubles (JavaScript, jq) would round it. A space's "path" is
its leaf path as the typed steps columns spell it: dict keys and tuple
indices joined by ".", a key's own "%" and "." written "%25" and "%2E"
("" for a single-leaf space). Times are RFC 3339 in UTC.

Example:

  rlrec inspect data
  rlrec inspect data --session 0190a1b2-... --episode ep-000003
  rlrec inspect data --json | jq '.sessions[] | {session_id, status}'`,
	SetFlags: func(fs *flag.FlagSet) {
		inspectFlags = inspectOptions{}
		bindInspectFlags(fs, &inspectFlags)
	},
	Run: runInspect,
}

// bindInspectFlags registers the flags with f's current values as
// defaults.
func bindInspectFlags(fs *flag.FlagSet, f *inspectOptions) {
	fs.StringVar(&f.session, "session", f.session, "show the spaces and episodes of the recordings of session `ID`")
	fs.StringVar(&f.env, "env", f.env, "show the spaces and episodes of the recordings of `ENV`: an env id, component id or name (cartpole), of every session or of --session's")
	fs.StringVar(&f.episode, "episode", f.episode, "with --session: show only the episode of record id `RECORD_ID`")
	fs.BoolVar(&f.json, "json", f.json, "print JSON for scripts")
	publishedFlag(fs, &f.published)
	logDirFlag(fs, &f.logDir)
}

// inspectReport is the --json output. Field names are the documented
// contract: do not change them.
type inspectReport struct {
	Root string `json:"root"`
	// NeedsRecovery is set when the recorder's log holds records and no
	// recorder holds the lock: a recorder crashed or was killed.
	NeedsRecovery bool `json:"needs_recovery"`
	// RecorderWriting is set when a recorder holds ROOT's lock.
	RecorderWriting bool `json:"recorder_writing"`
	// LogDir is the local directory of the log and lock of an s3://
	// ROOT (--log-dir, or its default); empty for a ROOT directory,
	// whose are in ROOT/_rlrec.
	LogDir string `json:"log_dir,omitempty"`
	// StoreRequests sums the object store requests of the recordings
	// whose sessions files count them (StoreRequestsRecordings of them);
	// StoreRequestsPerEpisode is its total over their episodes. Absent
	// when no recording has them (inspectreq.go).
	StoreRequests           *store.Requests  `json:"store_requests,omitempty"`
	StoreRequestsPerEpisode *jsonFloat       `json:"store_requests_per_episode,omitempty"`
	StoreRequestsRecordings int              `json:"store_requests_recordings,omitempty"`
	Tables                  []inspectTable   `json:"tables"`
	Strays                  []inspectStray   `json:"strays"`
	Sessions                []inspectSession `json:"sessions"`
}

type inspectTable struct {
	Table string  `json:"table"`
	Files int     `json:"files"`
	Bytes jsonInt `json:"bytes"`
}

type inspectStray struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

type inspectSession struct {
	SessionID          string   `json:"session_id"`
	Status             string   `json:"status"`
	Reason             *string  `json:"reason"`
	EnvID              string   `json:"env_id"`
	EnvComponentID     string   `json:"env_component_id"`
	ModelComponentID   string   `json:"model_component_id"`
	StartedAt          *string  `json:"started_at"`
	EndedAt            *string  `json:"ended_at"`
	TotalSteps         *jsonInt `json:"total_steps"`
	TotalEpisodes      *jsonInt `json:"total_episodes"`
	EpisodesRecorded   jsonInt  `json:"episodes_recorded"`
	EpisodesCompleted  jsonInt  `json:"episodes_completed"`
	EpisodesIncomplete jsonInt  `json:"episodes_incomplete"`
	StepsRecorded      jsonInt  `json:"steps_recorded"`
	DroppedSteps       jsonInt  `json:"dropped_steps"`
	SurplusSteps       *jsonInt `json:"surplus_steps"`
	Problems           jsonInt  `json:"problems"`
	ProblemSummary     *string  `json:"problem_summary"`
	Clock              *string  `json:"clock"`
	// RepeatedCompletions are the record ids of the episodes rlmesh's
	// env server reported complete again (logs rows of source
	// schema.SourceEvent).
	RepeatedCompletions []string `json:"repeated_completions"`
	// UnfinishedActions are the record ids of the episodes whose last
	// action no StepCompleted followed (logs rows of source
	// schema.SourceEvent), one per action and lane.
	UnfinishedActions []string   `json:"unfinished_actions"`
	RewardSum         jsonFloat  `json:"reward_sum"`
	MeanReturn        *jsonFloat `json:"mean_return"`
	// StoreRequests are the recording's object store requests as its
	// sessions file counts them, by kind, "total" and "attempts";
	// StoreRequestsPerEpisode is that total over its episodes recorded.
	// Absent for a recording whose files do not count them.
	StoreRequests           *store.Requests  `json:"store_requests,omitempty"`
	StoreRequestsPerEpisode *jsonFloat       `json:"store_requests_per_episode,omitempty"`
	Spaces                  *inspectSpaces   `json:"spaces,omitempty"`
	Episodes                []inspectEpisode `json:"episodes,omitempty"`

	returns []float64
	// hasRow: the recording has a sessions row (Status is its status).
	hasRow bool
}

type inspectSpaces struct {
	Observation []inspectLeaf `json:"observation"`
	Action      []inspectLeaf `json:"action"`
}

type inspectLeaf struct {
	Path  string `json:"path"`
	Space string `json:"space"`
}

type inspectEpisode struct {
	EpisodeRecordID      string          `json:"episode_record_id"`
	EpisodeID            string          `json:"episode_id"`
	EpisodeIndex         jsonInt         `json:"episode_index"`
	EnvIndex             int32           `json:"env_index"`
	Status               string          `json:"status"`
	StartedFromAutoReset bool            `json:"started_from_auto_reset"`
	StepCount            *jsonInt        `json:"step_count"`
	StepsRecorded        jsonInt         `json:"steps_recorded"`
	Return               *jsonFloat      `json:"return"`
	RewardSum            jsonFloat       `json:"reward_sum"`
	Terminated           bool            `json:"terminated"`
	Truncated            bool            `json:"truncated"`
	Success              *bool           `json:"success"`
	DurationMs           *jsonInt        `json:"duration_ms"`
	StartedAt            string          `json:"started_at"`
	EndedAt              *string         `json:"ended_at"`
	FinalInfo            json.RawMessage `json:"final_info"`
	SuccessSource        *string         `json:"success_source"`
	Seed                 *jsonInt        `json:"seed"`
	TrialIndex           *uint64         `json:"trial_index"`
	Lane                 *jsonInt        `json:"lane"`
	PredictMs            *jsonFloat      `json:"predict_ms"`
	StepMs               *jsonFloat      `json:"step_ms"`

	finalInfoText *string
}

func runInspect(ctx context.Context, env *Env, args []string) error {
	f := inspectFlags
	if len(args) != 1 {
		return usagef("want one ROOT argument, got %d", len(args))
	}
	if f.episode != "" && f.session == "" && f.env == "" {
		return usagef("--episode needs --session or --env")
	}
	if err := checkRoot(args[0]); err != nil {
		return err
	}
	d, err := dataset.Open(args[0])
	if err != nil {
		return err
	}
	defer d.Close()
	rep, err := buildInspect(d, f)
	if err != nil {
		return err
	}
	st := findings.ReadState(args[0])
	if store.IsURL(args[0]) {
		// The log and lock of a bucket's ROOT are on the disk of the
		// machine that records it: this one's, when it is that machine.
		if rep.LogDir, err = stateDir(args[0], f.logDir); err != nil {
			return err
		}
		st = findings.ReadStateDir(rep.LogDir)
	} else if f.logDir != "" {
		return usagef("--log-dir is for an s3:// ROOT; the ROOT directory %s keeps its log in %s", args[0], filepath.Join(args[0], hive.StateDir))
	}
	rep.NeedsRecovery, rep.RecorderWriting = st.NeedsRecovery(), st.Writing
	if f.json {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write output: %w", err)
		}
	} else if err := printInspect(env.Stdout, rep, f, inspectDisplay{sparklines: env.StdoutTerminal, width: env.Width}); err != nil {
		// Sparklines are for a person at the terminal that stdout is:
		// not for a file or a pipe, whatever stderr is.
		return err
	}
	// The report shows what the files hold; the exit status says they
	// lack what recovery would add, as every read command does.
	return checkRecovered(args[0], f.published)
}

func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func fmtTimePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := fmtTime(*t)
	return &s
}

// inProgressTemp is what inspect says of a part's temp file while a
// recorder writes ROOT.
const inProgressTemp = "temp file of a write in progress (a recorder is writing ROOT; it is renamed into place or removed when the write ends)"

func buildInspect(d *dataset.Dataset, f inspectOptions) (*inspectReport, error) {
	rep := &inspectReport{Root: d.Root(), Tables: []inspectTable{}, Strays: []inspectStray{}, Sessions: []inspectSession{}}
	for _, t := range dataset.Tables {
		it := inspectTable{Table: t}
		for _, file := range d.Files(t) {
			it.Files++
			it.Bytes += jsonInt(file.Size)
		}
		rep.Tables = append(rep.Tables, it)
	}
	// While a recorder writes ROOT (it holds the lock), a part's temp
	// file is a write in progress, not one a crash left unfinished.
	writing := findings.ReadState(d.Root()).Writing
	for _, s := range d.Strays() {
		reason := s.Reason
		if s.Temp && writing {
			reason = inProgressTemp
		}
		rep.Strays = append(rep.Strays, inspectStray{Path: s.Path, Reason: reason})
	}
	rep.Strays = append(rep.Strays, unpublishedClaims(d.Root())...)
	// --session or --env shows the spaces and episodes of what they
	// select: every recording, or the one --episode is of.
	detail := f.session != "" || f.env != ""
	recs := d.Recordings()
	if f.episode != "" {
		rec, err := lookupRecording(d, selectBy(f.session, f.env))
		if err != nil {
			return nil, err
		}
		recs = []dataset.Recording{rec}
	} else if detail {
		var err error
		if recs, err = selectRecordings(d, selectBy(f.session, f.env)); err != nil {
			return nil, err
		}
	}
	for _, rec := range recs {
		s, err := d.Session(rec)
		if err != nil {
			return nil, err
		}
		id := rec.SessionID
		is := inspectSession{SessionID: id, EnvID: rec.EnvID, Status: "(no session row)"}
		if row := s.Row(); row != nil {
			is.hasRow = true
			is.Status, is.Reason = row.Status, row.Reason
			is.EnvComponentID, is.ModelComponentID = row.EnvComponentID, row.ModelComponentID
			st := fmtTime(row.StartedAt)
			is.StartedAt, is.EndedAt = &st, fmtTimePtr(row.EndedAt)
			is.TotalSteps, is.TotalEpisodes = (*jsonInt)(row.TotalSteps), (*jsonInt)(row.TotalEpisodes)
			is.EpisodesRecorded, is.StepsRecorded, is.DroppedSteps = jsonInt(row.EpisodesRecorded), jsonInt(row.StepsRecorded), jsonInt(row.DroppedSteps)
			is.SurplusSteps = (*jsonInt)(row.SurplusSteps)
			is.Problems, is.ProblemSummary = jsonInt(row.Problems), row.ProblemSummary
			if clock := row.Clock; clock != "" { // "": written before the column
				is.Clock = &clock
			}
			is.StoreRequests, is.StoreRequestsPerEpisode = requestsOf(s.StoreRequests, row.EpisodesRecorded)
		}
		logs, err := d.Logs(rec)
		if err != nil {
			return nil, err
		}
		var fr findings.Recording
		fr.Recording = rec
		fr.ReadLogs(logs)
		is.RepeatedCompletions, is.UnfinishedActions = fr.RepeatedCompletions, fr.UnfinishedActions
		eps, err := d.Episodes(rec)
		if err != nil {
			return nil, err
		}
		var sum float64
		var n int
		for _, e := range eps {
			r := &e.Row
			is.RewardSum += jsonFloat(r.RewardSum)
			if r.Status == schema.EpisodeCompleted {
				is.EpisodesCompleted++
			} else {
				is.EpisodesIncomplete++
			}
			if r.CumulativeReward != nil {
				sum += *r.CumulativeReward
				n++
				is.returns = append(is.returns, *r.CumulativeReward)
			}
			if !detail || f.episode != "" && e.EpisodeRecordID != f.episode {
				continue
			}
			is.Episodes = append(is.Episodes, inspectEpisode{
				EpisodeRecordID: e.EpisodeRecordID, EpisodeID: r.EpisodeID, EpisodeIndex: jsonInt(r.EpisodeIndex), EnvIndex: r.EnvIndex,
				Status: r.Status, StartedFromAutoReset: r.StartedFromAutoReset, StepCount: (*jsonInt)(r.StepCount), StepsRecorded: jsonInt(r.StepsRecorded),
				Return: (*jsonFloat)(r.CumulativeReward), RewardSum: jsonFloat(r.RewardSum), Terminated: r.Terminated, Truncated: r.Truncated,
				Success: r.Success, DurationMs: (*jsonInt)(r.DurationMs), StartedAt: fmtTime(r.StartedAt), EndedAt: fmtTimePtr(r.EndedAt),
				FinalInfo: finalInfoJSON(r.FinalInfo), finalInfoText: r.FinalInfo,
				SuccessSource: r.SuccessSource, Seed: (*jsonInt)(r.Seed), TrialIndex: r.TrialIndex, Lane: (*jsonInt)(r.Lane),
				PredictMs: (*jsonFloat)(r.PredictMs), StepMs: (*jsonFloat)(r.StepMs),
			})
		}
		if n > 0 {
			m := jsonFloat(sum / float64(n))
			is.MeanReturn = &m
		}
		if f.episode != "" && len(is.Episodes) == 0 {
			return nil, fmt.Errorf("%s has no episode %q in %s; run 'rlrec inspect %s --session %s --env %s' for the list",
				rec, f.episode, d.Root(), d.Root(), shellWord(id), shellWord(rec.EnvID))
		}
		if detail {
			sp, err := d.SessionSpaces(rec)
			if err != nil {
				return nil, err
			}
			is.Spaces = &inspectSpaces{Observation: leavesOf(sp.Observation), Action: leavesOf(sp.Action)}
			if is.Episodes == nil {
				is.Episodes = []inspectEpisode{}
			}
		}
		rep.Sessions = append(rep.Sessions, is)
	}
	sumRequests(rep)
	return rep, nil
}

func leavesOf(l *schema.Layout) []inspectLeaf {
	out := []inspectLeaf{}
	if l == nil {
		return out
	}
	for _, lf := range l.Leaves {
		out = append(out, inspectLeaf{Path: lf.Path, Space: lf.String()})
	}
	return out
}

// inspectDisplay is what printInspect knows of the screen.
type inspectDisplay struct {
	// sparklines draws each session's returns; only on a terminal.
	sparklines bool
	// width is the terminal's width in columns (0: unknown, taken as 80).
	width int
}

func printInspect(w io.Writer, rep *inspectReport, f inspectOptions, disp inspectDisplay) error {
	fmt.Fprintf(w, "ROOT %s\n", rep.Root)
	if rep.LogDir != "" {
		fmt.Fprintf(w, "log and lock on this machine: %s\n", rep.LogDir)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "TABLE\tFILES\tBYTES\n")
	for _, t := range rep.Tables {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", t.Table, t.Files, humanBytes(int64(t.Bytes)))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n")
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SESSION\tSTATUS\tENV\tNAME\tEPISODES\tINCOMPLETE\tSTEPS\tDROPPED\tREWARD\tMEAN RETURN\tPROBLEMS\n")
	for _, s := range rep.Sessions {
		mean := "-"
		if s.MeanReturn != nil {
			mean = fmtFloat(float64(*s.MeanReturn))
		}
		name := "-"
		if s.EnvComponentID != "" {
			name = componentName(s.EnvComponentID)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%d\n", s.SessionID, s.Status, s.EnvID, name,
			s.EpisodesRecorded, s.EpisodesIncomplete, s.StepsRecorded, s.DroppedSteps, fmtFloat(float64(s.RewardSum)), mean, s.Problems)
	}
	tw.Flush()
	printRequests(w, rep)
	if disp.sparklines {
		width := disp.width
		if width <= 0 {
			width = 80
		}
		fmt.Fprintf(w, "\nreturns per episode:\n")
		for _, s := range rep.Sessions {
			fmt.Fprintf(w, "  %s\n    %s\n", findings.Name(dataset.Recording{SessionID: s.SessionID, EnvID: s.EnvID}), sparkline(s.returns, width-4))
		}
	}
	problems, notes := inspectFindings(rep)
	if len(problems) > 0 {
		fmt.Fprintf(w, "\nproblems:\n")
		for _, p := range problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nnotes:\n")
		for _, n := range notes {
			fmt.Fprintf(w, "  %s\n", n)
		}
	}
	if f.session == "" && f.env == "" {
		return nil
	}
	for _, s := range rep.Sessions {
		printRecordingDetail(w, f, s, len(rep.Sessions) > 1)
	}
	return nil
}

// printRecordingDetail prints one recording's spaces and episodes (and
// --episode's times and final info), headed by its ids when inspect
// shows several.
func printRecordingDetail(w io.Writer, f inspectOptions, s inspectSession, several bool) {
	if several {
		fmt.Fprintf(w, "\nrecording session %s env %s (%s):", s.SessionID, s.EnvID, s.EnvComponentID)
	}
	fmt.Fprintf(w, "\nspaces of session %s:\n", s.SessionID)
	printSpace(w, "observation", s.Spaces.Observation)
	printSpace(w, "action", s.Spaces.Action)
	fmt.Fprintf(w, "\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "EPISODE\tLANE\tSTATUS\tLENGTH\tRETURN\tTERMINATED\tTRUNCATED\tSUCCESS\tAUTO-RESET\n")
	for _, e := range s.Episodes {
		ret := "-"
		if e.Return != nil {
			ret = fmtFloat(float64(*e.Return))
		}
		success := "-"
		if e.Success != nil {
			success = fmt.Sprint(*e.Success)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%t\t%t\t%s\t%t\n", e.EpisodeRecordID, e.EnvIndex, e.Status, e.StepsRecorded, ret,
			e.Terminated, e.Truncated, success, e.StartedFromAutoReset)
	}
	tw.Flush()
	if f.episode != "" {
		e := s.Episodes[0]
		fmt.Fprintf(w, "\nepisode %s (%s): started %s", e.EpisodeRecordID, e.EpisodeID, e.StartedAt)
		if e.EndedAt != nil {
			fmt.Fprintf(w, ", ended %s", *e.EndedAt)
		}
		if e.DurationMs != nil {
			fmt.Fprintf(w, ", %d ms", *e.DurationMs)
		}
		fmt.Fprintf(w, "\n  final info: %s\n", derefStrOr(e.finalInfoText, "(none)"))
	}
}

// inspectFindings returns what inspect lists under "problems" (what went
// wrong, each with what to do) and under "notes" (what is as expected but
// easy to misread): package findings, which rlrec report shows too.
func inspectFindings(rep *inspectReport) (problems, notes []string) {
	root := findings.Root{Path: rep.Root, Words: cliWords, NeedsRecovery: rep.NeedsRecovery, RecorderWriting: rep.RecorderWriting}
	for i := range rep.Sessions {
		s := &rep.Sessions[i]
		fr := findings.Recording{
			Recording: dataset.Recording{SessionID: s.SessionID, EnvID: s.EnvID},
			Reason:    s.Reason, Problems: int64(s.Problems), ProblemSummary: s.ProblemSummary,
			EpisodesIncomplete: int64(s.EpisodesIncomplete),
			Clock:              derefStr(s.Clock), RepeatedCompletions: s.RepeatedCompletions,
			UnfinishedActions: s.UnfinishedActions,
		}
		if s.hasRow {
			fr.Status = s.Status
		}
		root.Recordings = append(root.Recordings, fr)
	}
	for _, st := range rep.Strays {
		root.Strays = append(root.Strays, dataset.Stray{Path: st.Path, Reason: st.Reason})
	}
	p, n := findings.List(root)
	for _, f := range p {
		problems = append(problems, f.Text)
	}
	for _, f := range n {
		notes = append(notes, f.Text)
	}
	return problems, notes
}

// printSpace prints a space's leaves as a tree: "image: Box(84,84,3) uint8"
// under its dict keys and tuple indices. Keys are shown by their real
// names (a leaf path's "%2E" and "%25" are "." and "%"), quoted when they
// hold a character that would break the layout.
func printSpace(w io.Writer, side string, leaves []inspectLeaf) {
	if len(leaves) == 0 {
		fmt.Fprintf(w, "  %s: (none recorded)\n", side)
		return
	}
	if len(leaves) == 1 && leaves[0].Path == "" {
		fmt.Fprintf(w, "  %s: %s\n", side, leaves[0].Space)
		return
	}
	fmt.Fprintf(w, "  %s:\n", side)
	var prev []string
	for _, l := range leaves {
		parts, err := schema.SplitPath(l.Path)
		if err != nil || len(parts) == 0 {
			// Not a path Compile writes; show it whole.
			parts = []string{l.Path}
		}
		for i, p := range parts {
			parts[i] = treeKey(p)
		}
		common := 0
		for common < len(prev)-1 && common < len(parts)-1 && prev[common] == parts[common] {
			common++
		}
		for i := common; i < len(parts)-1; i++ {
			fmt.Fprintf(w, "  %s  %s:\n", strings.Repeat("  ", i), parts[i])
		}
		fmt.Fprintf(w, "  %s  %s: %s\n", strings.Repeat("  ", len(parts)-1), parts[len(parts)-1], l.Space)
		prev = parts
	}
}

// treeKey renders one path segment for the space tree: as is, or quoted
// when it is empty, has leading or trailing spaces, or holds a character
// that is not printable (a newline, say).
func treeKey(seg string) string {
	if seg == "" || strings.TrimSpace(seg) != seg || strings.IndexFunc(seg, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return strconv.Quote(seg)
	}
	return seg
}

func derefStr(s *string) string { return derefStrOr(s, "") }

func derefStrOr(s *string, or string) string {
	if s == nil {
		return or
	}
	return *s
}

func fmtFloat(f float64) string { return fmt.Sprintf("%.4g", f) }

func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}

// sparkline renders values as block characters, averaged into buckets so
// that the line, with the min and max of the values after it, fits in
// width columns.
func sparkline(vals []float64, width int) string {
	if len(vals) == 0 {
		return "(no returns)"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vals {
		lo, hi = min(lo, v), max(hi, v)
	}
	suffix := fmt.Sprintf("  min %s max %s", fmtFloat(lo), fmtFloat(hi))
	n := max(width-utf8.RuneCountInString(suffix), 8)
	buckets := vals
	if len(vals) > n {
		buckets = make([]float64, n)
		for i := range buckets {
			lo, hi := i*len(vals)/n, (i+1)*len(vals)/n
			var s float64
			for _, v := range vals[lo:hi] {
				s += v
			}
			buckets[i] = s / float64(hi-lo)
		}
	}
	blo, bhi := math.Inf(1), math.Inf(-1)
	for _, v := range buckets {
		blo, bhi = min(blo, v), max(bhi, v)
	}
	runes := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range buckets {
		i := 0
		if bhi > blo {
			i = int((v - blo) / (bhi - blo) * float64(len(runes)-1))
		}
		b.WriteRune(runes[i])
	}
	return b.String() + suffix
}

// unpublishedClaims lists, for a bucket's ROOT, each recording claimed
// with nothing published (store.UnpublishedClaims) as a stray: a claim
// that may block the recording for good (see release-claim).
func unpublishedClaims(root string) []inspectStray {
	if !store.IsURL(root) {
		return nil
	}
	rd, err := store.OpenReader(context.Background(), root)
	if err != nil {
		return []inspectStray{{Path: root, Reason: "cannot read the recordings' claims: " + err.Error()}}
	}
	l, err := rd.List()
	if err != nil {
		return []inspectStray{{Path: root, Reason: "cannot read the recordings' claims: " + err.Error()}}
	}
	claims, err := store.UnpublishedClaims(rd, l)
	if err != nil {
		return []inspectStray{{Path: root, Reason: "cannot read the recordings' claims: " + err.Error()}}
	}
	var out []inspectStray
	for _, c := range claims {
		out = append(out, inspectStray{Path: rd.Path(c.Rel), Reason: fmt.Sprintf(
			"claim of session %q env %q by writer %s with nothing published: a writer is recording it, or one stopped before its first publish; if no writer is and its log directory is lost, release it with 'rlrec release-claim --session %q --env %q %s'",
			c.SessionID, c.EnvID, c.Writer, c.SessionID, c.EnvID, root)})
	}
	return out
}
