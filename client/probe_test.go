package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rlrec/rlrec/internal/testcert"
)

// TestDialMismatch dials real gRPC servers the client cannot talk to:
// TLS on one side only, or a certificate the client does not trust. Dial
// must give up at once with the matching error instead of waiting for its
// context; with nothing listening it waits for the context.
func TestDialMismatch(t *testing.T) {
	cert := testcert.New(t)
	pool := cert.Pool
	tlsAddr := serveGRPC(t, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert.TLS}, MinVersion: tls.VersionTLS12})))
	plainAddr := serveGRPC(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close()

	trusted := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	for _, c := range []struct {
		name string
		addr string
		opts []Option
		want error // nil: a connection
		// text is a part of the error's message: what to do.
		text string
	}{
		{"plaintext client, TLS server", tlsAddr, nil, ErrServerTLS, ""},
		{"TLS client, plaintext server", plainAddr, []Option{WithTLS(trusted)}, ErrServerPlaintext, ""},
		{"untrusted certificate", tlsAddr, []Option{WithTLS(&tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12})}, ErrUntrusted, "trust the CA"},
		{"certificate for another name", tlsAddr, []Option{WithTLS(&tls.Config{RootCAs: pool, ServerName: "other.example", MinVersion: tls.VersionTLS12})},
			ErrUntrusted, "by a name its certificate holds"},
		{"expired certificate", tlsAddr, []Option{WithTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12,
			Time: func() time.Time { return time.Now().Add(72 * time.Hour) }})}, ErrUntrusted, "renew the server's certificate"},
		{"nothing listening", nobody, nil, context.DeadlineExceeded, ""},
		{"TLS both sides", tlsAddr, []Option{WithTLS(trusted)}, nil, ""},
		{"plaintext both sides", plainAddr, nil, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			wait := 30 * time.Second
			if c.want == context.DeadlineExceeded {
				wait = 3 * time.Second
			}
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			start := time.Now()
			cl, err := Dial(ctx, c.addr, c.opts...)
			took := time.Since(start)
			if err == nil {
				// The test servers have no ingest service: the sender's
				// stream never opens, so Close gets a moment, not ctx.
				cctx, ccancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				cl.Close(cctx)
				ccancel()
			}
			switch {
			case c.want == nil && err != nil:
				t.Fatalf("Dial: %v, want a connection", err)
			case c.want != nil && !errors.Is(err, c.want):
				t.Fatalf("Dial = %v after %v, want %v", err, took, c.want)
			case c.text != "" && !strings.Contains(err.Error(), c.text):
				t.Errorf("Dial = %v; want it to say %q", err, c.text)
			case c.text != "trust the CA" && err != nil && strings.Contains(err.Error(), "trust the CA"):
				t.Errorf("Dial = %v; the CA is trusted", err)
			case c.want != nil && c.want != context.DeadlineExceeded && took > probeEvery:
				t.Errorf("Dial gave up after %v, want at the first failed connection (well within %v)", took, probeEvery)
			}
		})
	}
}

// serveGRPC serves the health service on a loopback port until the test
// ends and returns its address.
func serveGRPC(t *testing.T, opts ...grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}
