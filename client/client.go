package client

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/internal/runid"
)

// Client streams events to an rlrec serve; see the package doc.
type Client struct {
	opts options
	addr string
	cc   *grpc.ClientConn
	ic   ingestv1.IngestClient

	ctx    context.Context // ends the sender
	cancel context.CancelFunc
	done   chan struct{} // closed when the sender has returned

	// wake tells the sender that events were queued (capacity 1).
	wake chan struct{}

	// nonce is this client's run nonce, drawn at Dial and sent on every
	// event (eventsv1.Event.run_nonce): the server tells this run's
	// resent events from another run that reuses a recording's ids by
	// it, also after a restart.
	nonce [runid.NonceBytes]byte

	mu sync.Mutex
	// next is the last sequence number given in each recording.
	next map[events.Recording]uint64
	// q holds the events not yet acknowledged, oldest first; q[:sent]
	// were sent on the current stream, in the batches listed in batches.
	q       []entry
	sent    int
	batches []sentBatch
	bytes   int64  // the bytes q holds
	queued  uint64 // events ever queued
	acked   uint64 // events ever acknowledged (q's first is number acked+1)
	// changed is closed and replaced whenever acks free room or a
	// failure ends the client.
	changed chan struct{}
	closing bool
	closed  bool
	fatal   error
	// Refusals since the last Flush.
	refusedN     int
	refusedFirst string
	stats        Stats
}

// entry is a queued event: its encoded bytes and what it is charged.
type entry struct {
	buf    *[]byte
	charge int64
}

// sentBatch is a batch sent on the current stream: its number and how
// many events of q it holds.
type sentBatch struct {
	no uint64
	n  int
}

// probeEvery is how often a Dial that keeps failing probes the address
// (Dial's doc says 5 seconds).
const probeEvery = 5 * time.Second

// Stats are a client's running totals.
type Stats struct {
	// Queued and Acked count events handed over and acknowledged
	// (refused ones included).
	Queued, Acked uint64
	// Refused counts the events the server refused.
	Refused uint64
	// Streams counts the streams opened, Reconnects the ones after a
	// broken stream.
	Streams, Reconnects uint64
	// Batches counts batches sent, resent ones included; Resent counts
	// events sent again on a new stream.
	Batches, Resent uint64
	// UnackedBytes is what the unacknowledged events hold now.
	UnackedBytes int64
}

var _ events.Hooks = (*Client)(nil)

// Dial connects to the rlrec serve at addr ("host:port") and returns a
// Client that streams to it. It waits until the connection is up or ctx
// is done (a server that goes away and comes back on addr while Dial
// waits, even one lost just after the connection's handshake, is waited
// for); after that the client reconnects by itself whenever the
// connection drops. A connection that fails for a reason waiting cannot
// mend ends Dial at once, with ErrServerTLS (the server speaks TLS: dial
// WithTLS), ErrServerPlaintext (it does not) or ErrUntrusted (its
// certificate is not trusted): Dial probes the address once the
// connection fails (one TCP connection and a TLS handshake, at most every
// 5 seconds).
func Dial(ctx context.Context, addr string, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	creds := insecure.NewCredentials()
	if o.tls != nil {
		creds = credentials.NewTLS(o.tls)
	}
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(o.maxMessage), grpc.MaxCallRecvMsgSize(o.maxMessage)),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: o.minBackoff, Multiplier: 1.6, Jitter: 0.2, MaxDelay: o.maxBackoff},
			MinConnectTimeout: 2 * time.Second,
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	if err := waitReady(ctx, cc, addr, o.tls); err != nil {
		cc.Close()
		return nil, fmt.Errorf("client: dial %s: %w", addr, err)
	}
	c := &Client{
		opts: o, addr: addr, cc: cc, ic: ingestv1.NewIngestClient(cc),
		done:    make(chan struct{}),
		wake:    make(chan struct{}, 1),
		next:    make(map[events.Recording]uint64),
		changed: make(chan struct{}),
	}
	if _, err := crand.Read(c.nonce[:]); err != nil {
		cc.Close()
		return nil, fmt.Errorf("client: dial %s: draw the run nonce: %w", addr, err)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.run()
	return c, nil
}

// Record hands over ev, observed at the client's clock (the time of the
// hook call, which the event then carries): the hooks call it. It returns
// once ev is queued, waiting (within ctx) while the unacknowledged events
// fill WithMaxUnacked.
func (c *Client) Record(ctx context.Context, ev events.Event) error {
	return c.RecordAt(ctx, ev, time.Now())
}

// RecordAt hands over ev observed at t, like Record: a producer that knows
// when the hook was called (a simulated runtime's clock, events.DispatchAt)
// keeps that time. The zero t means the client's clock.
func (c *Client) RecordAt(ctx context.Context, ev events.Event, t time.Time) error {
	if ev == nil {
		return fmt.Errorf("client: record: %w", events.ErrNilEvent)
	}
	if t.IsZero() {
		t = time.Now()
	}
	bp := getBuf(estimate(ev))
	b, err := events.AppendMarshal((*bp)[:0], ev, t)
	if err != nil {
		putBuf(bp)
		sid, _ := ev.Header()
		return fmt.Errorf("client: record %s of session %q: %w", ev.Kind(), sid, err)
	}
	// The run nonce (18 bytes), the sequence (at most 11 bytes) and a
	// batch's framing must fit.
	b = events.AppendRunNonce(b, c.nonce[:])
	if len(b)+32 > c.opts.maxMessage {
		putBuf(bp)
		sid, _ := ev.Header()
		return fmt.Errorf("client: record %s of session %q: %d bytes, over the %d-byte message limit (WithMaxMessageBytes, the server's --max-message): %w",
			ev.Kind(), sid, len(b), c.opts.maxMessage, ErrEventTooLarge)
	}
	size := int64(cap(b))
	sid, route := ev.Header()
	k := events.Recording{SessionID: sid, EnvID: route.EnvID}
	c.mu.Lock()
	for c.bytes > 0 && c.bytes+size > c.opts.maxUnacked && c.fatal == nil && !c.closed {
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			putBuf(bp)
			return fmt.Errorf("client: record %s of session %q: waiting for room among unacknowledged events: %w", ev.Kind(), sid, ctx.Err())
		}
		c.mu.Lock()
	}
	if err := c.usable(); err != nil {
		c.mu.Unlock()
		putBuf(bp)
		return err
	}
	seq := c.next[k] + 1
	c.next[k] = seq
	*bp = events.AppendSequence(b, seq)
	c.q = append(c.q, entry{bp, size})
	c.bytes += size
	c.queued++
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	return nil
}

// usable returns the error a call gets from a closed or failed client;
// c.mu is held.
func (c *Client) usable() error {
	if c.fatal != nil {
		return c.fatal
	}
	if c.closed || c.closing {
		return ErrClosed
	}
	return nil
}

// Flush returns once every event handed over before it is acknowledged
// by the server: durable in its recorder's log, or refused. It reports
// the events refused since the last Flush (wrapping ErrRefused).
func (c *Client) Flush(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	err := c.waitAcked(ctx, c.queued)
	c.mu.Unlock()
	return err
}

// waitAcked waits until events up to number target are acknowledged and
// returns the refusals since the last call; c.mu is held.
func (c *Client) waitAcked(ctx context.Context, target uint64) error {
	for c.acked < target && c.fatal == nil {
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			return fmt.Errorf("client: flush: %d events still unacknowledged by %s: %w", target-c.acked, c.addr, ctx.Err())
		}
		c.mu.Lock()
	}
	if c.fatal != nil {
		return c.fatal
	}
	if c.refusedN > 0 {
		err := fmt.Errorf("client: flush: %d events refused by %s, the first: %s: %w", c.refusedN, c.addr, c.refusedFirst, ErrRefused)
		c.refusedN, c.refusedFirst = 0, ""
		return err
	}
	return nil
}

// Close flushes (see Flush), ends the stream and closes the connection.
// When ctx ends first, what is not acknowledged is lost to this client:
// the error says how much.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed || c.closing {
		c.mu.Unlock()
		return ErrClosed
	}
	c.closing = true
	err := c.waitAcked(ctx, c.queued)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if err == nil || errors.Is(err, ErrRefused) {
		// The sender ends its stream cleanly once the queue is empty.
		select {
		case <-c.done:
		case <-ctx.Done():
		}
	}
	c.cancel()
	<-c.done
	c.mu.Lock()
	c.closed = true
	for i := range c.q {
		putBuf(c.q[i].buf)
	}
	c.q, c.bytes = nil, 0
	c.mu.Unlock()
	if cerr := c.cc.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("client: close connection: %w", cerr)
	}
	return err
}

// Stats returns the client's running totals.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Queued, st.Acked, st.UnackedBytes = c.queued, c.acked, c.bytes
	return st
}

// run is the sender goroutine: one stream at a time, reconnecting with
// backoff when one breaks.
func (c *Client) run() {
	defer close(c.done)
	delay := c.opts.minBackoff
	for c.ctx.Err() == nil {
		before := c.Stats().Acked
		err := c.stream()
		if err == nil || c.ctx.Err() != nil {
			return
		}
		if code := status.Code(err); code == codes.Unauthenticated || code == codes.PermissionDenied {
			c.mu.Lock()
			c.fatal = fmt.Errorf("client: %s: %w: %v", c.addr, ErrUnauthenticated, err)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			c.opts.logger.Error("the server refused the token; the client stops", "addr", c.addr, "err", err)
			return
		}
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(status.Convert(err).Message(), "larger than max") {
			// The server takes smaller messages than this client sends:
			// resending the same batch can never succeed.
			c.mu.Lock()
			c.fatal = fmt.Errorf("client: %s: a batch of events is larger than the server's maximum message size (%s; sizes in bytes, the batch first), while this client sends messages of up to %d bytes (WithMaxMessageBytes): %w; give the client the server's --max-message, or raise the server's",
				c.addr, status.Convert(err).Message(), c.opts.maxMessage, ErrEventTooLarge)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			c.opts.logger.Error("the server refused a message as too large; the client stops", "addr", c.addr, "err", err, "client_max_message_bytes", c.opts.maxMessage)
			return
		}
		if c.Stats().Acked > before {
			delay = c.opts.minBackoff
		}
		c.opts.logger.Warn("stream to the server broke; reconnecting and resending what is unacknowledged", "addr", c.addr, "err", err, "retry_in", delay)
		// Full jitter keeps many clients of a restarted server apart.
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-time.After(wait):
		case <-c.ctx.Done():
			return
		}
		delay = min(2*delay, c.opts.maxBackoff)
	}
}

// stream runs one Record stream: it sends every unacknowledged event in
// batches and takes acknowledgements, until the stream breaks (the error)
// or the client closes with nothing left to send (nil).
func (c *Client) stream() error {
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	if c.opts.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, ingestv1.AuthorizationKey, "Bearer "+c.opts.token)
	}
	s, err := c.ic.Record(ctx, grpc.WaitForReady(true))
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.stats.Streams++
	if c.stats.Streams > 1 {
		c.stats.Reconnects++
		c.stats.Resent += uint64(len(c.q))
	}
	c.sent, c.batches = 0, c.batches[:0]
	c.mu.Unlock()

	acks := make(chan error, 1)
	go func() { acks <- c.takeAcks(s) }()
	var no uint64
	req := &ingestv1.RecordRequest{}
	for {
		c.mu.Lock()
		for c.sent == len(c.q) {
			if c.closing && len(c.q) == 0 {
				c.mu.Unlock()
				s.CloseSend()
				if err := <-acks; err != io.EOF && err != nil {
					return err
				}
				return nil
			}
			c.mu.Unlock()
			select {
			case <-c.wake:
			case err := <-acks:
				return brokenStream(err)
			case <-ctx.Done():
				return ctx.Err()
			}
			c.mu.Lock()
		}
		no++
		req.Batch, req.Events = no, req.Events[:0]
		size := 0
		for c.sent < len(c.q) {
			b := *c.q[c.sent].buf
			if len(req.Events) > 0 && size+len(b)+8 > min(c.opts.batchBytes, c.opts.maxMessage-64) {
				break
			}
			req.Events = append(req.Events, b)
			size += len(b) + 8
			c.sent++
		}
		c.batches = append(c.batches, sentBatch{no: no, n: len(req.Events)})
		c.stats.Batches++
		c.mu.Unlock()
		// Send copies the events into its message before it returns, and
		// before the server can acknowledge them (which frees them).
		if err := s.Send(req); err != nil {
			if err == io.EOF {
				// The server ended the stream: its status says why.
				return brokenStream(<-acks)
			}
			return err
		}
		clear(req.Events)
	}
}

// brokenStream turns the end of the acknowledgements into the stream's
// error: an io.EOF without a status is still a broken stream.
func brokenStream(err error) error {
	if err == nil || err == io.EOF {
		return status.Error(codes.Unavailable, "the server ended the stream")
	}
	return err
}

// takeAcks receives acknowledgements and drops what they cover from q.
func (c *Client) takeAcks(s ingestv1.Ingest_RecordClient) error {
	for {
		resp, err := s.Recv()
		if err != nil {
			return err
		}
		c.mu.Lock()
		n := 0
		for len(c.batches) > 0 && c.batches[0].no <= resp.GetDurableBatch() {
			n += c.batches[0].n
			c.batches = c.batches[1:]
		}
		if n > c.sent {
			c.mu.Unlock()
			return status.Errorf(codes.Internal, "server acknowledged batch %d, beyond what was sent", resp.GetDurableBatch())
		}
		for i := range n {
			c.bytes -= c.q[i].charge
			putBuf(c.q[i].buf)
			c.q[i] = entry{}
		}
		c.q = c.q[n:]
		c.sent -= n
		c.acked += uint64(n)
		for _, r := range resp.GetRefused() {
			c.refusedN++
			c.stats.Refused++
			if c.refusedFirst == "" {
				c.refusedFirst = fmt.Sprintf("event %d of recording (session %q, env %q): %s", r.GetSequence(), r.GetSessionId(), r.GetEnvId(), r.GetMessage())
			}
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		for _, r := range resp.GetRefused() {
			c.opts.logger.Warn("the server refused an event", "session", r.GetSessionId(), "env", r.GetEnvId(),
				"sequence", r.GetSequence(), "reason", r.GetReason().String(), "err", r.GetMessage())
		}
	}
}

// The events.Hooks methods: each hands its event to Record.

func (c *Client) OnEnvConnected(ctx context.Context, ev *events.EnvConnected) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnModelConnected(ctx context.Context, ev *events.ModelConnected) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnSessionStarted(ctx context.Context, ev *events.SessionStarted) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnSessionEnded(ctx context.Context, ev *events.SessionEnded) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnSessionFailed(ctx context.Context, ev *events.SessionFailed) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnLog(ctx context.Context, ev *events.Log) error { return c.Record(ctx, ev) }

func (c *Client) OnEpisodeStarted(ctx context.Context, ev *events.EpisodeStarted) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnEpisodeCompleted(ctx context.Context, ev *events.EpisodeCompleted) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnActionReceived(ctx context.Context, ev *events.ActionReceived) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnStepCompleted(ctx context.Context, ev *events.StepCompleted) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnObservationEmitted(ctx context.Context, ev *events.ObservationEmitted) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnTelemetrySnapshot(ctx context.Context, ev *events.TelemetrySnapshot) error {
	return c.Record(ctx, ev)
}

func (c *Client) OnRelayAdvisory(ctx context.Context, ev *events.RelayAdvisory) error {
	return c.Record(ctx, ev)
}

// Encode buffers come from pools by power-of-two capacity, so that an
// image stream reuses its buffers instead of allocating one per event.
var bufPools [28]sync.Pool // 1 KiB << i

// estimate guesses the encoded size of ev: its payload plus ids.
func estimate(ev events.Event) int {
	n := 512
	switch e := ev.(type) {
	case *events.ActionReceived:
		for _, l := range e.Action {
			n += len(l) + 8
		}
		n += 48 * (len(e.EpisodeIDs) + len(e.EpisodeRecordIDs))
	case *events.ObservationEmitted:
		for _, l := range e.Observation {
			n += len(l) + 8
		}
		n += 48 * (len(e.EpisodeIDs) + len(e.EpisodeRecordIDs))
	case *events.StepCompleted:
		n += 8 * len(e.Rewards)
	}
	return n
}

func poolIndex(n int) int {
	if n <= 1<<10 {
		return 0
	}
	return bits.Len(uint(n-1)) - 10
}

func getBuf(n int) *[]byte {
	i := poolIndex(n)
	if i >= len(bufPools) {
		b := make([]byte, 0, n)
		return &b
	}
	if bp, ok := bufPools[i].Get().(*[]byte); ok {
		return bp
	}
	b := make([]byte, 0, 1<<(10+i))
	return &b
}

func putBuf(bp *[]byte) {
	// The largest class it fills: cap >= 1 KiB << i.
	i := bits.Len(uint(cap(*bp))) - 11
	if i < 0 || i >= len(bufPools) {
		return
	}
	*bp = (*bp)[:0]
	bufPools[i].Put(bp)
}

// RunNonce returns this client's run nonce: 16 random bytes drawn at
// Dial and sent on every event, by which the server tells this run from
// another that reuses its session and env ids.
func (c *Client) RunNonce() []byte { return append([]byte(nil), c.nonce[:]...) }
