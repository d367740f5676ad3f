// Package client records events into a remote recorder: `rlrec serve`,
// through the rlrec.ingest.v1 protocol. A *Client implements events.Hooks,
// so a Go program records remotely with the same code as locally:
//
//	c, err := client.Dial(ctx, "127.0.0.1:7465", client.WithToken(tok))
//	if err != nil { ... }
//	defer c.Close(ctx)
//	_, err = sim.Run(ctx, c, cfg)      // or hand c to the runtime adapter
//	err = c.Flush(ctx)                 // everything so far is durable
//
// # Contract
//
// A hook encodes its event (stamped with the current time), numbers it
// within its recording (session_id, route.env_id) from 1, queues it and
// returns; it does not wait for the network. One goroutine streams the
// queue to the server in batches and drops events from it as the server
// acknowledges them durable. When the stream breaks (the connection drops,
// the server restarts) the client reconnects by itself, with backoff, and
// resends every event not acknowledged; the server drops those it already
// has, so nothing is lost or recorded twice. Flush waits until every event
// handed over before it is acknowledged.
//
// Each Client is one run: Dial draws a run nonce (16 random bytes,
// RunNonce) that every event carries (eventsv1.Event.run_nonce). The
// server keeps it with the recording, in its log and in the recording's
// published files, so that after any restart another run (another Client)
// that reuses a recording's session and env ids is refused with a message
// naming both runs, while this client's resends are recognised as resends.
// A resent event is the same bytes (an event is encoded once), and the
// server refuses different content under a number already used.
//
// Memory is bounded: the events not yet acknowledged may hold at most
// WithMaxUnacked bytes (default 64 MiB); beyond it hooks wait (their
// context bounds the wait), which slows the producer to what the server
// makes durable instead of dropping anything.
//
// Events the server refuses (a recording its ROOT already holds, an event
// too large for its log) are not resent: they are logged and Flush
// reports them. A server that refuses the token ends the client: every
// later call returns the error.
//
// # Concurrency
//
// A Client is safe for concurrent use, like the recorder: events of one
// recording must be handed over in order.
package client
