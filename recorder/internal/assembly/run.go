package assembly

import (
	"bytes"
)

// A recording's run identity (the recorder's runid.go says what a server
// does with it): the first run nonce its events carried, which its
// sessions, logs and telemetry files keep under rlrec.run_nonce; the
// content chain of its numbered events (rlrec.content_chain); and, while
// recovery replays the log under WithResume, the content hashes of its
// last numbered events.

// noteRun notes the nonce and content hash of s's event numbered seq.
func (a *Assembler) noteRun(s *session, seq uint64, nonce []byte, hash uint64) {
	if s.run.nonce == nil && len(nonce) > 0 {
		s.run.nonce = bytes.Clone(nonce)
	}
	s.run.chain = s.run.chain.Add(seq, hash)
	if a.keepHashes {
		s.run.hashes.Add(seq, hash)
	}
}
