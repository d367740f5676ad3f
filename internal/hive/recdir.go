package hive

import "strings"

// The paths under ROOT that belong to one recording, found without
// decoding or copying anything: an object store attributes each request
// it sends to the recording whose key or listing prefix it names
// (package store), on the path of every request.

// ClaimsDir is the directory under StateDir that holds the claims of
// recordings, one file per recording at ClaimsDir/session_id=S/env_id=R
// (ClaimName). Part of the on-disk layout: do not change it.
const ClaimsDir = "claims"

// ClaimName returns the name, relative to StateDir, of rec's claim:
// claims/session_id=S/env_id=R.
func ClaimName(rec Recording) string { return ClaimsDir + "/" + RecordingDir(rec) }

// RecordingDirOf returns the directory of the recording (session_id=S/
// env_id=R, as RecordingDir gives it) that a path relative to ROOT lies
// under or names: a table's recording partition, any path below it
// (episode partitions, part files; a trailing "/" of a listing prefix
// included), or the recording's claim under StateDir/ClaimsDir. The
// directory is a substring of rel; nothing is allocated. Paths that name
// no single recording (the layout file, a table's directory, ROOT) are
// not a recording's: ok is false.
func RecordingDirOf(rel string) (dir string, ok bool) {
	top, rest, ok := strings.Cut(rel, "/")
	if !ok {
		return "", false
	}
	if top == StateDir {
		sub, r, ok := strings.Cut(rest, "/")
		if !ok || sub != ClaimsDir {
			return "", false
		}
		rest = r
	} else if _, ok := Lookup(top); !ok {
		return "", false
	}
	start := len(rel) - len(rest)
	sid, r, ok := strings.Cut(rest, "/")
	if !ok || !validSegment(sid, KeySessionID) {
		return "", false
	}
	env, _, _ := strings.Cut(r, "/")
	if !validSegment(env, KeyEnvID) {
		return "", false
	}
	return rel[start : start+len(sid)+1+len(env)], true
}

// validSegment reports whether name is a key=value directory name whose
// value Unescape accepts, without decoding it.
func validSegment(name, key string) bool {
	if len(name) <= len(key) || name[len(key)] != '=' || name[:len(key)] != key {
		return false
	}
	v := name[len(key)+1:]
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			continue
		}
		if i+2 >= len(v) {
			return false
		}
		if _, ok := unhex(v[i+1]); !ok {
			return false
		}
		if _, ok := unhex(v[i+2]); !ok {
			return false
		}
		i += 2
	}
	return true
}
