package logrec

import "github.com/rlrec/rlrec/internal/hive"

// Published is what a log's marker records (and a recovery journal's)
// say is published: the episodes and session writes whose files are
// durable under their final names, those files, and the number of each
// recording's first session write the log recorded (TypeSessionWrite).
// Its zero value is not usable (NewPublished).
type Published struct {
	episodes   map[episodeKey]bool
	sessions   map[sessionKey]bool
	files      map[string]bool
	firstWrite map[hive.Recording]int
}

type episodeKey struct {
	rec hive.Recording
	rid string
}

type sessionKey struct {
	rec   hive.Recording
	write int
}

// NewPublished returns an empty set.
func NewPublished() *Published {
	return &Published{episodes: make(map[episodeKey]bool), sessions: make(map[sessionKey]bool),
		files: make(map[string]bool), firstWrite: make(map[hive.Recording]int)}
}

// Add notes one marker record (type byte first); other records are
// ignored. It returns an error wrapping ErrMarker for a malformed marker,
// and notes nothing of it.
func (p *Published) Add(rec []byte) error {
	typ := Of(rec)
	if typ != TypeEpisodeDone && typ != TypeSessionDone && typ != TypeSessionWrite {
		return nil
	}
	m, err := ParseMarker(rec[1:])
	if err != nil {
		return err
	}
	switch typ {
	case TypeEpisodeDone:
		p.episodes[episodeKey{m.Recording, m.Record}] = true
	case TypeSessionDone:
		p.sessions[sessionKey{m.Recording, m.Write}] = true
	case TypeSessionWrite:
		if _, ok := p.firstWrite[m.Recording]; !ok {
			p.firstWrite[m.Recording] = m.Write
		}
	}
	for _, f := range m.Files {
		p.files[f] = true
	}
	return nil
}

// Episode reports whether a marker says episode rid of rec is published.
func (p *Published) Episode(rec hive.Recording, rid string) bool {
	return p.episodes[episodeKey{rec, rid}]
}

// Session reports whether a marker says the k-th session write of rec is
// published.
func (p *Published) Session(rec hive.Recording, k int) bool { return p.sessions[sessionKey{rec, k}] }

// File reports whether a marker names file, a final path relative to
// ROOT ("/" separators).
func (p *Published) File(file string) bool { return p.files[file] }

// FirstWrite returns the number of the first session write of rec the
// log recorded, if it did.
func (p *Published) FirstWrite(rec hive.Recording) (int, bool) {
	k, ok := p.firstWrite[rec]
	return k, ok
}
