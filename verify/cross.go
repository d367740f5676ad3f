package verify

import (
	"fmt"
	"math"
	"path"
	"sort"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/schema"
)

// rewardTolerance is the relative tolerance of reward_sum against the sum
// of the rewards of its steps.
const rewardTolerance = 1e-9

// crossCheck runs the checks that span files: steps of a partition as one
// sequence, episodes against their steps, sessions against their episodes.
func (v *verifier) crossCheck() {
	type sessionTotals struct {
		episodes, steps int64
		ok              bool
		rel             string
	}
	totals := map[string]*sessionTotals{}
	keys := make([][2]string, 0, len(v.steps)+len(v.episodes))
	seen := map[[2]string]bool{}
	for k := range v.steps {
		keys, seen[k] = append(keys, k), true
	}
	for k := range v.episodes {
		if !seen[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || (keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1])
	})
	for _, k := range keys {
		t := totals[k[0]]
		if t == nil {
			t = &sessionTotals{ok: true, rel: path.Join(schema.TableEpisodes, hive.Segment(schema.ColSessionID, k[0]))}
			totals[k[0]] = t
		}
		st, stepsOK := v.partitionSteps(k, v.steps[k])
		eps := v.episodes[k]
		if !stepsOK || !v.allRead(k, eps) {
			t.ok = false
			continue
		}
		t.steps += st.rows
		var rows int
		for _, e := range eps {
			rows += len(e.rows)
		}
		t.episodes += int64(rows)
		if st.rows > 0 && rows == 0 {
			rel := path.Join(schema.TableSteps, hive.Segment(schema.ColSessionID, k[0]), hive.Segment(schema.ColEpisodeRecordID, k[1]))
			v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: rel, Row: -1,
				Message: "steps without an episodes row (the episode's commit point): the episode was not finished",
				Fix:     "run 'rlrec recover ROOT' if the log holds records; otherwise the episode is not part of the dataset"})
			continue
		}
		if rows == 0 {
			continue
		}
		e := eps[0]
		if rows > 1 {
			v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: -1,
				Message: fmt.Sprintf("the partition has %d episodes rows; an episode has one", rows),
				Fix:     "remove the extra part files of the partition (keep part-00000.parquet)"})
			continue
		}
		v.episodeAgrees(e, st)
	}
	sids := make([]string, 0, len(totals)+len(v.sessions))
	for sid := range totals {
		sids = append(sids, sid)
	}
	for sid := range v.sessions {
		if totals[sid] == nil {
			sids = append(sids, sid)
			totals[sid] = &sessionTotals{ok: true}
		}
	}
	sort.Strings(sids)
	for _, sid := range sids {
		t := totals[sid]
		ss := v.sessions[sid]
		if len(ss) == 0 {
			// A sessions file that did not read is reported as such.
			if t.episodes > 0 && v.countFiles(schema.TableSessions, [2]string{sid, ""}) == 0 {
				v.problems = append(v.problems, Problem{Check: CheckSession, Path: t.rel, Row: -1,
					Message: fmt.Sprintf("session %q has %d episodes but no sessions row (written when the session ends)", sid, t.episodes),
					Fix:     "run 'rlrec recover ROOT' if the log holds records; otherwise the session did not end while recorded"})
			}
			continue
		}
		if !t.ok {
			continue
		}
		var eps, steps int64
		for _, s := range ss {
			for _, r := range s.rows {
				eps += r.EpisodesRecorded
				steps += r.StepsRecorded
			}
		}
		if eps != t.episodes || steps != t.steps {
			v.problems = append(v.problems, Problem{Check: CheckSession, Path: ss[0].rel, Row: 0,
				Message: fmt.Sprintf("episodes_recorded %d and steps_recorded %d, but the session's files hold %d episodes and %d steps",
					eps, steps, t.episodes, t.steps),
				Fix: "episode or steps files are missing or extra; run 'rlrec recover ROOT' if the log holds records, otherwise restore them from a copy"})
		}
	}
}

// allRead reports whether every episodes file of a partition was read.
func (v *verifier) allRead(k [2]string, eps []*episodeSum) bool {
	return len(eps) == v.countFiles(schema.TableEpisodes, k)
}

// countFiles is the number of files of a partition that checked far
// enough to give a summary (or were expected to).
func (v *verifier) countFiles(table string, k [2]string) int {
	return v.partFilesSeen[table+"\x00"+k[0]+"\x00"+k[1]]
}

// partitionSteps joins the steps files of one partition into one sequence
// and checks it; it reports false when a file could not be read.
func (v *verifier) partitionSteps(k [2]string, files []*stepsSum) (stepsSum, bool) {
	var all stepsSum
	if len(files) != v.countFiles(schema.TableSteps, k) {
		return all, false
	}
	for _, f := range files {
		if !f.ok {
			return all, false
		}
	}
	files = append([]*stepsSum(nil), files...)
	sort.Slice(files, func(i, j int) bool { return files[i].firstStep < files[j].firstStep })
	next := int64(0)
	for i, f := range files {
		if f.rows == 0 {
			continue
		}
		if f.firstStep != next {
			v.problems = append(v.problems, Problem{Check: CheckSteps, Path: f.rel, Row: 0,
				Message: fmt.Sprintf("starts at step %d where step %d was expected: steps are missing or repeated", f.firstStep, next),
				Fix:     fixDamaged})
		}
		next = f.lastStep + 1
		if f.isLast > 0 && i != len(files)-1 {
			v.problems = append(v.problems, Problem{Check: CheckSteps, Path: f.rel, Row: f.rows - 1,
				Message: "is_last is set but later steps follow in another part file", Fix: fixDamaged})
		}
		if i == 0 {
			all.episodeID, all.episodeIndex, all.envIndex = f.episodeID, f.episodeIndex, f.envIndex
		}
		all.rows += f.rows
		all.isFirst += f.isFirst
		all.isLast += f.isLast
		all.rewardSum += f.rewardSum
		all.lastIsLast, all.lastTerminated, all.lastTruncated = f.lastIsLast, f.lastTerminated, f.lastTruncated
		all.obsSpace, all.actSpace, all.rel = f.obsSpace, f.actSpace, f.rel
	}
	if all.rows > 0 && all.isFirst != 1 {
		v.problems = append(v.problems, Problem{Check: CheckSteps, Path: all.rel, Row: -1,
			Message: fmt.Sprintf("the episode's steps have %d rows with is_first; exactly one (step 0) is", all.isFirst), Fix: fixDamaged})
	}
	if all.isLast > 1 {
		v.problems = append(v.problems, Problem{Check: CheckSteps, Path: all.rel, Row: -1,
			Message: fmt.Sprintf("the episode's steps have %d rows with is_last; at most one (the last) is", all.isLast), Fix: fixDamaged})
	}
	return all, true
}

// episodeAgrees checks an episodes row against its steps.
func (v *verifier) episodeAgrees(e *episodeSum, st stepsSum) {
	row := &e.rows[0]
	bad := func(format string, args ...any) {
		v.problems = append(v.problems, Problem{Check: CheckEpisode, Path: e.rel, Row: 0, Message: fmt.Sprintf(format, args...),
			Fix: "the episodes row and its steps files disagree: one of them is damaged or a steps file is missing; re-record the episode or restore both from a copy"})
	}
	if row.StepsRecorded != st.rows {
		bad("steps_recorded is %d but the steps files hold %d rows", row.StepsRecorded, st.rows)
	}
	if d := math.Abs(row.RewardSum - st.rewardSum); d > rewardTolerance*max(1, math.Abs(st.rewardSum)) {
		bad("reward_sum is %g but the rewards of its steps sum to %g", row.RewardSum, st.rewardSum)
	}
	if st.rows > 0 {
		if row.EpisodeID != st.episodeID || row.EpisodeIndex != st.episodeIndex || row.EnvIndex != st.envIndex {
			bad("episode_id/episode_index/env_index %q/%d/%d, its steps %q/%d/%d", row.EpisodeID, row.EpisodeIndex, row.EnvIndex,
				st.episodeID, st.episodeIndex, st.envIndex)
		}
		if e.obsSpace != st.obsSpace || e.actSpace != st.actSpace {
			v.problems = append(v.problems, Problem{Check: CheckPartition, Path: e.rel, Row: -1,
				Message: "the episodes file and its steps files store different spaces", Fix: fixForeign})
		}
	}
	if row.Status == schema.EpisodeCompleted && st.rows > 0 {
		if !st.lastIsLast {
			bad("the episode is completed but its last step does not have is_last set")
		}
		if row.Terminated != st.lastTerminated || row.Truncated != st.lastTruncated {
			bad("terminated/truncated are %t/%t but its last step's are %t/%t", row.Terminated, row.Truncated, st.lastTerminated, st.lastTruncated)
		}
	}
}
