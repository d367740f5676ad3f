// Package serve is the server side of `rlrec serve`: a gRPC service
// (rlrec.ingest.v1, package ingestv1) through which producers in other
// processes hand events to one recorder, and learn which are durable.
//
// # Usage
//
//	rec, err := recorder.Open(root, recorder.WithResume(true))
//	srv, err := serve.NewServer(rec, serve.WithToken(token), serve.WithLogger(logger))
//	gs := grpc.NewServer(srv.ServerOptions()...)
//	srv.Register(gs)               // the Ingest service and grpc.health.v1
//	go gs.Serve(listener)
//	http.Handle("/metrics", srv.Metrics())
//	...
//	srv.Drain(ctx)                 // acknowledge what was received, end the streams
//	gs.GracefulStop()
//	srv.Close()
//	rec.Close(ctx)
//
// # Contract
//
// Each stream carries batches of rlrec.events.v1.Event messages, each
// numbered within its recording (session_id, route.env_id) by its sequence
// field, from 1. The server decodes each event and hands it to the
// recorder unless it already has it: an event whose sequence is at most
// the last one the server has of its recording is a resent duplicate and
// is dropped. The recorder's log keeps the message as the client sent it
// (recorder.RecordEncoded), so an event is encoded once, by its client,
// and decoded once, by the server; a message without a time is recorded
// at the recorder's clock (recorder.RecordSequenced with the zero time),
// and its recording's sessions row says so (clock). The last sequence of every recording
// comes from the events handed over since the server started and, for a
// recording that was open when the previous server stopped or crashed,
// from the recorder's log (recorder.RecoveredSequence, under
// recorder.WithResume). A recording that ended and left the log before
// the server started (its files published, its log segments reclaimed,
// its last acknowledgement lost with the old server) has its last
// sequence in its files' rlrec.last_sequence metadata
// (recorder.PublishedSequence): its resent events up to it are dropped
// too, all but a SessionStarted, which the recorder refuses since ROOT
// holds the recording, and with it every later event of that stream's
// recording. So a new run that reuses a finished recording's ids is
// refused from its first event, and a client resending a whole recording
// it never saw acknowledged is told ROOT already holds it. A stream's batch is acknowledged (durable_batch)
// only once every event in it is durable in the recorder's log, was
// already there, or is refused (and then named in the acknowledgement).
// Durability comes from recorder.Flush, run by one goroutine for every
// stream in turn, so that many batches share one log fsync.
//
// An acknowledgement claims the log's durability, not the Parquet files'.
// When the files of one recording fail (recorder.RecordingError: its
// directory is not writable, an I/O error on its file), the recorder goes
// on with the others and keeps the failed recording's events in its log;
// its batches are still acknowledged, since the log holds them durably,
// and 'rlrec recover' writes them once the cause is fixed. The protocol
// has no message that tells a client a recording failed (a refusal would
// say the event is not recorded, which is untrue); the server logs each
// failed recording once, counts them in rlrec_serve_failed_recordings,
// and 'rlrec serve' exits non-zero naming them when it stops.
//
// Sequence numbers are not trusted blindly. An event whose sequence skips
// numbers of its recording (more than one after the last the server has)
// is a protocol error: the stream ends with InvalidArgument, its batch is
// not acknowledged, and the recording's last sequence stays where it was,
// so one forged number cannot make the server drop the recording's later
// events as resent ones. A SessionStarted with a sequence the server
// already has is a resend only when it is the same message, byte for byte,
// as the one this server recorded (a client encodes each event once); a
// different one is a second run reusing the ids of a recording still open,
// and is refused (REFUSAL_REASON_RECORDER), with every later event of that
// recording on that stream, so nothing of it is spliced into the first
// run's episodes. (A recording the server knows only from its log after a
// restart has no such message to compare: there a SessionStarted it
// already has is taken for a resend.) So nothing is acknowledged that is
// not in the log, was not already there, or is not named as refused.
//
// Events of one recording must come on one stream at a time, in order.
// A client that loses its stream opens another and resends every event
// not acknowledged; the server keeps no state per stream, so the new
// stream may reach a new server process.
//
// Back-pressure: a stream's events are handed over as they are read, and
// handing over waits while the recorder's memory budget is full; the
// stream is then not read, and gRPC flow control stops its client.
//
// # Concurrency
//
// A Server is safe for concurrent use; it serves any number of streams.
package serve
