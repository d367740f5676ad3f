package verify

import (
	"fmt"
	"math"
	"path"
	"sort"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// rewardTolerance is the relative tolerance of reward_sum against the sum
// of the rewards of its steps.
const rewardTolerance = 1e-9

// recording gathers the summaries of one recording's files, found by the
// ids in their metadata.
type recording struct {
	hive.Recording
	// steps holds each episode's rows, by episode record id, in listing
	// order.
	steps map[string][]*stepsSum
	// stepsUnread names the episode partitions with a steps file that
	// could not be read; allStepsUnread is set when a steps file of a
	// recording partition (layout "session") could not be read, whose
	// episodes are unknown.
	stepsUnread    map[string]bool
	allStepsUnread bool
	episodes       []*episodeSum
	episodesUnread bool
	sessions       []*sessionSum
	sessionsUnread bool
	// logRows and teleRows count the rows of its logs and telemetry
	// files; logsUnread is set when one of them could not be read.
	logRows, teleRows int64
	logsUnread        bool
	// episodesDir is the recording's episodes partition directory as it
	// is on disk ("" without episodes files).
	episodesDir string
}

// name renders the recording for messages.
func (r *recording) name() string {
	return fmt.Sprintf("recording session %s env %s", quote(r.SessionID), quote(r.EnvID))
}

// resolve sets the recording and episode record id of every file: those
// its metadata names; else, for a file without them, those of the files
// beside it whose metadata names their directories (this resolves a cut
// partition name); else those the path decodes to.
func (v *verifier) resolve() {
	byRec := map[string]hive.Recording{}
	byEpisode := map[string]string{}
	for _, s := range v.sums {
		if !s.placed {
			continue
		}
		byRec[s.f.recordingDirs()] = s.meta.Recording
		if s.f.Episode {
			byEpisode[path.Dir(s.f.Rel)] = s.meta.EpisodeRecordID
		}
	}
	for _, s := range v.sums {
		s.rec = s.f.Recording
		if r, ok := byRec[s.f.recordingDirs()]; ok {
			s.rec = r
		}
		if s.has[0] {
			s.rec.SessionID = s.meta.SessionID
		}
		if s.has[1] {
			s.rec.EnvID = s.meta.EnvID
		}
		if !s.f.Episode {
			continue
		}
		s.rid = s.f.EpisodeRecordID
		if rid, ok := byEpisode[path.Dir(s.f.Rel)]; ok {
			s.rid = rid
		}
		if s.has[2] {
			s.rid = s.meta.EpisodeRecordID
		}
		for _, run := range s.steps {
			run.erid = s.rid
		}
	}
}

// crossCheck runs the checks that span files, per recording: the steps of
// an episode as one sequence, episodes rows against their steps, the
// sessions row against the episodes and steps; then the layout of the
// ROOT.
func (v *verifier) crossCheck() {
	v.resolve()
	listed := make(map[string]*fileSum, len(v.sums))
	recs := map[hive.Recording]*recording{}
	get := func(rec hive.Recording) *recording {
		r := recs[rec]
		if r == nil {
			r = &recording{Recording: rec, steps: map[string][]*stepsSum{}, stepsUnread: map[string]bool{}}
			recs[rec] = r
		}
		return r
	}
	for _, s := range v.sums {
		listed[s.f.Rel] = s
		switch s.f.Table {
		case schema.TableSteps:
			r := get(s.rec)
			if !s.read {
				if s.f.Episode {
					r.stepsUnread[s.rid] = true
				} else {
					r.allStepsUnread = true
				}
				continue
			}
			for _, run := range s.steps {
				r.steps[run.erid] = append(r.steps[run.erid], run)
			}
		case schema.TableEpisodes:
			r := get(s.rec)
			if r.episodesDir == "" || s.placed {
				r.episodesDir = path.Dir(s.f.Rel)
			}
			if !s.read {
				r.episodesUnread = true
				continue
			}
			r.episodes = append(r.episodes, s.episode)
		case schema.TableSessions:
			r := get(s.rec)
			if !s.read {
				r.sessionsUnread = true
				continue
			}
			r.sessions = append(r.sessions, s.session)
		case schema.TableLogs, schema.TableTelemetry:
			r := get(s.rec)
			switch {
			case !s.read:
				r.logsUnread = true
			case s.f.Table == schema.TableLogs:
				r.logRows += s.rows
			default:
				r.teleRows += s.rows
			}
		}
	}
	keys := make([]hive.Recording, 0, len(recs))
	for k := range recs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Less(keys[j]) })
	for _, k := range keys {
		v.checkRecording(recs[k], listed)
	}
	v.checkLayouts()
}

// checkRecording runs the cross-file checks of one recording.
func (v *verifier) checkRecording(r *recording, listed map[string]*fileSum) {
	erids := make([]string, 0, len(r.steps))
	for erid := range r.steps {
		erids = append(erids, erid)
	}
	sort.Strings(erids)
	joined := make(map[string]*stepsSum, len(erids))
	var steps int64
	for _, erid := range erids {
		if r.allStepsUnread || r.stepsUnread[erid] {
			continue
		}
		st := v.joinSteps(r.steps[erid])
		joined[erid] = &st
		steps += st.rows
	}

	type place struct {
		rel string
		row int64
	}
	seen := map[string]place{}
	var episodes int64
	for _, e := range r.episodes {
		for i := range e.rows {
			row := &e.rows[i]
			episodes++
			if first, dup := seen[row.recordID]; dup {
				v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: row.row,
					Message: fmt.Sprintf("episode_record_id %s already has an episodes row (%s row %d): an episode has one", quote(row.recordID), first.rel, first.row),
					Fix:     "the episode was written twice or the file was copied in; move the part file holding the duplicate out of ROOT if it holds nothing else"})
				continue
			}
			seen[row.recordID] = place{e.rel, row.row}
			if r.allStepsUnread || r.stepsUnread[row.recordID] {
				continue // a steps file was reported unreadable
			}
			v.episodeAgrees(r, e, row, joined[row.recordID], listed)
		}
	}

	if !r.episodesUnread {
		for _, erid := range erids {
			if _, ok := seen[erid]; ok {
				continue
			}
			var rows int64
			for _, run := range r.steps[erid] {
				rows += run.rows
			}
			if rows == 0 {
				continue
			}
			first := r.steps[erid][0]
			p := Problem{Check: CheckEpisode, Path: path.Dir(first.rel), Row: -1,
				Message: "steps without an episodes row (the episode's commit point): the episode was not finished",
				Remedy:  findings.Recover, Fix: " if the log holds records; otherwise the episode is not part of the dataset"}
			if s := listed[first.rel]; s == nil || !s.f.Episode {
				p.Path, p.Row = first.rel, first.row0
				p.Message = fmt.Sprintf("steps of episode_record_id %s without an episodes row (the episode's commit point): the episode was not finished", quote(erid))
			}
			v.problems = append(v.problems, p)
		}
	}

	if len(r.sessions) == 0 {
		if !r.sessionsUnread && episodes > 0 {
			v.problems = append(v.problems, Problem{Check: CheckSession, Path: r.episodesDir, Row: -1,
				Message: fmt.Sprintf("%s has %d episodes but no sessions row (written when the session ends)", r.name(), episodes),
				Remedy:  findings.Recover, Fix: " if the log holds records; otherwise the session did not end while recorded"})
		}
		return
	}
	v.checkLogRows(r)
	if r.allStepsUnread || len(r.stepsUnread) > 0 || r.episodesUnread {
		return // a file was reported unreadable: the totals are unknown
	}
	var eps, st int64
	for _, s := range r.sessions {
		for _, row := range s.rows {
			eps += row.episodesRecorded
			st += row.stepsRecorded
		}
	}
	if eps != episodes || st != steps {
		v.problems = append(v.problems, Problem{Check: CheckSession, Path: r.sessions[0].rel, Row: 0,
			Message: fmt.Sprintf("episodes_recorded %d and steps_recorded %d, but the recording's files hold %d episodes and %d steps",
				eps, st, episodes, steps),
			Remedy: findings.Recover, Fix: " if the log holds records; otherwise episode or steps files are missing or extra: restore them from a copy"})
	}
}

// checkLogRows checks that the logs and telemetry files hold at least the
// rows the sessions file counts (late rows may follow it): a missing part
// file is seen.
func (v *verifier) checkLogRows(r *recording) {
	if r.logsUnread {
		return
	}
	for _, s := range r.sessions {
		for _, c := range []struct {
			table       string
			want, found int64
		}{{schema.TableLogs, s.logRows, r.logRows}, {schema.TableTelemetry, s.teleRows, r.teleRows}} {
			if c.want >= 0 && c.found < c.want {
				v.problems = append(v.problems, Problem{Check: CheckSession, Path: s.rel, Row: -1,
					Message: fmt.Sprintf("the sessions file counts %d %s rows of %s, but its %s files hold %d", c.want, c.table, r.name(), c.table, c.found),
					Fix:     "a " + c.table + " part file is missing: restore it from a copy"})
			}
		}
	}
}

// joinSteps joins an episode's rows from its steps files into one
// sequence and checks it.
func (v *verifier) joinSteps(runs []*stepsSum) stepsSum {
	var all stepsSum
	runs = append([]*stepsSum(nil), runs...)
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].firstStep < runs[j].firstStep })
	next := int64(0)
	for i, f := range runs {
		if f.rows == 0 {
			continue
		}
		if f.firstStep != next {
			v.problems = append(v.problems, Problem{Check: CheckSteps, Path: f.rel, Row: f.row0,
				Message: fmt.Sprintf("starts at step %d where step %d was expected: steps are missing or repeated", f.firstStep, next),
				Remedy:  findings.Recover, Fix: fixDamaged})
		}
		next = f.lastStep + 1
		if f.isLast > 0 && i != len(runs)-1 {
			v.problems = append(v.problems, Problem{Check: CheckSteps, Path: f.rel, Row: f.row0 + f.rows - 1,
				Message: "is_last is set but later steps of the episode follow in another part file", Remedy: findings.Recover, Fix: fixDamaged})
		}
		if i == 0 {
			all.episodeID, all.episodeIndex, all.envIndex = f.episodeID, f.episodeIndex, f.envIndex
		}
		all.rows += f.rows
		all.isFirst += f.isFirst
		all.isLast += f.isLast
		all.rewardSum += f.rewardSum
		all.lastIsLast, all.lastTerminated, all.lastTruncated = f.lastIsLast, f.lastTerminated, f.lastTruncated
		all.obsSpace, all.actSpace, all.rel, all.erid = f.obsSpace, f.actSpace, f.rel, f.erid
	}
	if all.rows > 0 && all.isFirst != 1 {
		v.problems = append(v.problems, Problem{Check: CheckSteps, Path: all.rel, Row: -1,
			Message: fmt.Sprintf("the episode's steps have %d rows with is_first; exactly one (step 0) is", all.isFirst), Remedy: findings.Recover, Fix: fixDamaged})
	}
	if all.isLast > 1 {
		v.problems = append(v.problems, Problem{Check: CheckSteps, Path: all.rel, Row: -1,
			Message: fmt.Sprintf("the episode's steps have %d rows with is_last; at most one (the last) is", all.isLast), Remedy: findings.Recover, Fix: fixDamaged})
	}
	return all
}

// fixDisagree is the advice for an episodes row its steps contradict.
const fixDisagree = "the episodes row and its steps files disagree: one of them is damaged or a steps file is missing; re-record the episode or restore both from a copy"

// episodeAgrees checks an episodes row against its steps (st, nil when
// the recording holds none for it) and its steps_file.
func (v *verifier) episodeAgrees(r *recording, e *episodeSum, row *episodeRec, st *stepsSum, listed map[string]*fileSum) {
	if st == nil {
		st = &stepsSum{}
	}
	bad := func(format string, args ...any) {
		v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: row.row, Message: fmt.Sprintf(format, args...), Fix: fixDisagree})
	}
	if row.stepsRecorded != st.rows {
		bad("steps_recorded is %d but the steps files hold %d rows", row.stepsRecorded, st.rows)
	}
	if d := math.Abs(row.rewardSum - st.rewardSum); d > rewardTolerance*max(1, math.Abs(st.rewardSum)) {
		bad("reward_sum is %g but the rewards of its steps sum to %g", row.rewardSum, st.rewardSum)
	}
	if st.rows > 0 {
		if row.episodeID != st.episodeID || row.episodeIndex != st.episodeIndex || row.envIndex != st.envIndex {
			bad("episode_id/episode_index/env_index %q/%d/%d, its steps %q/%d/%d", row.episodeID, row.episodeIndex, row.envIndex,
				st.episodeID, st.episodeIndex, st.envIndex)
		}
		if e.obsSpace != st.obsSpace || e.actSpace != st.actSpace {
			v.problems = append(v.problems, Problem{Check: CheckPartition, Path: e.rel, Row: row.row,
				Message: "the episodes file and the episode's steps files store different spaces", Fix: fixForeign})
		}
	}
	if row.status == schema.EpisodeCompleted && st.rows > 0 {
		if !st.lastIsLast {
			bad("the episode is completed but its last step does not have is_last set")
		}
		if row.terminated != st.lastTerminated || row.truncated != st.lastTruncated {
			bad("terminated/truncated are %t/%t but its last step's are %t/%t", row.terminated, row.truncated, st.lastTerminated, st.lastTruncated)
		}
	}
	v.stepsFile(r, e, row, st, listed)
}

// stepsFile checks an episodes row's steps_file: a steps part file of the
// ROOT, of the episode's recording (and in layout "episode" of its
// partition), that holds steps_recorded rows of the episode.
func (v *verifier) stepsFile(r *recording, e *episodeSum, row *episodeRec, st *stepsSum, listed map[string]*fileSum) {
	bad := func(fix, format string, args ...any) {
		v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: row.row, Message: fmt.Sprintf(format, args...), Fix: fix})
	}
	if row.stepsFile == nil {
		if row.stepsRecorded > 0 {
			bad(fixForeign, "steps_file is null but steps_recorded is %d: the row does not say which file holds its steps", row.stepsRecorded)
		}
		return
	}
	rel := *row.stepsFile
	s := listed[rel]
	switch {
	case s == nil:
		v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: row.row,
			Message: fmt.Sprintf("steps_file %q is not a part file of ROOT", rel),
			Remedy:  findings.Recover, Fix: " if the log holds records; otherwise the episode's steps file is missing: move it back or restore it from a copy"})
		return
	case s.f.Table != schema.TableSteps || s.rec != r.Recording || (s.f.Episode && s.rid != row.recordID):
		bad(fixDisagree, "steps_file %q is not a steps file of this episode (episode_record_id %s of the %s)", rel, quote(row.recordID), r.name())
		return
	case !s.read:
		return // reported
	}
	var n int64
	for _, run := range s.steps {
		if run.erid == row.recordID {
			n += run.rows
		}
	}
	if n != row.stepsRecorded && st.rows == row.stepsRecorded {
		bad(fixDisagree, "steps_file %q holds %d rows of the episode, steps_recorded is %d: an episode's rows are in one file", rel, n, row.stepsRecorded)
	}
}

// checkLayouts checks that the files of ROOT name one steps layout.
func (v *verifier) checkLayouts() {
	count := map[hive.Layout]int{}
	for _, s := range v.sums {
		if s.layout != "" {
			count[s.layout]++
		}
	}
	if len(count) < 2 {
		return
	}
	root := hive.LayoutEpisode
	if count[hive.LayoutSession] > count[hive.LayoutEpisode] {
		root = hive.LayoutSession
	}
	for _, s := range v.sums {
		if s.layout != "" && s.layout != root {
			v.problems = append(v.problems, Problem{Check: CheckMetadata, Path: s.f.Rel, Row: -1,
				Message: fmt.Sprintf("%s is %q, but most files of ROOT say %q: a ROOT has one steps layout", schema.MetaLayout, s.layout, root),
				Fix:     fixForeign})
		}
	}
}
