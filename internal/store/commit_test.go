package store

import "errors"

// commit makes a group of finished parts durable and published: Sync,
// then Publish. When only some parts fail (a *GroupError), the others are
// committed all the same, and the error names the failed ones of both
// steps. The recorder's committer takes the two steps itself, with its
// log markers between them; the tests commit with this.
func commit(s Store, parts []Part) error {
	serr := s.Sync(parts)
	var sge *GroupError
	if serr != nil && !errors.As(serr, &sge) {
		return serr
	}
	rest := parts
	if sge != nil {
		failed := make(map[Part]bool, len(sge.Parts))
		for _, pe := range sge.Parts {
			failed[pe.Part] = true
		}
		rest = nil
		for _, p := range parts {
			if !failed[p] {
				rest = append(rest, p)
			}
		}
	}
	perr := s.Publish(rest)
	var pge *GroupError
	if perr != nil && !errors.As(perr, &pge) {
		return perr
	}
	if sge == nil {
		return perr
	}
	if pge != nil {
		sge.Parts = append(sge.Parts, pge.Parts...)
	}
	return sge
}
