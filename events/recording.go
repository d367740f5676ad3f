package events

import "fmt"

// Recording names one recording: one route run, the events of one
// session id and env id (their Header). It is the project's one key of a
// recording: the recorder and its files (internal/hive names it
// hive.Recording, the same type), the server and the client keep their
// state per recording under it.
type Recording struct {
	SessionID string
	EnvID     string
}

// String renders the pair for messages: session "S" env "R".
func (r Recording) String() string {
	return fmt.Sprintf("session %q env %q", r.SessionID, r.EnvID)
}

// Less orders recordings by session id, then env id.
func (r Recording) Less(o Recording) bool {
	if r.SessionID != o.SessionID {
		return r.SessionID < o.SessionID
	}
	return r.EnvID < o.EnvID
}
