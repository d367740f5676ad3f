package recorder

import "github.com/rlrec/rlrec/recorder/internal/assembly"

// AssembledSequence is the highest sequence number the assembly state
// holds for the recording (sessionID, envID), 0 when it holds none. Call
// it after Settle.
func (r *Recorder) AssembledSequence(sessionID, envID string) uint64 {
	var seq uint64
	r.asm.Each(func(s assembly.Recording) {
		if s.Rec.SessionID == sessionID && s.Rec.EnvID == envID {
			seq = s.Seq
		}
	})
	return seq
}
