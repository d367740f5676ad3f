package recorder

// AssembledSequence is the highest sequence number the assembly state
// holds for the recording (sessionID, envID), 0 when it holds none. Call
// it after Settle.
func (r *Recorder) AssembledSequence(sessionID, envID string) uint64 {
	for _, s := range r.asm.sortedSessions() {
		if s.id == sessionID && s.route.EnvID == envID {
			return s.seq
		}
	}
	return 0
}
