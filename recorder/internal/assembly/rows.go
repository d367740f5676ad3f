package assembly

import (
	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/schema"
)

// The rows of the episodes and sessions tables, from the assembly state.

// episodeRow is ep's episodes row, finished with status.
func episodeRow(s *session, ep *episode, status string) schema.EpisodeRow {
	row := schema.EpisodeRow{
		EpisodeRecordID:      ep.recordID,
		EpisodeID:            ep.id,
		EpisodeIndex:         ep.index,
		EnvIndex:             ep.envIndex,
		EnvComponentID:       s.route.EnvComponentID,
		ModelComponentID:     s.route.ModelComponentID,
		StartedFromAutoReset: ep.autoReset,
		Status:               status,
		StepsRecorded:        ep.stepsRecorded,
		RewardSum:            ep.rewardSum,
		StartedAt:            ep.startedAt,
		FinalObservationBlob: ep.finalObs,
	}
	if v, ok := ep.seed.Get(); ok {
		row.Seed = &v
	}
	if v, ok := ep.trial.Get(); ok {
		row.TrialIndex = &v
	}
	if v, ok := ep.route.Get(); ok {
		lane := int64(v)
		row.Lane = &lane
	}
	if c := ep.completion; c != nil {
		row.StepCount = &c.StepCount
		row.CumulativeReward = &c.CumulativeReward
		row.Terminated, row.Truncated = c.Terminated, c.Truncated
		row.DurationMs = &c.DurationMs
		// success: the runtime's own reading when it sent one (rlmesh
		// 0.1), else rlrec's reading of final_info; success_source says
		// which.
		if v, ok := c.Success.Get(); ok {
			row.Success, row.SuccessSource = &v, ptr(schema.SuccessFromRuntime)
		} else if v, ok := blob.Success(c.FinalInfo); ok {
			row.Success, row.SuccessSource = &v, ptr(schema.SuccessFromFinalInfo)
		}
		if row.Seed == nil {
			if v, ok := c.Seed.Get(); ok {
				row.Seed = &v
			}
		}
		if row.TrialIndex == nil {
			if v, ok := c.TrialIndex.Get(); ok {
				row.TrialIndex = &v
			}
		}
		if v, ok := c.PredictMs.Get(); ok {
			row.PredictMs = &v
		}
		if v, ok := c.StepMs.Get(); ok {
			row.StepMs = &v
		}
		if c.FinalInfo != nil {
			js := blob.MetaJSON(c.FinalInfo)
			row.FinalInfo = &js
		}
		end := ep.endedAt
		row.EndedAt = &end
	}
	return row
}

// sessionRow is s's sessions row.
func sessionRow(s *session) *schema.SessionRow {
	row := &schema.SessionRow{
		EnvComponentID:   s.route.EnvComponentID,
		ModelComponentID: s.route.ModelComponentID,
		Status:           s.status,
		StartedAt:        s.startedAt,
		EpisodesRecorded: s.episodesRecorded,
		StepsRecorded:    s.stepsRecorded,
		DroppedSteps:     s.droppedSteps,
		Problems:         s.problemCount(),
		Clock:            s.clock(),
		SurplusSteps:     ptr(s.surplusSteps),
	}
	if s.reason != "" {
		reason := s.reason
		row.Reason = &reason
	}
	if s.hasTotals {
		steps, eps := s.totalSteps, s.totalEpisodes
		row.TotalSteps, row.TotalEpisodes = &steps, &eps
	}
	if summary := s.problemSummary(); summary != "" {
		row.ProblemSummary = &summary
	}
	if s.status != statusOpen || !s.endedAt.IsZero() {
		end := s.endedAt
		if end.IsZero() {
			end = s.lastAt
		}
		row.EndedAt = &end
	}
	return row
}

func ptr[T any](v T) *T { return &v }
