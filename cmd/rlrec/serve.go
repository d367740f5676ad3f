package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/serve"
)

// serveOptions are the serve command's flags.
type serveOptions struct {
	out          string
	logDir       string
	listen       string
	metrics      string
	tokenFile    string
	tlsCert      string
	tlsKey       string
	maxMessage   int
	drainTimeout time.Duration
}

var serveFlags serveOptions

var cmdServe = &Command{
	Records:   true,
	Name:      "serve",
	UsageLine: "serve -o DIR|s3://BUCKET/PREFIX [--log-dir DIR] [--listen ADDR] [--metrics-listen ADDR] [--token-file FILE] [--tls-cert FILE --tls-key FILE] [--max-message BYTES] [--drain-timeout DURATION]",
	Short:     "record events that other processes send over gRPC",
	Long: `Serve runs a recorder on ROOT and takes events from other processes over
gRPC (service rlrec.ingest.v1.Ingest, see ingest/ingestv1/ingest.proto): any
number of clients, each streaming rlrec.events.v1 events numbered within
their recordings. Go programs use package client (client.Dial), which
implements events.Hooks; 'rlrec simulate --to ADDR' is one.

A batch is acknowledged once its events are durable in the recorder's log,
so a client that loses its connection resends only what was not
acknowledged, and the server drops what it already has: nothing is lost or
recorded twice, across a killed connection and across a server killed and
restarted. Recordings still open when the server stops or crashes stay
open in ROOT's log and continue when their clients come back; 'rlrec
recover ROOT' (with no server running) finishes them as crashed.

It listens on loopback by default; a non-loopback --listen or
--metrics-listen is refused unless --token-file names a file holding a
token (one line), which every client must then send (client.WithToken,
'simulate --token-file'); a token file other users can read is warned
about.
--tls-cert and --tls-key serve TLS. The standard gRPC health service runs
on the same port without a token. Metrics in the Prometheus text format
are at http://METRICS/metrics (--metrics-listen; empty for none).

SIGTERM or SIGINT drains: each stream finishes the batch in hand, its
acknowledgements are sent once durable and the stream ends (its client
then retries); the recorder is flushed and closed.

Example:

  rlrec serve --out data &
  rlrec simulate --env cartpole --envs 16 --episodes 200 --to 127.0.0.1:7465
  curl -s 127.0.0.1:7466/metrics | grep rlrec_serve_events_total`,
	SetFlags: func(fs *flag.FlagSet) {
		f := &serveFlags
		*f = serveOptions{}
		f.out = "rlrec-data"
		outFlag(fs, &f.out, "the ROOT `DIR` (or s3://bucket/prefix) to record into")
		logDirFlag(fs, &f.logDir)
		fs.StringVar(&f.listen, "listen", "127.0.0.1:7465", "gRPC listen `ADDR` (host:port)")
		fs.StringVar(&f.metrics, "metrics-listen", "127.0.0.1:7466", "HTTP `ADDR` of /metrics (empty: none)")
		fs.StringVar(&f.tokenFile, "token-file", "", "require the token in `FILE` of every client")
		fs.StringVar(&f.tlsCert, "tls-cert", "", "serve TLS with the certificate (PEM) in `FILE`")
		fs.StringVar(&f.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert, in `FILE`")
		fs.IntVar(&f.maxMessage, "max-message", serve.DefaultMaxMessageBytes, "largest request accepted, in `BYTES` (a Go client's client.WithMaxMessageBytes must not exceed it)")
		fs.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "how long SIGTERM waits for streams to drain, a `DURATION` such as 30s")
	},
	Run: runServe,
}

func runServe(ctx context.Context, env *Env, args []string) error {
	f := serveFlags
	if len(args) > 0 {
		return usagef("unexpected argument %q", args[0])
	}
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if f.maxMessage < 64<<10 {
		return usagef("--max-message %d: want at least 65536", f.maxMessage)
	}
	var token string
	if f.tokenFile != "" {
		var err error
		if token, err = serve.ReadToken(f.tokenFile); err != nil {
			return err
		}
		if st, err := os.Stat(f.tokenFile); err == nil && st.Mode().Perm()&0o077 != 0 {
			fmt.Fprintf(env.Stderr, "rlrec serve: warning: token file %s can be read by other users (mode %04o); anyone who can read it can write into %s: chmod 600 %s\n",
				f.tokenFile, st.Mode().Perm(), f.out, f.tokenFile)
		}
	}
	if err := serve.CheckListen(f.listen, token); err != nil {
		return fmt.Errorf("%w (anyone who reaches the port could write into %s): give --token-file FILE, or --listen 127.0.0.1:PORT", err, f.out)
	}
	if f.metrics != "" {
		// The metrics name recordings and their load: the same rule.
		if err := serve.CheckListen(f.metrics, token); err != nil {
			return fmt.Errorf("--metrics-listen: %w (anyone who reaches the port could read the server's metrics): give --token-file FILE, or --metrics-listen 127.0.0.1:PORT", err)
		}
	}
	var creds credentials.TransportCredentials
	if f.tlsCert != "" {
		var err error
		if creds, err = credentials.NewServerTLSFromFile(f.tlsCert, f.tlsKey); err != nil {
			return fmt.Errorf("load --tls-cert %s and --tls-key %s: %w", f.tlsCert, f.tlsKey, err)
		}
	}

	// Bind both addresses before the recorder creates ROOT: a port in
	// use leaves nothing behind.
	lis, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w; choose another --listen ADDR or stop what uses it", f.listen, err)
	}
	defer lis.Close()
	var ml net.Listener
	if f.metrics != "" {
		if ml, err = net.Listen("tcp", f.metrics); err != nil {
			return fmt.Errorf("listen on --metrics-listen %s: %w; choose another address, or --metrics-listen '' for none", f.metrics, err)
		}
		defer ml.Close()
	}
	rec, err := openRecorder(ctx, env.Logger, f.out, f.logDir, recorder.WithResume(true), recorder.WithLogger(env.Logger))
	if err != nil {
		return err
	}
	if n := rec.Resumed(); n > 0 {
		fmt.Fprintf(env.Stderr, "rlrec serve: resumed %s from %s's log; their clients continue them\n", count(n, "open recording"), f.out)
	}
	srv, err := serve.NewServer(rec, serve.WithToken(token), serve.WithMaxMessageBytes(f.maxMessage), serve.WithLogger(env.Logger))
	if err != nil {
		rec.Close(context.Background())
		return err
	}
	opts := srv.ServerOptions()
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	gs := grpc.NewServer(opts...)
	srv.Register(gs)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()

	var hs *http.Server
	metricsAt := ""
	if ml != nil {
		mux := http.NewServeMux()
		mux.Handle("/metrics", srv.Metrics())
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ml)
		metricsAt = fmt.Sprintf(", metrics on http://%s/metrics", ml.Addr())
	}
	fmt.Fprintf(env.Stderr, "rlrec serve: recording into %s; listening on %s%s\n", f.out, lis.Addr(), metricsAt)

	var failure error
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case err := <-served:
			failure = fmt.Errorf("grpc server stopped: %w", err)
			break wait
		case <-tick.C:
			if err := srv.Err(); err != nil {
				failure = err
				break wait
			}
		}
	}

	dctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	derr := srv.Drain(dctx)
	stopped := make(chan struct{})
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-dctx.Done():
		gs.Stop()
		<-stopped
	}
	srv.Close()
	if hs != nil {
		hs.Shutdown(dctx)
	}
	cerr := rec.Close(context.Background())
	if errors.Is(derr, context.DeadlineExceeded) {
		derr = fmt.Errorf("streams still open after --drain-timeout %v were cut; their clients resend what was not acknowledged: %w", f.drainTimeout, derr)
	}
	if err := errors.Join(failure, cerr); err != nil {
		return err
	}
	if derr != nil {
		fmt.Fprintf(env.Stderr, "rlrec serve: %v\n", derr)
	}
	fmt.Fprintf(env.Stderr, "rlrec serve: drained and closed %s\n", f.out)
	return nil
}
