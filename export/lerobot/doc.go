// Package lerobot exports recordings of an rlrec ROOT as a LeRobot dataset
// in the v3.0 layout (LeRobotDataset codebase_version "v3.0"), with camera
// images as PNG in the data Parquet files or, with WithVideo, as MP4
// videos. The files follow
// what LeRobot's loader reads: every feature in meta/info.json is a column
// of the data files (and every column a feature), of the type LeRobot's
// feature mapping casts it to.
//
// # Layout
//
//	DIR/meta/info.json                           version, counts, fps, path templates, features
//	DIR/meta/stats.json                          per feature: min, max, mean, std, count, q01 q10 q50 q90 q99
//	DIR/meta/tasks.parquet                       task_index and task text
//	DIR/meta/episodes/chunk-000/file-000.parquet one row per episode, with its stats/<feature>/<stat>
//	DIR/data/chunk-CCC/file-FFF.parquet          one row per frame
//
// Frames go to data files in episode order; a file is closed after the
// episode that takes it past data_files_size_in_mb MiB (100 by default,
// WithDataFilesSizeInMB), so an episode's frames are always in one
// file, the one its episodes row names (data/chunk_index,
// data/file_index). File F of the export is chunk F/1000, file F%1000
// (chunks_size 1000). Without videos, video_path is null. Each file is built in memory (so memory holds about one data
// file), written under a temporary name, synced and renamed, and the
// whole dataset is built in a new sibling directory renamed to DIR at the
// end: DIR never holds a partial export. DIR must not exist or be empty,
// unless WithReplace, which replaces it once the new export is
// complete.
//
// # Frames
//
// A frame is one recorded step that has both an observation and an action
// (the observation the action was chosen from); steps whose observation or
// action is null are skipped. Episodes are the recorded episodes that have
// steps and status "completed" (WithIncomplete adds the others), in
// recording order then episode record id order; episode_index is their
// 0-based position in the export, index the 0-based global frame number
// (dataset_from_index and dataset_to_index of an episode bound its
// frames' index), frame_index the 0-based frame number in the episode.
// next.reward (float32) is the step's reward and next.done (bool) whether
// the step terminated or truncated the episode.
//
// # Time
//
// fps is a whole number, as LeRobot's DatasetInfo.fps is: WithFPS, or
// else the median interval between consecutive frames' recorded times,
// rounded. Times the recorder stamped on arrival (the sessions table's
// clock column "recorder" or "mixed") measure the recorder, not the env,
// and no two frames with different times give no interval: both are
// refused (ErrTimesUnknown) unless WithFPS is given. So is a rate the
// times give that no recorded env has: above MaxDerivedFPS (1,000 fps;
// times that measure a loop, not the env), or from intervals too irregular
// to call a rate (fewer than 75% of the positive intervals within a factor
// 1.5 of their median: bursts, or two rates mixed). A ROOT without a
// clock column is taken to hold event times. timestamp (float32) is
// frame_index / fps, which LeRobot checks within tolerance_s (1e-4 s by
// default); an episode so long that float32 cannot hold its timestamps
// that closely is refused (ErrTimestamp). Summary.MaxDrift says how far
// the recorded times are from these timestamps.
//
// # Features
//
// LeRobot maps a feature of shape [1] to a scalar datasets.Value and any
// other [n] to a datasets.Sequence of length n, so a feature of width 1
// is a scalar column and a wider one a list column of exactly n elements.
// Per side of the spaces (observation, action):
//
//   - observation.state (and action): the observation's (the action's)
//     float Box leaves and the integer leaves whose every allowed value a
//     float32 holds exactly (bool, 8- and 16-bit Boxes, MultiBinary,
//     Discrete and MultiDiscrete within ±2^24), flattened in C order and
//     concatenated in leaf order; dtype "float32" when any float leaf is
//     among them, else "int64"; names lists each element as the leaf path
//     ("state" or "action" for a single-leaf space), with ".i" for the
//     flat index of a leaf of more than one element. A recorded integer
//     outside ±2^24 in a float32 feature is refused (InexactError), never
//     rounded.
//   - observation.<leaf path> (action.<leaf path>): every other integer
//     leaf (32- and 64-bit Boxes, wide Discrete or MultiDiscrete), kept
//     exact: dtype "int64", or "uint64" for a uint64 leaf (torch cannot
//     hold a uint64 above 2^63-1 as a tensor; pyarrow and datasets read
//     it exactly). When a side has no concatenated leaf and one such
//     leaf, it takes the side's name (observation.state, action).
//   - observation.images.<leaf path> (observation.images.image for a
//     single-leaf space): a uint8 Box of shape (H, W, 3) or (H, W, 1) in
//     the observation; dtype "image", shape [H, W, C], names ["height",
//     "width", "channels"]; the column is a struct {bytes: binary, path:
//     string} holding the PNG encoding of the pixels (RGB or gray) and a
//     null path, as Hugging Face datasets' Image feature stores images.
//   - Text: the observation's first Text leaf is the frame's task (not a
//     column); any other Text leaf is a dtype "string" feature named
//     text.observation.<leaf path> or text.action.<leaf path>: outside the
//     "observation." and "action." prefixes, which LeRobot's policies read
//     as numeric state and action.
//   - A Box with no elements gives nothing.
//
// # Videos
//
// With WithVideo, each RGB image feature becomes a video feature:
// dtype "video", shape [H, W, 3], names ["height", "width", "channels"],
// and the info LeRobot writes (video.height, video.width, video.codec
// "h264", video.pix_fmt "yuv420p" (yuv444p for odd sizes), video.fps,
// video.channels 3, video.is_depth_map false, has_audio false). Its
// frames are encoded by ffmpeg (libx264, a key frame every 2 frames as
// LeRobot encodes, constant frame rate fps) into
// videos/<feature>/chunk-CCC/file-FFF.mp4 (VideoPath), a new file after
// the episode that takes one past video_files_size_in_mb (200 MiB); the
// feature is not a data column. The episodes file says where each
// episode is: videos/<feature>/chunk_index, file_index, and
// from_timestamp and to_timestamp, the seconds of its first frame and
// just past its last in that file (frame k of the file is at k / fps, so
// LeRobot finds a frame at from_timestamp + timestamp). Statistics come
// from the recorded pixels, not the decoded video. Gray images stay PNG.
//
// # Tasks
//
// Tasks are the distinct values of the observation's first Text leaf (an
// instruction), in order of first appearance; without one, each recording
// has one task: its env component id (or "default"). tasks.parquet has the
// columns task_index (int64) and task (string) and pandas metadata naming
// task as the index, as LeRobot writes it (pandas reads the task text
// back as the index). robot_type is the env component id when all
// exported episodes share one, else null.
//
// # Statistics
//
// stats.json holds, for every feature but the string ones, min, max,
// mean, std (population), q01, q10, q50, q90 and q99 as arrays of the
// feature's width, and count ([N] frames); the episodes file holds the
// same per episode as stats/<feature>/<stat> list columns. The statistics
// are exact: quantiles interpolate linearly between the closest ranks
// (numpy's default), which takes the values of every frame in memory (8
// bytes per element). NaN and infinite values are left out (an element
// with no finite value has 0 for every statistic). Images are summarised
// per channel over all pixels, scaled to [0, 1], with shape [C, 1, 1] as
// LeRobot does.
//
// # Constraints
//
// All exported recordings must have equal observation and action spaces
// (one feature set), or ErrSpaces.
package lerobot
