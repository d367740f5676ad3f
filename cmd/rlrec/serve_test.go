package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/roottest"
)

// startServe runs 'rlrec serve' with args in process until the returned
// stop is called (as SIGTERM would), and returns its gRPC address.
func startServe(t *testing.T, args ...string) (addr string, stop func() (int, string)) {
	t.Helper()
	addr, _, stop = startServeMetrics(t, args...)
	return addr, stop
}

// startServeMetrics is startServe that also returns the URL of the
// server's metrics.
func startServeMetrics(t *testing.T, args ...string) (addr, metrics string, stop func() (int, string)) {
	t.Helper()
	var errb roottest.SyncBuffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &errb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, env, append([]string{"serve", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0"}, args...))
	}()
	re := regexp.MustCompile(`listening on (127\.0\.0\.1:\d+), metrics on (\S+)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(errb.String()); m != nil {
			addr, metrics = m[1], m[2]
			break
		}
		select {
		case c := <-code:
			t.Fatalf("serve exited %d before listening: %s", c, errb.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve not listening after 30 s: %s", errb.String())
		}
	}
	return addr, metrics, func() (int, string) {
		cancel()
		return <-code, errb.String()
	}
}

// TestServeSimulateTo serves a ROOT, sends simulated sessions to it with
// 'simulate --to', with and without the token the server wants, and stops
// the server as SIGTERM does: what was acknowledged is in the tables.
func TestServeSimulateTo(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	tok := filepath.Join(dir, "token")
	wrong := filepath.Join(dir, "wrong")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wrong, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, stop := startServe(t, "--out", root, "--token-file", tok)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no token", []string{"--seed", "1"}, 1, "token refused"},
		{"wrong token", []string{"--seed", "2", "--token-file", wrong}, 1, "token refused"},
		{"right token", []string{"--seed", "3", "--token-file", tok, "--sessions", "2"}, 0, "acknowledged durable"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"simulate", "--env", "cartpole", "--envs", "4", "--episodes", "20", "--to", addr}, tc.args...)
			code, _, errOut := runCmd(t, args...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("simulate %s: exit %d, stderr %q; want %d and %q", tc.name, code, errOut, tc.wantCode, tc.wantErr)
			}
		})
	}
	code, errOut := stop()
	if code != 0 || !strings.Contains(errOut, "drained and closed") {
		t.Fatalf("serve: exit %d: %s", code, errOut)
	}
	ds, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := ds.Sessions()
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 2 {
		t.Fatalf("%d recordings in ROOT, want the 2 sent with the right token", len(sessions))
	}
	for _, s := range sessions {
		if r := s.Row(); r == nil || r.Status != "ended" || r.Problems != 0 || r.EpisodesRecorded < 20 {
			t.Errorf("recording %v: %+v", s.Recording, r)
		}
	}
	if code, out, _ := runCmd(t, "verify", root); code != 0 {
		t.Errorf("verify: exit %d: %s", code, out)
	}
}

// TestServeRefuses: what serve refuses before it listens.
func TestServeRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared-token")
	if err := os.WriteFile(shared, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"non-loopback without a token", []string{"--listen", "0.0.0.0:0"}, 1, "not loopback"},
		{"every interface without a token", []string{"--listen", ":0"}, 1, "not loopback"},
		{"metrics on every interface without a token", []string{"--metrics-listen", ":0"}, 1, "--metrics-listen"},
		{"metrics non-loopback without a token", []string{"--metrics-listen", "0.0.0.0:0"}, 1, "not loopback"},
		{"token file readable by others", []string{"--token-file", shared, "--tls-cert", empty, "--tls-key", empty}, 1, "can be read by other users"},
		{"empty token file", []string{"--token-file", empty}, 1, "one non-empty line"},
		{"missing token file", []string{"--token-file", filepath.Join(dir, "none")}, 1, "read token file"},
		{"cert without key", []string{"--tls-cert", empty}, 2, "go together"},
		{"unreadable cert", []string{"--tls-cert", empty, "--tls-key", empty}, 1, "load --tls-cert"},
		{"small messages", []string{"--max-message", "100"}, 2, "at least 65536"},
		{"argument", []string{"extra"}, 2, "unexpected argument"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--out", filepath.Join(dir, "root"), "--metrics-listen", ""}, tc.args...)
			code, _, errOut := runCmd(t, args...)
			if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, errOut, tc.wantCode, tc.wantErr)
			}
		})
	}
}

// TestServeBindFailureLeavesNoRoot: serve that cannot bind its address
// (or its metrics address) exits 1 and creates no ROOT.
func TestServeBindFailureLeavesNoRoot(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"listen", []string{"--listen", busy.Addr().String(), "--metrics-listen", ""}},
		{"metrics", []string{"--listen", "127.0.0.1:0", "--metrics-listen", busy.Addr().String()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "root")
			code, _, errOut := runCmd(t, append([]string{"serve", "-o", root}, tc.args...)...)
			if code != 1 || !strings.Contains(errOut, busy.Addr().String()) {
				t.Errorf("exit %d: %s; want 1 naming the address", code, errOut)
			}
			if _, err := os.Stat(root); !os.IsNotExist(err) {
				t.Errorf("a failed serve left %s behind: %v", root, err)
			}
		})
	}
}
