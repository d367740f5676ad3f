// Package lerobot exports recordings of an rlrec ROOT as a LeRobot dataset
// in the v3.0 layout (LeRobotDataset codebase_version "v3.0"), with images
// stored in the data Parquet file rather than as videos.
//
// # Layout
//
//	DIR/meta/info.json                           version, counts, fps, path templates, features
//	DIR/meta/stats.json                          per feature: mean, std, min, max, count
//	DIR/meta/tasks.parquet                       task_index and task text
//	DIR/meta/episodes/chunk-000/file-000.parquet one row per episode
//	DIR/data/chunk-000/file-000.parquet          one row per frame
//
// Every frame goes to the one data file and every episode to the one
// episodes file (chunk 0, file 0): the export does not split at
// data_files_size_in_mb. No videos/ directory is written; video_path is
// the documented template all the same, and no feature has dtype "video".
//
// # Frames
//
// A frame is one recorded step that has both an observation and an action
// (the observation the action was chosen from); steps whose observation or
// action is null are skipped. Episodes are the recorded episodes that have
// steps and status "completed" (Options.Incomplete adds the others), in
// recording order then episode record id order; episode_index is
// their 0-based position in the export, index the 0-based global frame
// number, frame_index the 0-based frame number in the episode. timestamp
// (float32) is the seconds from the episode's first frame by the steps'
// recorded_at. next.reward (float32) is the step's reward and next.done
// (bool) whether the step terminated or truncated the episode.
//
// # Features
//
// Each leaf of the observation space becomes one feature named
// "observation.<leaf path>" ("observation.state" for a single-leaf
// space); each leaf of the action space "action.<leaf path>" ("action"
// for a single-leaf space). By kind:
//
//   - a uint8 Box of shape (H, W, 3) or (H, W, 1): dtype "image", shape
//     [H, W, C], names ["height", "width", "channel"]; the column is a
//     struct {bytes: binary, path: string} holding the PNG encoding of the
//     pixels (RGB or gray) and a null path, as Hugging Face datasets'
//     Image feature stores images in Parquet;
//   - any other Box: dtype "float32", shape [numel] (flattened in C order;
//     [1] for a scalar box), a list<float> column;
//   - Discrete: dtype "int64", shape [1], an int64 column (the value, start
//     included);
//   - MultiBinary and MultiDiscrete: dtype "int64", shape [numel], a
//     list<int64> column;
//   - Text: the first Text leaf of the observation is the frame's task (not
//     a column); any other Text leaf is a dtype "string" column.
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
// stats.json holds, for every feature but the string ones, mean, std
// (population), min, max as arrays of the feature's shape, and count ([N]
// frames). NaN and infinite values are left out of mean, std, min and max
// (an element with no finite value has all four 0). Images are summarised
// per channel over all pixels, scaled to [0, 1], with shape [C, 1, 1] as
// LeRobot does.
//
// # Constraints
//
// All exported recordings must have equal observation and action spaces
// (one feature set). fps is Options.FPS, or else the median interval
// between consecutive steps of an episode, rounded to a whole number of
// frames per second (at least 1).
package lerobot
