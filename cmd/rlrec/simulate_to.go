package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

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
	// Dial waits for a server to listen at f.to; after a few seconds
	// without one, say what it waits for.
	// The notice goroutine has ended before Dial's error is written: both
	// write to env.Stderr.
	dialed, noticed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(noticed)
		select {
		case <-dialed:
		case <-time.After(waitNotice):
			fmt.Fprintf(env.Stderr, "rlrec simulate: waiting for rlrec serve at %s: nothing accepts connections there yet "+
				"(start it with 'rlrec serve -o DIR --listen %s'; Ctrl-C stops)\n", f.to, f.to)
		}
	}()
	c, err := client.Dial(ctx, f.to, opts...)
	close(dialed)
	<-noticed
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("stopped waiting for rlrec serve at %s: nothing accepted connections there (is it listening, with --listen %s?)", f.to, f.to)
		}
		return clientError(f, err)
	}
	sums, runErr := sim.RunSessions(ctx, c, cfgs)
	err = c.Close(ctx)
	if runErr != nil {
		return clientError(f, runErr)
	}
	if err != nil {
		return fmt.Errorf("send the events to %s: %w", f.to, clientError(f, err))
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

// waitNotice is how long simulate --to waits for a server before saying
// so.
var waitNotice = 3 * time.Second

// clientError words the client's errors with simulate's flags.
func clientError(f simulateOptions, err error) error {
	switch {
	case errors.Is(err, client.ErrServerTLS):
		return fmt.Errorf("%s serves TLS: give --tls-ca FILE, the CA certificate (PEM) that signed its certificate (%w)", f.to, err)
	case errors.Is(err, client.ErrServerPlaintext):
		return fmt.Errorf("%s does not serve TLS: leave out --tls-ca, or start rlrec serve there with --tls-cert and --tls-key (%w)", f.to, err)
	case errors.Is(err, client.ErrUntrusted):
		return fmt.Errorf("the certificate of %s is not trusted with --tls-ca %s: give the CA that signed it, and check the certificate's host name and dates (%w)", f.to, f.tlsCA, err)
	case errors.Is(err, client.ErrUnauthenticated):
		if f.tokenFile == "" {
			return fmt.Errorf("%s requires a token: give --token-file FILE with the server's token (%w)", f.to, err)
		}
		return fmt.Errorf("%s refused the token in --token-file %s: give the server's token (%w)", f.to, f.tokenFile, err)
	case errors.Is(err, client.ErrEventTooLarge):
		return fmt.Errorf("an event is larger than the largest message %s takes (its --max-message): %w", f.to, err)
	}
	return err
}
