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
	// writes are the episode and session markers, in order; begun the
	// files TypeUploadBegun records name.
	writes []Write
	begun  map[string]bool
}

// Write is a write a marker (TypeEpisodeDone or TypeSessionDone) says is
// published.
type Write struct {
	Type Type
	Marker
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
		files: make(map[string]bool), firstWrite: make(map[hive.Recording]int), begun: make(map[string]bool)}
}

// Add notes one marker record (type byte first); other records are
// ignored. It returns an error wrapping ErrMarker for a malformed marker,
// and notes nothing of it.
func (p *Published) Add(rec []byte) error {
	typ := Of(rec)
	if typ != TypeEpisodeDone && typ != TypeSessionDone && typ != TypeSessionWrite && typ != TypeUploadBegun {
		return nil
	}
	m, err := ParseMarker(rec[1:])
	if err != nil {
		return err
	}
	switch typ {
	case TypeUploadBegun:
		for _, f := range m.Files {
			p.begun[f] = true
		}
		return nil
	case TypeEpisodeDone:
		p.episodes[episodeKey{m.Recording, m.Record}] = true
		p.writes = append(p.writes, Write{Type: typ, Marker: m})
	case TypeSessionDone:
		p.sessions[sessionKey{m.Recording, m.Write}] = true
		p.writes = append(p.writes, Write{Type: typ, Marker: m})
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

// Writes returns the writes the markers name, in the order they were
// noted (a write noted twice, from the log and the journal, twice).
func (p *Published) Writes() []Write { return p.writes }

// Begun returns the files TypeUploadBegun records name: each may have a
// multipart upload in flight.
func (p *Published) Begun() map[string]bool { return p.begun }

// Forget drops a write: its marker no longer counts, and the files only
// it named are no longer published. Recovery forgets a write whose files
// object storage does not all hold (a crash while they were published),
// so that the write is done again.
func (p *Published) Forget(w Write) {
	switch w.Type {
	case TypeEpisodeDone:
		delete(p.episodes, episodeKey{w.Recording, w.Record})
	case TypeSessionDone:
		delete(p.sessions, sessionKey{w.Recording, w.Write})
	}
	gone := map[string]bool{}
	for _, f := range w.Files {
		gone[f] = true
	}
	kept := p.writes[:0]
	for _, o := range p.writes {
		if o.Type == w.Type && o.Recording == w.Recording && o.Record == w.Record && o.Marker.Write == w.Marker.Write {
			continue
		}
		kept = append(kept, o)
	}
	p.writes = kept
	for _, o := range p.writes {
		for _, f := range o.Files {
			delete(gone, f)
		}
	}
	for f := range gone {
		delete(p.files, f)
	}
}
