package client

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestWaitReadyFromIdle gives waitReady a real gRPC channel that is IDLE
// while a server listens: one never asked to connect, and one whose
// server was stopped (the channel goes from READY to IDLE, as when the
// server is killed) and started again on the same address. waitReady must
// connect; a wait that only watches for IDLE to change waits until its
// context ends, which is how a client dialling during a server restart
// gave up with "no connection (last state IDLE)".
func TestWaitReadyFromIdle(t *testing.T) {
	for _, c := range []struct {
		name string
		// idle brings cc, dialled to a server on addr, to IDLE with a
		// server listening on addr again.
		idle func(t *testing.T, cc *grpc.ClientConn, addr string, stop func())
	}{
		{"never connected", func(t *testing.T, cc *grpc.ClientConn, addr string, stop func()) {}},
		{"server restarted", func(t *testing.T, cc *grpc.ClientConn, addr string, stop func()) {
			awaitState(t, cc, connectivity.Ready, cc.Connect)
			stop()
			awaitState(t, cc, connectivity.Idle, nil)
			serveGRPCOn(t, addr)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			s := grpc.NewServer()
			healthpb.RegisterHealthServer(s, health.NewServer())
			go s.Serve(ln)
			t.Cleanup(s.Stop)
			cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer cc.Close()
			c.idle(t, cc, addr, s.Stop)
			if st := cc.GetState(); st != connectivity.Idle {
				t.Fatalf("the channel is %v before waitReady, want IDLE", st)
			}
			// The deadline only bounds a failure: waitReady returns as
			// soon as the channel is READY.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := waitReady(ctx, cc, addr, nil); err != nil {
				t.Fatalf("waitReady with a server listening: %v", err)
			}
			if st := cc.GetState(); st != connectivity.Ready {
				t.Errorf("waitReady returned with the channel %v, want READY", st)
			}
		})
	}
}

// awaitState waits until cc is in want, calling poke (if any) first; it
// fails the test if that takes longer than 30 s.
func awaitState(t *testing.T, cc *grpc.ClientConn, want connectivity.State, poke func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if poke != nil {
		poke()
	}
	for st := cc.GetState(); st != want; st = cc.GetState() {
		if !cc.WaitForStateChange(ctx, st) {
			t.Fatalf("the channel stayed %v, want %v", st, want)
		}
	}
}

// serveGRPCOn serves the health service on addr until the test ends.
func serveGRPCOn(t *testing.T, addr string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(ln)
	t.Cleanup(s.Stop)
}
