// Package report makes the page of 'rlrec report': one self-contained
// HTML file about the recordings of a ROOT, to look at a run before
// reading its tables.
//
// # Usage
//
//	d, err := dataset.Open(root)
//	defer d.Close()
//	rep, err := report.Build(ctx, d, d.Recordings())
//	err = rep.WriteHTML(w)
//
// # What a page holds
//
// An overview (one row per recording, the problems and notes about the
// ROOT itself), then per recording, each in a <section> with a
// data-section attribute naming it:
//
//   - "returns": the return and the length of every completed episode in
//     order of completion (episodes rows by ended_at, ties by record id),
//     with a rolling mean over a twentieth of the episodes (at least 5;
//     none under 20 episodes). The return is the runtime's
//     cumulative_reward, else reward_sum; the length its step_count, else
//     steps_recorded. Incomplete episodes are counted, not drawn.
//   - "success": the share of completed episodes that succeeded, among
//     those that reported success (the episodes table's success column),
//     and its rolling value over the last tenth of them (at least 10, at
//     most 100), with the overall rate as a reference line.
//   - "rewards": a histogram of the reward of every steps row (package
//     stats) and one of the episodes' returns.
//   - "features": the statistics of package stats for every numeric
//     feature, element by element (count, mean, std, min, p01 to p99,
//     max), each with a small histogram; Text and binary leaves (images)
//     are named as left out.
//   - "findings": the problems and notes of package findings, the same
//     sentences 'rlrec inspect' prints.
//   - "frames": for each image leaf of the observation space (a uint8 Box
//     of shape (H, W, 3) or (H, W, 1): internal/frame, shared with the
//     LeRobot export), the first completed episode, the best and the worst by
//     return (the earliest on ties; an episode chosen twice is shown once
//     with both labels), each as a strip of frames and a sequence to play.
//     Frames are the observations of steps sampled evenly over the
//     episode, first and last included.
//
// # Bounds
//
// A page's size does not grow with the number of episodes or steps: a
// per-episode plot draws at most WithMaxPoints points (beyond that,
// buckets of consecutive episodes as a band from their smallest to
// largest value and a line through their means); histograms have
// stats.HistogramBins bins; the statistics table shows at most
// WithMaxElements elements per feature; frames are shrunk by the
// smallest integer factor (box average) that brings both sides within
// WithFrameSide pixels, a sequence holds at most WithPlayerFrames
// frames and a strip WithStripFrames, and the PNG bytes of the whole
// page stay within WithFrameBytes. Whatever a bound leaves out is
// said where it would have been. It grows with the recordings reported
// and their features: select fewer with 'rlrec report --session/--env'.
//
// Building reads every steps row once (package stats: the statistics and
// histograms) plus the steps of the (at most three) episodes per
// recording whose frames are shown.
//
// # The page
//
// Everything is inline: CSS, one small script (the players), plots as
// SVG drawn here, frames as PNG data URIs. Nothing is fetched, so the
// file opens from disk, offline, and can be mailed or attached to a CI
// run. Plots carry CSS classes, not colours, so they follow the page's
// light and dark schemes (prefers-color-scheme). Every plot has a title
// and an aria-label, every frame an alt text; the players are a
// Play/Pause button and a labelled range input (arrow keys step frames),
// hidden until the script runs, so a page without scripts shows the
// strips and each sequence's first frame. Ids, names and final info are
// escaped by html/template: a recording id cannot inject markup.
package report
