// Package curate builds datasets out of recorded ROOTs: Copy selects
// recordings and episodes of a source ROOT and records them into a new
// one, or into one new ROOT per split, in either steps layout. It is what
// 'rlrec copy' runs.
//
// # Contract
//
//   - The output is written by recorders (package recorder), never by
//     hand: every recording selected is rebuilt as its hook event stream
//     (dataset.ReplayEvents) and handed to the destination's recorder
//     with its recorded times, so every contract of a ROOT holds for it
//     (file metadata, batched episode rows, layouts, the log and its
//     durability, atomic publication) and 'rlrec verify' passes on it.
//   - Without a filter or a split (a plain copy), every table of the
//     destination equals the source's, row for row, except where the
//     layout puts things: the episodes column steps_file names the new
//     steps file, and episode_record_id is a steps column in layout
//     "session" and a partition in layout "episode". What a replay cannot
//     rebuild (a crashed or open recording comes out "open"; problems the
//     recorder counted other than dropped steps) is reported in
//     Report.Notes.
//   - With a filter (package where) only the episodes it matches are
//     copied, and only the recordings with at least one of them. The
//     other episodes' events are left out and their lanes replayed
//     without an episode id, so the destination's sessions row counts
//     what it holds: episodes_recorded and steps_recorded its episodes,
//     and dropped_steps also the steps of the episodes left out.
//     total_steps and total_episodes stay as the runtime reported them.
//     Logs and telemetry are session-wide and copied whole.
//   - A split (Splits) places each selected episode in one part by
//     SplitPoint(seed, recording, episode_record_id): deterministic for a
//     seed, independent of the filter and of the other episodes, so
//     adding recordings to the source never moves an episode from one
//     split to another. Each part is a ROOT of its own, DST/<name>, holding
//     the recordings with at least one of its episodes; every part ROOT
//     is created, empty or not.
//   - The destination must be new (or an empty directory) and outside
//     the source: a copy never adds to an existing ROOT. Recordings the
//     source holds without a sessions row (open, or crashed and not yet
//     recovered) are refused: run 'rlrec recover' on the source first.
//
// Memory: a recording's episodes rows and the fixed steps columns without
// blobs (dataset.ReplayEvents), plus the recorders' budgets.
package curate
