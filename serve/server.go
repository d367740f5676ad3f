package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/internal/runid"
	"github.com/rlrec/rlrec/recorder"
)

// DefaultMaxMessageBytes is the largest request a Server accepts without
// WithMaxMessageBytes: 64 MiB, a batch of a few hundred lanes of camera
// images.
const DefaultMaxMessageBytes = 64 << 20

// options is a Server's configuration (Option).
type options struct {
	token      string
	maxMessage int
	logger     *slog.Logger
}

// Option configures a Server (NewServer). The project's public packages
// configure with functional options: docs/decisions/options.md.
type Option func(*options)

// WithToken requires token of every Ingest call (metadata
// "authorization: Bearer TOKEN"); the health service stays open. Without
// it, or with "", calls need no token.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithMaxMessageBytes bounds one request (default, and 0:
// DefaultMaxMessageBytes); a negative bound is refused.
func WithMaxMessageBytes(bytes int) Option { return func(o *options) { o.maxMessage = bytes } }

// WithLogger sets the logger for what the server reports; by default, and
// with nil, nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Server is the Ingest service over one recorder.
type Server struct {
	ingestv1.UnimplementedIngestServer

	rec    *recorder.Recorder
	opts   options
	log    *slog.Logger
	health *health.Server
	m      metrics

	// recMu guards recs, the state of every recording seen.
	recMu sync.Mutex
	recs  map[events.Recording]*recordingState
	// failedRecs are the recordings whose files failed (noteFailed).
	failedRecs map[events.Recording]bool

	// tickets numbers the batches fully handed over; durable is the last
	// ticket a recorder Flush has covered. durableCh is closed and
	// replaced each time durable moves.
	tickets   atomic.Uint64
	durable   atomic.Uint64
	durMu     sync.Mutex
	durableCh chan struct{}
	kick      chan struct{}
	stopDur   chan struct{}
	durDone   chan struct{}
	failed    atomic.Pointer[error]

	drainOnce sync.Once
	draining  chan struct{}
	streams   sync.WaitGroup
	closeOnce sync.Once
}

// recordingState is what the server knows of one recording: the last
// sequence handed over. mu serialises the events of the recording across
// streams (an old stream still being read and its client's new one).
type recordingState struct {
	mu   sync.Mutex
	last uint64
	// published is the last sequence the recording's published files
	// hold (recorder.PublishedSequence) when the log held none of it: a
	// recording that ended and left the log before this server started.
	// Resent events up to it are dropped, all but a SessionStarted, which
	// the recorder refuses (the recording is in ROOT): a new run that
	// reuses the recording's ids is refused, not taken for a resend.
	published uint64
	// started is the SessionStarted message this server handed over for
	// the recording: a resent one is the same bytes (a client encodes an
	// event once), a new run that reuses the recording's ids is not.
	started []byte
	// nonce is the recording's run nonce (internal/runid), when known
	// (nonceKnown): from the log or the published files after a restart,
	// else from the first event handed over that carried or derived one.
	nonce      []byte
	nonceKnown bool
	// hashes are the content hashes of the recording's last numbered
	// events, for telling a resend from new content under a used number.
	hashes runid.Window
}

// NewServer returns a Server recording into rec, which should be opened
// WithResume so that recordings and their sequences survive a restart.
// It starts the goroutine that makes batches durable; Close stops it.
func NewServer(rec *recorder.Recorder, opt ...Option) (*Server, error) {
	if rec == nil {
		return nil, errors.New("serve: new server: nil recorder")
	}
	var opts options
	for _, o := range opt {
		o(&opts)
	}
	if opts.maxMessage < 0 {
		return nil, fmt.Errorf("serve: new server: max message size %d bytes is negative", opts.maxMessage)
	}
	if opts.maxMessage == 0 {
		opts.maxMessage = DefaultMaxMessageBytes
	}
	log := opts.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		rec: rec, opts: opts, log: log,
		health:    health.NewServer(),
		recs:      make(map[events.Recording]*recordingState),
		durableCh: make(chan struct{}),
		kick:      make(chan struct{}, 1),
		stopDur:   make(chan struct{}),
		durDone:   make(chan struct{}),
		draining:  make(chan struct{}),
	}
	s.m.init()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(ingestv1.Ingest_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	go s.durability()
	return s, nil
}

// ServerOptions returns the grpc.ServerOptions the service needs: the
// token check and the message size bound. Add credentials (TLS) to them.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.opts.maxMessage),
		grpc.ChainStreamInterceptor(s.streamAuth),
		grpc.ChainUnaryInterceptor(s.unaryAuth),
	}
}

// Register registers the Ingest service and the standard health service
// (grpc.health.v1) on gs.
func (s *Server) Register(gs *grpc.Server) {
	ingestv1.RegisterIngestServer(gs, s)
	healthpb.RegisterHealthServer(gs, s.health)
}

// Drain stops taking batches: every stream finishes the batch in hand,
// waits until what it took is durable and acknowledged, and ends with
// status Unavailable, so that its client resends the rest to the next
// server. The health service reports NOT_SERVING from now on. Drain
// returns once every stream has ended, or ctx is done.
func (s *Server) Drain(ctx context.Context) error {
	s.drainOnce.Do(func() {
		s.health.Shutdown()
		close(s.draining)
	})
	done := make(chan struct{})
	go func() { s.streams.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("serve: drain: %w", ctx.Err())
	}
}

// Close stops the durability goroutine. Call it after the gRPC server has
// stopped, before closing the recorder.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.stopDur)
		<-s.durDone
	})
}

// Err returns the recorder error that stopped the server, or nil.
func (s *Server) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *Server) fail(err error) {
	if s.failed.CompareAndSwap(nil, &err) {
		s.log.Error("the recorder failed; streams are ended, restart the server to recover the ROOT", "err", err)
		s.health.Shutdown()
	}
}

// noteFailed logs each recording the recorder could not write, once.
func (s *Server) noteFailed(failed []*recorder.RecordingError) {
	s.recMu.Lock()
	defer s.recMu.Unlock()
	if s.failedRecs == nil {
		s.failedRecs = make(map[events.Recording]bool)
	}
	for _, e := range failed {
		k := events.Recording{SessionID: e.SessionID, EnvID: e.EnvID}
		if s.failedRecs[k] {
			continue
		}
		s.failedRecs[k] = true
		s.m.failedRecordings.Add(1)
		s.log.Error("a recording's files failed: its events are acknowledged from the log and written by the next recovery of ROOT once the cause is fixed",
			"session", e.SessionID, "env", e.EnvID, "path", e.Path, "err", e.Err)
	}
}

// durability is the goroutine that makes handed-over batches durable:
// whenever some are not, it flushes the recorder and publishes the
// ticket the flush covered. One flush (one log fsync) covers every batch
// of every stream handed over before it began.
func (s *Server) durability() {
	defer close(s.durDone)
	for {
		select {
		case <-s.kick:
		case <-s.stopDur:
			return
		}
		mark := s.tickets.Load()
		if mark == s.durable.Load() {
			continue
		}
		start := time.Now()
		err := s.rec.Flush(context.Background())
		s.m.flush.observe(time.Since(start).Seconds())
		if failed := recorder.RecordingErrors(err); failed != nil {
			// Recordings whose files failed: their events are durable in
			// the log all the same, which is what an acknowledgement
			// says (see the package doc).
			s.noteFailed(failed)
			err = nil
		}
		if err != nil {
			s.fail(fmt.Errorf("flush the recorder: %w", err))
			s.publish()
			return
		}
		s.durable.Store(mark)
		s.publish()
		if s.tickets.Load() != mark {
			s.wake()
		}
	}
}

func (s *Server) wake() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// publish wakes every stream waiting for durability.
func (s *Server) publish() {
	s.durMu.Lock()
	close(s.durableCh)
	s.durableCh = make(chan struct{})
	s.durMu.Unlock()
}

func (s *Server) durableChanged() <-chan struct{} {
	s.durMu.Lock()
	defer s.durMu.Unlock()
	return s.durableCh
}

// recording returns the state of a recording, creating it from what the
// recorder recovered.
func (s *Server) recording(sessionID, envID string) *recordingState {
	k := events.Recording{SessionID: sessionID, EnvID: envID}
	s.recMu.Lock()
	defer s.recMu.Unlock()
	st := s.recs[k]
	if st == nil {
		st = &recordingState{last: s.rec.RecoveredSequence(sessionID, envID)}
		if run, ok := s.rec.RecoveredRun(sessionID, envID); ok {
			st.nonce, st.nonceKnown, st.hashes = run.Nonce, run.Nonce != nil, run.Hashes
		}
		if st.last == 0 {
			var err error
			if st.published, err = s.rec.PublishedSequence(sessionID, envID); err != nil {
				s.log.Warn("cannot tell which resent events of a recording ROOT holds; they are recorded again as late parts",
					"session", sessionID, "env", envID, "err", err)
			}
			if st.published != 0 {
				if st.nonce, err = s.rec.PublishedRunNonce(sessionID, envID); err != nil {
					s.log.Warn("cannot tell which run recorded a recording ROOT holds",
						"session", sessionID, "env", envID, "err", err)
				}
				st.nonceKnown = st.nonce != nil
			}
		}
		s.recs[k] = st
	}
	return st
}

// pendingAck is a batch handed over and not yet acknowledged.
type pendingAck struct {
	batch   uint64
	ticket  uint64
	refused []*ingestv1.Refusal
	bytes   int64
}

// stream is the state of one Record call.
type stream struct {
	s   *Server
	gs  ingestv1.Ingest_RecordServer
	dec events.Decoder

	mu      sync.Mutex
	pending []pendingAck
	ended   bool // no more batches will be added
	last    uint64
	// refused holds the recordings whose SessionStarted this stream sent
	// for a recording open on the server: every later event of theirs on
	// this stream is refused too, not taken for a resend.
	// The value is why (the first refusal's message).
	refused map[events.Recording]string
	// poke wakes sendAcks when the stream ends.
	poke chan struct{}
	// lastNonce is a copy of the last run nonce an event of the stream
	// carried (nonce).
	lastNonce []byte
}

// nonce returns the run nonce of the event just decoded, nil when it has
// none, as a copy that the stream shares between events of one run.
func (st *stream) nonce() []byte {
	n := st.dec.RunNonce()
	if len(n) == 0 {
		return nil
	}
	if !bytes.Equal(n, st.lastNonce) {
		st.lastNonce = bytes.Clone(n)
	}
	return st.lastNonce
}

// Record serves one stream: see the package doc.
func (s *Server) Record(gs ingestv1.Ingest_RecordServer) error {
	s.streams.Add(1)
	defer s.streams.Done()
	s.m.streams.Add(1)
	defer s.m.streams.Add(-1)
	select {
	case <-s.draining:
		return status.Error(codes.Unavailable, ErrDraining.Error())
	default:
	}
	st := &stream{s: s, gs: gs, poke: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(gs.Context())
	defer cancel()

	// The receiver reads ahead by one request, so that a drain can end the
	// stream while Recv waits.
	type recv struct {
		req *ingestv1.RecordRequest
		err error
	}
	reqs := make(chan recv)
	go func() {
		for {
			req, err := gs.Recv()
			select {
			case reqs <- recv{req, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	acks := make(chan error, 1)
	go func() { acks <- st.sendAcks(ctx) }()

	finish := func(end error) error {
		st.mu.Lock()
		st.ended = true
		st.mu.Unlock()
		st.poke <- struct{}{}
		if end != nil && status.Code(end) != codes.Unavailable {
			// A broken stream: its acks can no longer be sent.
			cancel()
			<-acks
			return end
		}
		if err := <-acks; err != nil {
			return err
		}
		return end
	}
	for {
		var r recv
		select {
		case r = <-reqs:
		case <-s.draining:
			return finish(status.Error(codes.Unavailable, ErrDraining.Error()))
		case <-ctx.Done():
			// The client went away: the receiver may have seen the
			// stream's context end before it could hand over Recv's
			// error, and then sends nothing more.
			return finish(status.FromContextError(ctx.Err()).Err())
		}
		if r.err == io.EOF {
			return finish(nil)
		}
		if r.err != nil {
			return finish(r.err)
		}
		if err := st.handle(ctx, r.req); err != nil {
			return finish(err)
		}
	}
}

// handle hands over one batch's events and queues its acknowledgement.
func (st *stream) handle(ctx context.Context, req *ingestv1.RecordRequest) error {
	s := st.s
	if req.GetBatch() != st.last+1 {
		return status.Errorf(codes.InvalidArgument, "rlrec server: batch %d after batch %d: batches are numbered 1, 2, ... on each stream", req.GetBatch(), st.last)
	}
	if err := s.Err(); err != nil {
		return status.Errorf(codes.Unavailable, "rlrec server: %v", err)
	}
	st.last = req.GetBatch()
	p := pendingAck{batch: req.GetBatch()}
	for i, msg := range req.GetEvents() {
		p.bytes += int64(len(msg))
		ref, err := st.event(ctx, msg)
		if err != nil {
			return err
		}
		if ref != nil {
			ref.Batch, ref.Index = req.GetBatch(), uint32(i)
			p.refused = append(p.refused, ref)
			s.m.refused[ref.Reason].Add(1)
		}
	}
	s.m.batches.Add(1)
	s.m.bytes.Add(p.bytes)
	s.m.unacked.Add(p.bytes)
	p.ticket = s.tickets.Add(1)
	st.mu.Lock()
	st.pending = append(st.pending, p)
	st.mu.Unlock()
	s.wake()
	return nil
}

// event hands over one event, unless the server has it. It returns a
// refusal for an event it does not record, and an error that ends the
// stream when the event could not be handed over (the stream is gone, or
// the recorder failed); the event then stays unacknowledged.
func (st *stream) event(ctx context.Context, msg []byte) (*ingestv1.Refusal, error) {
	s := st.s
	ev, at, err := st.dec.Decode(msg)
	if err != nil {
		return s.invalid(ctx, msg, err), nil
	}
	seq := st.dec.Sequence()
	sid, route := ev.Header()
	if seq == 0 {
		return &ingestv1.Refusal{SessionId: sid, EnvId: route.EnvID, Reason: ingestv1.RefusalReason_REFUSAL_REASON_NO_SEQUENCE,
			Message: fmt.Sprintf("%s event of session %q (env_id %q) has no sequence number", ev.Kind(), sid, route.EnvID)}, nil
	}
	stamped := !at.IsZero()
	key := events.Recording{SessionID: sid, EnvID: route.EnvID}
	if why, ok := st.refused[key]; ok {
		return &ingestv1.Refusal{SessionId: sid, EnvId: route.EnvID, Sequence: seq, Reason: ingestv1.RefusalReason_REFUSAL_REASON_RECORDER,
			Message: fmt.Sprintf("%s of session %q (env_id %q): an earlier event of this stream's run of the recording was refused, and so is the rest: %s", ev.Kind(), sid, route.EnvID, why)}, nil
	}
	rs := s.recording(sid, route.EnvID)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	run := recorder.Run{Nonce: st.nonce(), Hash: runid.ContentHash(msg)}
	if len(run.Nonce) == 0 && seq == 1 {
		// A run without a nonce: one derived from its first event.
		run.Nonce, run.Derived = runid.Derive(msg), true
	}
	if ref := st.checkRun(rs, key, ev, seq, run); ref != nil {
		return ref, nil
	}
	known := rs.last
	if ev.Kind() != events.KindSessionStarted {
		known = max(known, rs.published)
	}
	if seq <= known {
		if ref := st.checkResend(rs, key, ev, seq, run); ref != nil {
			return ref, nil
		}
		if ev.Kind() == events.KindSessionStarted && rs.started != nil && !bytes.Equal(rs.started, msg) {
			// Not a resend: a second run reusing an open recording's ids.
			return st.refuseRun(key, ev, seq, fmt.Sprintf("SessionStarted of session %q (env_id %q) differs from the one this server recorded (%d events so far): another run with the same ids is still recording it; nothing of this run is recorded (give it another session id)", sid, route.EnvID, rs.last)), nil
		}
		s.m.duplicates.Add(1)
		return nil, nil
	}
	if seq > known+1 {
		// Acknowledging it would let the recording's later events pass
		// for resent ones and be dropped: a protocol error. Nothing of
		// the batch is acknowledged; the events before it stay recorded.
		s.m.gaps.Add(1)
		s.log.Warn("sequence gap: stream refused (a client that lost events it had not sent, or a forged sequence)",
			"session", sid, "env", route.EnvID, "after", known, "got", seq)
		return nil, status.Errorf(codes.InvalidArgument, "rlrec server: %s of session %q (env_id %q) has sequence %d, but the server's last of that recording is %d: a recording's events are numbered 1, 2, ... without a gap; the stream is refused and its batch not acknowledged",
			ev.Kind(), sid, route.EnvID, seq, known)
	}
	switch {
	case st.dec.RecorderClock():
		// A replayed recording whose times were a recorder's: the log
		// record says so (re-encoded).
		err = s.rec.RecordStampedRun(ctx, ev, at, seq, run)
	case stamped:
		// The log keeps the client's bytes: no second encode.
		err = s.rec.RecordEncodedRun(ctx, msg, ev, at, seq, run)
	default:
		// No time: the recorder stamps its clock, and says so.
		err = s.rec.RecordSequencedRun(ctx, ev, time.Time{}, seq, run)
	}
	switch {
	case err == nil:
		rs.last = seq
		rs.hashes.Add(seq, run.Hash)
		if !rs.nonceKnown && len(run.Nonce) > 0 {
			rs.nonce, rs.nonceKnown = bytes.Clone(run.Nonce), true
		}
		if ev.Kind() == events.KindSessionStarted && rs.started == nil {
			rs.started = bytes.Clone(msg)
		}
		s.m.events.Add(1)
		return nil, nil
	case ctx.Err() != nil:
		return nil, status.FromContextError(ctx.Err()).Err()
	case errors.Is(err, recorder.ErrFailed), errors.Is(err, recorder.ErrClosed):
		s.fail(err)
		return nil, status.Errorf(codes.Unavailable, "rlrec server: %v", err)
	}
	rs.last = seq
	if errors.Is(err, recorder.ErrRecordingExists) {
		// The recording's later events go to the recorder, which refuses
		// them too, instead of passing for resent ones.
		rs.published = 0
	}
	return &ingestv1.Refusal{SessionId: sid, EnvId: route.EnvID, Sequence: seq,
		Reason: ingestv1.RefusalReason_REFUSAL_REASON_RECORDER, Message: err.Error()}, nil
}

// invalid refuses a message that does not decode. A well-formed message
// that is no valid event is counted in the recording it names, as
// rlrec ingest does.
func (s *Server) invalid(ctx context.Context, msg []byte, err error) *ingestv1.Refusal {
	ref := &ingestv1.Refusal{Reason: ingestv1.RefusalReason_REFUSAL_REASON_MALFORMED, Message: err.Error()}
	if !errors.Is(err, events.ErrUnknownKind) && !errors.Is(err, events.ErrUnknownEnum) {
		return ref
	}
	// The stream reader describes an invalid event with its header.
	framed := protowire.AppendVarint(make([]byte, 0, len(msg)+10), uint64(len(msg)))
	r := events.NewStreamReader(bytes.NewReader(append(framed, msg...)), len(msg)+1)
	r.Next()
	var bad *events.InvalidEventError
	if !errors.As(r.Err(), &bad) {
		return ref
	}
	ref.Reason = ingestv1.RefusalReason_REFUSAL_REASON_INVALID_EVENT
	ref.SessionId, ref.EnvId = bad.SessionID, bad.Route.EnvID
	at := bad.Time
	if at.IsZero() {
		at = time.Now()
	}
	if err := s.rec.RecordInvalid(ctx, bad, at); err != nil {
		ref.Message += "; " + err.Error()
	}
	return ref
}

// sendAcks sends the acknowledgement of every pending batch once it is
// durable, until the stream has ended and nothing is pending.
func (st *stream) sendAcks(ctx context.Context) error {
	s := st.s
	for {
		ch := s.durableChanged()
		if err := s.Err(); err != nil {
			return status.Errorf(codes.Unavailable, "rlrec server: %v", err)
		}
		d := s.durable.Load()
		st.mu.Lock()
		n := 0
		for n < len(st.pending) && st.pending[n].ticket <= d {
			n++
		}
		done := st.ended && n == len(st.pending)
		var resp *ingestv1.RecordResponse
		var acked int64
		if n > 0 {
			resp = &ingestv1.RecordResponse{DurableBatch: st.pending[n-1].batch}
			for _, p := range st.pending[:n] {
				resp.Refused = append(resp.Refused, p.refused...)
				acked += p.bytes
			}
			st.pending = append(st.pending[:0], st.pending[n:]...)
		}
		st.mu.Unlock()
		if resp != nil {
			s.m.unacked.Add(-acked)
			if err := st.gs.Send(resp); err != nil {
				return err
			}
		}
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-st.poke:
		case <-ctx.Done():
			st.mu.Lock()
			var left int64
			for _, p := range st.pending {
				left += p.bytes
			}
			st.pending = nil
			st.mu.Unlock()
			s.m.unacked.Add(-left)
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}
