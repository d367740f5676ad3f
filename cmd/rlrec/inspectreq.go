package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rlrec/rlrec/internal/store"
)

// Object store requests in inspect. A recording written into a bucket
// keeps in its sessions file the requests it had sent when its row was
// written (rlrec.store_requests: its claim, its listings, the puts of
// every file before; the puts of the final write itself, the sessions
// file and the logs and telemetry written with it, come after and are
// not counted).
// inspect shows them per recording, with the requests per episode (that
// total over the recording's episodes recorded), and their sum over the
// recordings that have them. A recording without them (a directory ROOT,
// files written before rlrec kept them) shows nothing, not zeros: the
// section is left out when no recording has them.

// requestsOf returns a recording's counts for inspect: the counts and
// the requests per episode (nil without episodes).
func requestsOf(r *store.Requests, episodes int64) (*store.Requests, *jsonFloat) {
	if r == nil {
		return nil, nil
	}
	c := *r
	if episodes <= 0 {
		return &c, nil
	}
	per := jsonFloat(float64(c.Total()) / float64(episodes))
	return &c, &per
}

// sumRequests sets the report's summary of the recordings' counts: their
// sum, and its total per episode over those recordings' episodes.
func sumRequests(rep *inspectReport) {
	var sum store.Requests
	var episodes int64
	n := 0
	for _, s := range rep.Sessions {
		if s.StoreRequests == nil {
			continue
		}
		sum = sum.Add(*s.StoreRequests)
		episodes += int64(s.EpisodesRecorded)
		n++
	}
	if n == 0 {
		return
	}
	rep.StoreRequests, rep.StoreRequestsPerEpisode = requestsOf(&sum, episodes)
	rep.StoreRequestsRecordings = n
}

// printRequests prints the object store requests of each recording that
// has them, and their sum; nothing when none has.
func printRequests(w io.Writer, rep *inspectReport) {
	if rep.StoreRequests == nil {
		return
	}
	fmt.Fprintf(w, "\nobject store requests (each recording's as its sessions file counts them):\n")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SESSION\tENV\tREQUESTS\tPER EPISODE\tATTEMPTS\tBY KIND\n")
	row := func(session, env string, r *store.Requests, per *jsonFloat) {
		p := "-"
		if per != nil {
			p = fmt.Sprintf("%.2f", float64(*per))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", session, env, r.Total(), p, r.Attempts, byKind(*r))
	}
	for _, s := range rep.Sessions {
		if s.StoreRequests != nil {
			row(s.SessionID, s.EnvID, s.StoreRequests, s.StoreRequestsPerEpisode)
		}
	}
	recs := fmt.Sprintf("(%d recordings)", rep.StoreRequestsRecordings)
	if rep.StoreRequestsRecordings == 1 {
		recs = "(1 recording)"
	}
	row("all", recs, rep.StoreRequests, rep.StoreRequestsPerEpisode)
	tw.Flush()
}

// byKind lists the kinds of request sent, with their counts: "put 3,
// list 12".
func byKind(r store.Requests) string {
	var parts []string
	for op, n := range r.Ops {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", store.Op(op), n))
		}
	}
	return strings.Join(parts, ", ")
}
