package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// waitReady waits until cc is connected to addr or ctx is done.
//
// A gRPC channel whose connection is lost goes IDLE and stays there until
// something asks it to connect: an RPC, or Connect. That happens not only
// after a connection that was READY breaks, but also when the server goes
// away just after the connection's handshake (a server killed and started
// again while the client dials): the channel passes from CONNECTING to IDLE
// without a READY in between. So waitReady asks for a connection every time
// it finds the channel IDLE; waiting for IDLE to change by itself would wait
// until ctx ends although the server is back.
//
// A failure retrying cannot mend (TLS on one side only, an untrusted
// certificate) ends the wait at once with the probe's error; anything else
// (nothing listens yet) is waited out until ctx ends.
func waitReady(ctx context.Context, cc *grpc.ClientConn, addr string, cfg *tls.Config) error {
	var probed time.Time
	for st := cc.GetState(); st != connectivity.Ready; st = cc.GetState() {
		switch {
		case st == connectivity.Idle:
			cc.Connect()
		case st == connectivity.TransientFailure && time.Since(probed) >= probeEvery:
			probed = time.Now()
			if err := probe(ctx, addr, cfg); err != nil {
				return err
			}
		}
		if !cc.WaitForStateChange(ctx, st) {
			return fmt.Errorf("no connection (last state %v): %w; is the server listening there, and does it serve TLS (then dial WithTLS)?", st, ctx.Err())
		}
	}
	return nil
}
