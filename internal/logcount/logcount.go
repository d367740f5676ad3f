// Package logcount is a slog.Handler that counts the records it is given
// by message, for tests that assert what a library logged (how many
// uploads a recovery completed, how many files it took back). It imports
// nothing of rlrec, so that internal and external test packages alike
// can use it.
package logcount

import (
	"context"
	"log/slog"
	"sync"
)

// Handler counts records by message. Its zero value is ready; it is safe
// for concurrent use, and its attributes and groups are ignored.
type Handler struct {
	mu sync.Mutex
	n  map[string]int
}

// Enabled implements slog.Handler: every level is counted.
func (h *Handler) Enabled(context.Context, slog.Level) bool { return true }

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[r.Message]++
	return nil
}

// WithAttrs implements slog.Handler; the counts are shared.
func (h *Handler) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler; the counts are shared.
func (h *Handler) WithGroup(string) slog.Handler { return h }

// Count returns how many records had message msg.
func (h *Handler) Count(msg string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[msg]
}
