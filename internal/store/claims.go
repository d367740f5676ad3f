package store

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
)

// Claims that block a recording. A claim is never removed by a writer
// (claim.go), so one whose writer crashed before it published anything
// and whose log directory was then lost blocks its recording for good:
// nothing will ever publish or recover it, and every later writer is
// refused. UnpublishedClaims finds such claims for `rlrec verify` and
// `rlrec inspect` (a writer recording now holds one too, until its first
// publish: only a person can tell them apart), and ReleaseClaim, run by
// the explicit `rlrec release-claim`, never automatically, deletes one.

// ClaimInfo is one recording's claim on a shared ROOT.
type ClaimInfo struct {
	// Dir is the recording's directory text (session_id=S/env_id=E);
	// SessionID and EnvID its values (cut ones as a dataset scan shows
	// them, see hive).
	Dir              string
	SessionID, EnvID string
	// Rel is the claim's path relative to ROOT.
	Rel string
	// Writer is the writer id the claim holds (WriterID).
	Writer string
}

// Claims lists the recordings' claims of the ROOT: one listing of
// _rlrec/claims and a GetObject per claim.
func (s *S3) Claims() ([]ClaimInfo, error) {
	base := path.Join(hive.StateDir, hive.ClaimsDir) + "/"
	var out []ClaimInfo
	var lerr error
	err := s.list(s.loc.Key(base), "", 0, func(key string, _ int64) bool {
		rel := path.Join(hive.StateDir, hive.ClaimsDir, strings.TrimPrefix(key, s.loc.Key(base)))
		dir, ok := hive.RecordingDirOf(rel)
		if !ok {
			return true
		}
		c := ClaimInfo{Dir: dir, Rel: rel}
		sid, env, _ := strings.Cut(dir, "/")
		c.SessionID, _, _ = hive.ParseSegment(sid, hive.KeySessionID)
		c.EnvID, _, _ = hive.ParseSegment(env, hive.KeyEnvID)
		b, err := s.ReadState(strings.TrimPrefix(rel, hive.StateDir+"/"))
		if err != nil {
			lerr = err
			return false
		}
		c.Writer = strings.TrimSpace(string(b))
		out = append(out, c)
		return true
	})
	if err == nil {
		err = lerr
	}
	if err != nil {
		return nil, fmt.Errorf("store: claims of %s: %w", s.Root(), err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dir < out[j].Dir })
	return out, nil
}

// UnpublishedClaims returns the claims of rd's ROOT (a bucket's; none for
// a directory) whose recordings have no published file in l, rd's
// listing.
func UnpublishedClaims(rd Reader, l *hive.Listing) ([]ClaimInfo, error) {
	s, ok := rd.(*S3)
	if !ok {
		return nil, nil
	}
	claims, err := s.Claims()
	if err != nil {
		return nil, err
	}
	published := map[string]bool{}
	for _, f := range l.Files {
		if dir, ok := hive.RecordingDirOf(f.Rel); ok {
			published[dir] = true
		}
	}
	var out []ClaimInfo
	for _, c := range claims {
		if !published[c.Dir] {
			out = append(out, c)
		}
	}
	return out, nil
}

// ReleaseClaim deletes the claim of the recording whose directory text
// is dir (session_id=S/env_id=E). It refuses when the ROOT holds a
// published file of the recording (its claim then guards those files),
// or holds no such claim.
func (s *S3) ReleaseClaim(dir string) (ClaimInfo, error) {
	l, err := s.List()
	if err != nil {
		return ClaimInfo{}, err
	}
	for _, f := range l.Files {
		if d, ok := hive.RecordingDirOf(f.Rel); ok && d == dir {
			return ClaimInfo{}, fmt.Errorf("store: release the claim of %s in %s: the recording has published files (%s): its claim guards them; it is not released", dir, s.Root(), s.Path(f.Rel))
		}
	}
	claims, err := s.Claims()
	if err != nil {
		return ClaimInfo{}, err
	}
	for _, c := range claims {
		if c.Dir == dir {
			if err := s.Delete(c.Rel); err != nil {
				return ClaimInfo{}, fmt.Errorf("store: release the claim of %s: %w", dir, err)
			}
			return c, nil
		}
	}
	return ClaimInfo{}, fmt.Errorf("store: release the claim of %s in %s: no such claim (verify and inspect list the claims with nothing published)", dir, s.Root())
}
