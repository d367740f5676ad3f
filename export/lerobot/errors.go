package lerobot

import (
	"errors"
	"fmt"
)

// ErrSpaces is returned when the recordings to export do not share their
// observation and action spaces, or when two parts of them map to one
// feature name.
var ErrSpaces = errors.New("lerobot: recordings have different spaces")

// ErrNoFrames is returned when the recordings hold no step with both an
// observation and an action.
var ErrNoFrames = errors.New("lerobot: no frames to export")

// ErrExists is returned when the output directory exists and is not
// empty and WithReplace is not set.
var ErrExists = errors.New("lerobot: output directory exists and is not empty")

// ErrTimesUnknown is returned when WithFPS is 0 and the recorded step
// times cannot give the frame rate: the recorder stamped them (the
// sessions table's clock is "recorder" or "mixed"), no two frames have
// different times, they are more than 2 s apart (below 1 fps once
// rounded, which info.json cannot say), less than 1 ms apart (above MaxDerivedFPS, which
// no recorded env runs at), or too irregular to call a rate (fewer than
// RegularShare of the intervals within RegularFactor of their median).
// The caller passes the frame rate instead.
var ErrTimesUnknown = errors.New("lerobot: the recorded step times do not give a frame rate")

// ErrFPS is returned for an WithFPS below 0.
var ErrFPS = errors.New("lerobot: fps must be a positive whole number")

// ErrTimestamp is returned when frame_index / fps, stored as the float32
// timestamp LeRobot reads, is off by more than LeRobot's default
// tolerance (TimestampTolerance): an episode too long for float32
// seconds at that rate.
var ErrTimestamp = errors.New("lerobot: timestamp beyond LeRobot's tolerance")

// InexactError is returned when an integer element cannot be stored
// exactly in the feature's dtype: an integer beyond ±2^24 in a float32
// vector (a value outside its leaf's declared space), or a uint64 above
// 2^63-1 in a vector feature. The export never rounds such a value.
type InexactError struct {
	Feature string // the feature, e.g. "observation.state"
	Leaf    string // the leaf path ("" for a single-leaf space)
	Element int    // the element's flat index within the leaf
	Value   string // the value, in decimal
	DType   string // the feature's dtype
}

func (e *InexactError) Error() string {
	return fmt.Sprintf("lerobot: %s: leaf %q element %d holds %s, which %s cannot hold exactly", e.Feature, e.Leaf, e.Element, e.Value, e.DType)
}

// ErrFFmpeg is returned when WithVideo is set and ffmpeg cannot be
// run or fails to encode.
var ErrFFmpeg = errors.New("lerobot: ffmpeg")
