package client

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDialRefusesOptions: Dial refuses an option value the client cannot
// work with, naming it, before it connects (no server listens here).
func TestDialRefusesOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  Option
		want string
	}{
		{"unacked bound below 1 MiB", WithMaxUnacked(1<<20 - 1), "max unacknowledged bytes 1048575 is below 1 MiB"},
		{"message size below 64 KiB", WithMaxMessageBytes(64<<10 - 1), "max message size 65535 bytes is below 64 KiB"},
		{"batch of no bytes", WithBatchBytes(0), "batch size 0 bytes must be positive"},
		{"backoff max below min", WithBackoff(time.Second, time.Millisecond), "want 0 < min <= max"},
		{"nil logger", WithLogger(nil), "nil logger"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(context.Background(), "127.0.0.1:1", tc.opt)
			if err == nil {
				c.Close(context.Background())
				t.Fatal("Dial accepted it")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Dial: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestMaxUnackedApplies: the bound WithMaxUnacked sets is the one hooks
// wait on (the default is 64 MiB).
func TestMaxUnackedApplies(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want int64
	}{
		{"default", nil, 64 << 20},
		{"set", []Option{WithMaxUnacked(3 << 20)}, 3 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultOptions()
			for _, opt := range tc.opts {
				opt(&o)
			}
			if err := o.validate(); err != nil || o.maxUnacked != tc.want {
				t.Fatalf("max unacknowledged bytes %d (%v), want %d", o.maxUnacked, err, tc.want)
			}
		})
	}
}
