package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/testcert"
	"github.com/rlrec/rlrec/sim"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and localhost
// (its own CA) and its key as PEM files in dir, and returns their paths
// and a pool that trusts it.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	c := testcert.New(t)
	certFile, keyFile = c.WriteFiles(t, dir)
	return certFile, keyFile, c.Pool
}

// healthCheck calls the health service at addr with creds within a few
// seconds.
func healthCheck(addr string, creds credentials.TransportCredentials) error {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err == nil && resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		err = errors.New(resp.GetStatus().String())
	}
	return err
}

// TestServeTLS serves over TLS with a token: the Go client (TLS and the
// token) and 'simulate --to --tls-ca' record sessions, which are in the
// tables; a plaintext client, and a TLS client that does not trust the
// certificate, get no connection and record nothing.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	certFile, keyFile, pool := selfSigned(t, dir)
	tok := filepath.Join(dir, "token")
	if err := os.WriteFile(tok, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, stop := startServe(t, "--out", root, "--tls-cert", certFile, "--tls-key", keyFile, "--token-file", tok)
	trusted := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}

	// Refused: plaintext, and TLS without trusting the certificate.
	for _, c := range []struct {
		name  string
		creds credentials.TransportCredentials
	}{
		{"plaintext", insecure.NewCredentials()},
		{"untrusted certificate", credentials.NewTLS(&tls.Config{RootCAs: x509.NewCertPool()})},
	} {
		if err := healthCheck(addr, c.creds); status.Code(err) != codes.Unavailable && status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("%s health check: %v, want no connection", c.name, err)
		}
	}
	if err := healthCheck(addr, credentials.NewTLS(trusted)); err != nil {
		t.Errorf("TLS health check: %v", err)
	}
	cfg := sim.Config{Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 10, Seed: 7, LateWindow: true}
	// The Go client in plaintext gets no connection: Dial says why at
	// once (client.ErrServerTLS), and so does simulate without --tls-ca.
	func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := client.Dial(ctx, addr, client.WithToken("s3cret"))
		if err == nil {
			c.Close(ctx)
			t.Fatal("a plaintext client connected to a TLS server")
		}
		if !errors.Is(err, client.ErrServerTLS) || ctx.Err() != nil {
			t.Errorf("plaintext Dial = %v, want client.ErrServerTLS before the deadline", err)
		}
	}()
	if code, _, errOut := runCmd(t, "simulate", "--env", "cartpole", "--envs", "2", "--episodes", "2",
		"--to", addr, "--token-file", tok); code != 1 || !strings.Contains(errOut, "--tls-ca") {
		t.Errorf("simulate --to a TLS server without --tls-ca: exit %d: %s, want exit 1 naming --tls-ca", code, errOut)
	}

	// The Go client over TLS with the token.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.Dial(ctx, addr, client.WithTLS(trusted), client.WithToken("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.SessionID = "tls-go"
	sum, err := sim.Run(ctx, c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(ctx); err != nil {
		t.Fatalf("TLS client: %v", err)
	}
	// The CLI over TLS.
	if code, _, errOut := runCmd(t, "simulate", "--env", "cartpole", "--envs", "2", "--episodes", "6", "--seed", "8",
		"--to", addr, "--tls-ca", certFile, "--token-file", tok); code != 0 || !strings.Contains(errOut, "acknowledged durable") {
		t.Errorf("simulate --tls-ca: exit %d: %s", code, errOut)
	}
	if code, errOut := stop(); code != 0 {
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
	var ids []string
	for _, s := range sessions {
		ids = append(ids, s.Recording.SessionID)
		r := s.Row()
		if r == nil || r.Status != "ended" || r.Problems != 0 {
			t.Errorf("recording %v: %+v", s.Recording, r)
			continue
		}
		if s.Recording.SessionID == "tls-go" {
			// Episodes still running at the end are recorded too.
			if r.EpisodesRecorded < sum.Episodes || r.StepsRecorded == 0 {
				t.Errorf("recording %v: %d episodes and %d steps recorded, sent %d completed episodes", s.Recording, r.EpisodesRecorded, r.StepsRecorded, sum.Episodes)
			}
			tele, err := ds.Telemetry(s.Recording)
			if err != nil || len(tele) == 0 {
				t.Errorf("recording %v: %d telemetry rows, %v", s.Recording, len(tele), err)
			}
		}
	}
	if len(ids) != 2 || !strings.Contains(strings.Join(ids, " "), "tls-go") || strings.Contains(strings.Join(ids, " "), "plaintext") {
		t.Errorf("recordings %v, want tls-go and the one simulate sent, not the plaintext one", ids)
	}
	if code, out, _ := runCmd(t, "verify", root); code != 0 {
		t.Errorf("verify: exit %d: %s", code, out)
	}
}
