package client

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"
)

type options struct {
	token      string
	tls        *tls.Config
	maxUnacked int64
	maxMessage int
	batchBytes int
	minBackoff time.Duration
	maxBackoff time.Duration
	logger     *slog.Logger
}

func defaultOptions() options {
	return options{
		maxUnacked: 64 << 20,
		maxMessage: 64 << 20,
		batchBytes: 1 << 20,
		minBackoff: 50 * time.Millisecond,
		maxBackoff: 5 * time.Second,
		logger:     slog.New(slog.DiscardHandler),
	}
}

func (o *options) validate() error {
	switch {
	case o.maxUnacked < 1<<20:
		return fmt.Errorf("client: max unacknowledged bytes %d is below 1 MiB", o.maxUnacked)
	case o.maxMessage < 64<<10:
		return fmt.Errorf("client: max message size %d bytes is below 64 KiB", o.maxMessage)
	case o.batchBytes <= 0:
		return fmt.Errorf("client: batch size %d bytes must be positive", o.batchBytes)
	case o.minBackoff <= 0 || o.maxBackoff < o.minBackoff:
		return fmt.Errorf("client: backoff %v..%v: want 0 < min <= max", o.minBackoff, o.maxBackoff)
	case o.logger == nil:
		return fmt.Errorf("client: nil logger")
	}
	return nil
}

// Option configures a Client.
type Option func(*options)

// WithToken sends token with every call, as the server's --token-file
// requires.
func WithToken(token string) Option { return func(o *options) { o.token = token } }

// WithTLS connects over TLS with cfg (nil: plaintext, the default, for a
// server on loopback).
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithMaxUnacked bounds the bytes of events not yet acknowledged (default
// 64 MiB); hooks wait while it is full.
func WithMaxUnacked(bytes int64) Option { return func(o *options) { o.maxUnacked = bytes } }

// WithMaxMessageBytes sets the largest message sent, which must not exceed
// the server's --max-message (default 64 MiB, the server's default).
func WithMaxMessageBytes(bytes int) Option { return func(o *options) { o.maxMessage = bytes } }

// WithBatchBytes sets how many bytes of events one message gathers at
// most (default 1 MiB); a larger event goes alone.
func WithBatchBytes(bytes int) Option { return func(o *options) { o.batchBytes = bytes } }

// WithBackoff sets the reconnection delays: the first retry waits min,
// each next one longer, up to max (default 50 ms to 5 s).
func WithBackoff(min, max time.Duration) Option {
	return func(o *options) { o.minBackoff, o.maxBackoff = min, max }
}

// WithLogger sets the logger for reconnections and refused events; by
// default nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }
