package main

import (
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/store"
)

// TestPrintRequests prints the object store requests of recordings with
// and without counts: only those with show, summed; none, no table.
func TestPrintRequests(t *testing.T) {
	counted := func(puts, lists, attempts int64) *store.Requests {
		r := &store.Requests{Attempts: attempts}
		r.Ops[store.OpPut], r.Ops[store.OpList] = puts, lists
		return r
	}
	for _, tc := range []struct {
		name     string
		sessions []inspectSession
		want     string
	}{
		{"directory ROOT", []inspectSession{{SessionID: "a", EnvID: "e", EpisodesRecorded: 4}}, ""},
		{"one counted, one written before", []inspectSession{
			{SessionID: "a", EnvID: "e", EpisodesRecorded: 4, hasRow: true, StoreRequests: counted(3, 5, 9)},
			{SessionID: "b", EnvID: "e", EpisodesRecorded: 4, hasRow: true},
		}, `
object store requests (each recording's as its sessions file counts them):
SESSION  ENV            REQUESTS  PER EPISODE  ATTEMPTS  BY KIND
a        e              8         2.00         9         put 3, list 5
all      (1 recording)  8         2.00         9         put 3, list 5
`},
		{"two, one without episodes", []inspectSession{
			{SessionID: "a", EnvID: "e1", EpisodesRecorded: 3, hasRow: true, StoreRequests: counted(2, 4, 6)},
			{SessionID: "a", EnvID: "e2", EpisodesRecorded: 0, hasRow: true, StoreRequests: counted(1, 3, 4)},
		}, `
object store requests (each recording's as its sessions file counts them):
SESSION  ENV             REQUESTS  PER EPISODE  ATTEMPTS  BY KIND
a        e1              6         2.00         6         put 2, list 4
a        e2              4         -            4         put 1, list 3
all      (2 recordings)  10        3.33         10        put 3, list 7
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := &inspectReport{}
			for _, s := range tc.sessions {
				s.StoreRequests, s.StoreRequestsPerEpisode = requestsOf(s.StoreRequests, int64(s.EpisodesRecorded))
				rep.Sessions = append(rep.Sessions, s)
			}
			sumRequests(rep)
			var b strings.Builder
			printRequests(&b, rep)
			if b.String() != tc.want {
				t.Errorf("got\n%s\nwant\n%s", b.String(), tc.want)
			}
			if (rep.StoreRequests == nil) != (tc.want == "") {
				t.Errorf("summary %+v for %s", rep.StoreRequests, tc.name)
			}
		})
	}
}
