package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// simulateTo runs the sessions into a client of the rlrec serve at f.to.
func simulateTo(ctx context.Context, env *Env, f simulateOptions, cfgs []sim.Config) error {
	opts := []client.Option{client.WithLogger(env.Logger)}
	if f.tokenFile != "" {
		tok, err := serve.ReadToken(f.tokenFile)
		if err != nil {
			return err
		}
		opts = append(opts, client.WithToken(tok))
	}
	if f.tlsCA != "" {
		cfg, err := tlsClientConfig(f.tlsCA)
		if err != nil {
			return err
		}
		opts = append(opts, client.WithTLS(cfg))
	}
	c, err := client.Dial(ctx, f.to, opts...)
	if err != nil {
		return err
	}
	sums, runErr := sim.RunSessions(ctx, c, cfgs)
	err = c.Close(ctx)
	if runErr != nil {
		return runErr
	}
	if err != nil {
		return fmt.Errorf("send the events to %s: %w", f.to, err)
	}
	st := c.Stats()
	reportSimulated(env, f, sums, fmt.Sprintf("%d events acknowledged durable by %s (%d reconnects)", st.Acked, f.to, st.Reconnects))
	return nil
}

// tlsClientConfig trusts the CA certificates in the PEM file ca.
func tlsClientConfig(ca string) (*tls.Config, error) {
	pem, err := os.ReadFile(ca)
	if err != nil {
		return nil, fmt.Errorf("read --tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--tls-ca %s holds no PEM certificate", ca)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
