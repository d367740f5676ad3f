package logrec

import "strconv"

// Type is the first byte of every record of the log: what its body is.
type Type byte

// The record types. These values are part of the on-disk format: do not
// change them, and never reuse a retired one.
const (
	// TypeEvent: an rlrec.events.v1.Event protobuf message, one hook
	// event as it was handed over, with its recording time.
	TypeEvent Type = 1
	// TypeEpisodeDone: a marker, the files of one episode are durable.
	TypeEpisodeDone Type = 2
	// TypeSessionDone: a marker, the k-th write of one recording's
	// session files (sessions row, logs, telemetry) is durable.
	TypeSessionDone Type = 3
	// TypeSessionWrite: a marker, the k-th write of one recording's
	// session files was handed to the writer (logged right after the
	// event that caused it, so that recovery numbers late writes as they
	// were).
	TypeSessionWrite Type = 4
	// TypeSnapshot: the whole assembly state as of a log position
	// (Snapshot, snapshot.proto).
	TypeSnapshot Type = 5
	// TypeSealed: every write handed to the writer before the snapshot as
	// of position as_of is durable; recovery may restore that snapshot and
	// skip the events up to as_of.
	TypeSealed Type = 6
	// TypeInvalid: a message of an ingested stream that was well-formed
	// but no valid event (Invalid).
	TypeInvalid Type = 7
	// TypeUploadBegun: multipart uploads of the files it names (a Marker
	// with files only) are about to begin, in object storage: logged and
	// synced before the uploads are created, so that recovery finds
	// every upload a crash left in flight by its exact key.
	TypeUploadBegun Type = 8
)

var typeNames = [...]string{
	TypeEvent:        "event",
	TypeEpisodeDone:  "episode-done",
	TypeSessionDone:  "session-done",
	TypeSessionWrite: "session-write",
	TypeSnapshot:     "snapshot",
	TypeSealed:       "sealed",
	TypeInvalid:      "invalid",
	TypeUploadBegun:  "upload-begun",
}

// String returns the type's name, or "type(N)" for one this version does
// not know.
func (t Type) String() string {
	if int(t) < len(typeNames) && typeNames[t] != "" {
		return typeNames[t]
	}
	return "type(" + strconv.Itoa(int(t)) + ")"
}

// IsEvent reports whether records of type t carry an event (TypeEvent or
// TypeInvalid): what recovery replays, as opposed to markers and
// snapshots.
func (t Type) IsEvent() bool { return t == TypeEvent || t == TypeInvalid }

// Of returns the type of a record, 0 for an empty one.
func Of(rec []byte) Type {
	if len(rec) == 0 {
		return 0
	}
	return Type(rec[0])
}
