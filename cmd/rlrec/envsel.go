package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rlrec/rlrec/dataset"
)

// componentName is the name of an env component id: "cartpole" for
// "env/cartpole" (the part after the last "/"), the name simulate's
// --env takes.
func componentName(componentID string) string {
	return componentID[strings.LastIndex(componentID, "/")+1:]
}

// envComponent returns a recording's env component id: from its sessions
// row, else from its first episodes row, else "".
func envComponent(d *dataset.Dataset, rec dataset.Recording) string {
	if s, err := d.Session(rec); err == nil && s.Row() != nil && s.Row().EnvComponentID != "" {
		return s.Row().EnvComponentID
	}
	if eps, err := d.Episodes(rec); err == nil && len(eps) > 0 {
		return eps[0].Row.EnvComponentID
	}
	return ""
}

// lookupRecording selects one recording of session in d. env, when set,
// is an env id or, wherever an env is selected, the env's component id
// or component name ("env/cartpole" or "cartpole", the name simulate's
// --env takes); a name that several recordings of the session share is
// an error listing their env ids. Without env the session must name one
// recording.
func lookupRecording(d *dataset.Dataset, session, env string) (dataset.Recording, error) {
	recs := d.Find(session, "")
	if len(recs) == 0 {
		return dataset.Recording{}, fmt.Errorf("session %q is not in %s; 'rlrec inspect %s' lists its sessions", session, d.Root(), d.Root())
	}
	list := func(rs []dataset.Recording) string {
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%q", r.EnvID)
			if c := envComponent(d, r); c != "" {
				parts[i] += " (" + c + ")"
			}
		}
		return strings.Join(parts, ", ")
	}
	if env == "" {
		if len(recs) == 1 {
			return recs[0], nil
		}
		return dataset.Recording{}, fmt.Errorf("session %q names %d recordings in %s, env ids %s; choose one with --env ID or --env NAME",
			session, len(recs), d.Root(), list(recs))
	}
	for _, r := range recs {
		if r.EnvID == env {
			return r, nil
		}
	}
	var match []dataset.Recording
	for _, r := range recs {
		if c := envComponent(d, r); c != "" && (c == env || componentName(c) == env) {
			match = append(match, r)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return dataset.Recording{}, fmt.Errorf("session %q has no env %q in %s: its env ids are %s; give --env an env id or component name",
			session, env, d.Root(), list(recs))
	}
	return dataset.Recording{}, fmt.Errorf("--env %s: %w: %d recordings of session %q run it, env ids %s; give --env one env id",
		env, errAmbiguousEnv, len(match), session, list(match))
}

// errAmbiguousEnv is the error of an --env name several recordings share.
var errAmbiguousEnv = errors.New("ambiguous env")
