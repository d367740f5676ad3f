package hive

import "errors"

var (
	// ErrBadEscape is returned by Unescape for a '%' not followed by two
	// hex digits.
	ErrBadEscape = errors.New("hive: malformed percent escape")
	// ErrNotPartition is returned by ParseSegment for a name that is not a
	// key=value directory of the expected key.
	ErrNotPartition = errors.New("hive: not a partition directory")
	// ErrBadLayout is returned for a layout name that is neither "episode"
	// nor "session".
	ErrBadLayout = errors.New("hive: unknown steps layout")
	// ErrSchemaVersion is returned by ParseLayoutFile for a ROOT of
	// another schema version.
	ErrSchemaVersion = errors.New("hive: the ROOT has another schema version")
)
