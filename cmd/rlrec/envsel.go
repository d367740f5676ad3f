package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rlrec/rlrec/dataset"
)

// How --session and --env select recordings, in every command that reads
// a ROOT (inspect, replay, stats, report, copy, export):
//
//   - --session ID selects the recordings of that session id (rlmesh's
//     local runner gives every run in a process one, local-<pid>, so it
//     may name several);
//   - --env ENV selects by env id or, as simulate's --env names envs, by
//     env component id or name ("env/cartpole" or "cartpole"), within
//     --session's recordings when it is given, else within the ROOT's;
//     it needs no --session, since a user who recorded cartpole wants
//     "the cartpole recordings" without first looking up a session id;
//   - a command that can take several recordings (inspect without
//     --episode, stats, report, copy, export) takes every recording
//     selected; one that reads one (replay, inspect --episode) refuses a
//     selection of several with an error listing each choice as the
//     --session and --env that name it alone.

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

// recordingSel is what --session and --env select.
type recordingSel struct {
	// session is --session's id when bySession.
	session string
	// bySession is set when --session was given: replay's --session ""
	// names the empty session id.
	bySession bool
	// env is --env, "" for any.
	env string
}

// selectBy is the selection of --session session (when not "") and --env
// env (when not "").
func selectBy(session, env string) recordingSel {
	return recordingSel{session: session, bySession: session != "", env: env}
}

// selectRecordings returns every recording of d that sel selects, in d's
// order, or an error saying what d holds instead. With neither --session
// nor --env it returns every recording (possibly none).
func selectRecordings(d *dataset.Dataset, sel recordingSel) ([]dataset.Recording, error) {
	recs := d.Recordings()
	if sel.bySession {
		if recs = d.Find(sel.session, ""); len(recs) == 0 {
			return nil, fmt.Errorf("session %q is not in %s; 'rlrec inspect %s' lists its sessions", sel.session, d.Root(), d.Root())
		}
	}
	if sel.env == "" {
		return recs, nil
	}
	var byID, byName []dataset.Recording
	for _, r := range recs {
		if r.EnvID == sel.env {
			byID = append(byID, r)
		} else if c := envComponent(d, r); c != "" && (c == sel.env || componentName(c) == sel.env) {
			byName = append(byName, r)
		}
	}
	if len(byID) > 0 {
		return byID, nil
	}
	if len(byName) > 0 {
		return byName, nil
	}
	where := d.Root()
	if sel.bySession {
		where = fmt.Sprintf("session %q in %s", sel.session, d.Root())
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%s holds no recording, so no env %q", d.Root(), sel.env)
	}
	return nil, fmt.Errorf("no env %q in %s; its envs are %s; give --env an env name, component id or env id", sel.env, where, envChoices(d, recs))
}

// envChoices lists recs by env component: each component with its
// recordings' env ids (at most 8 a component, then how many more).
func envChoices(d *dataset.Dataset, recs []dataset.Recording) string {
	ids := map[string][]string{}
	var comps []string
	for _, r := range recs {
		c := envComponent(d, r)
		if _, ok := ids[c]; !ok {
			comps = append(comps, c)
		}
		ids[c] = append(ids[c], fmt.Sprintf("%q", r.EnvID))
	}
	slices.Sort(comps)
	parts := make([]string, len(comps))
	for i, c := range comps {
		l := ids[c]
		more := ""
		if len(l) > 8 {
			l, more = l[:8], fmt.Sprintf(" and %d more", len(l)-8)
		}
		name := c
		if name == "" {
			name = "(no env component)"
		}
		parts[i] = fmt.Sprintf("%s (env ids %s%s)", name, strings.Join(l, ", "), more)
	}
	return strings.Join(parts, "; ")
}

// lookupRecording selects the one recording of d that sel names (see
// selectRecordings), for a command that reads one: a selection of several
// is an error (errAmbiguousEnv when --env named them) listing each as the
// --session and --env that select it alone.
func lookupRecording(d *dataset.Dataset, sel recordingSel) (dataset.Recording, error) {
	recs, err := selectRecordings(d, sel)
	if err != nil {
		return dataset.Recording{}, err
	}
	switch {
	case len(recs) == 1:
		return recs[0], nil
	case len(recs) == 0:
		return dataset.Recording{}, fmt.Errorf("%s holds no recording; record into it first ('rlrec demo -o %s')", d.Root(), d.Root())
	}
	const show = 12
	choices := make([]string, 0, min(len(recs), show))
	for _, r := range recs[:min(len(recs), show)] {
		c := fmt.Sprintf("--session %s --env %s", shellWord(r.SessionID), shellWord(r.EnvID))
		if comp := envComponent(d, r); comp != "" {
			c += " (" + comp + ")"
		}
		choices = append(choices, c)
	}
	list := strings.Join(choices, "; ")
	if len(recs) > show {
		list += fmt.Sprintf("; and %d more ('rlrec inspect %s' lists them)", len(recs)-show, d.Root())
	}
	if sel.env != "" {
		return dataset.Recording{}, fmt.Errorf("--env %s: %w: it names %d recordings of %s and this reads one; choose one: %s",
			sel.env, errAmbiguousEnv, len(recs), d.Root(), list)
	}
	if sel.bySession {
		return dataset.Recording{}, fmt.Errorf("session %q names %d recordings in %s and this reads one; choose one with --env ID or --env NAME: %s",
			sel.session, len(recs), d.Root(), list)
	}
	return dataset.Recording{}, fmt.Errorf("%s holds %d recordings and this reads one; choose one with --session and --env: %s", d.Root(), len(recs), list)
}

// shellWord quotes s for a shell when it holds anything but the
// characters of a plain id.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// errAmbiguousEnv is the error of an --env that names several recordings
// where a command reads one.
var errAmbiguousEnv = errors.New("ambiguous env")
