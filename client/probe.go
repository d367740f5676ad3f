package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"
)

// probeTimeout bounds each step of a probe (the TCP connection, the TLS
// handshake).
const probeTimeout = 2 * time.Second

// probe tells why a connection to addr failed when retrying cannot help:
// the server speaks TLS and the client does not (ErrServerTLS), the
// client speaks TLS and the server does not (ErrServerPlaintext), or the
// server's certificate is not trusted (ErrUntrusted). It returns nil when
// nothing definite is known (nothing listens yet, the network is down):
// Dial then keeps waiting for the server.
//
// The probe makes one TCP connection of its own and, at most, one TLS
// handshake on it; it sends nothing after the handshake.
func probe(ctx context.Context, addr string, cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if cfg == nil {
		// Would a TLS handshake work? A plaintext gRPC server answers a
		// ClientHello with its HTTP/2 settings or closes the connection.
		// The certificate is not checked: the probe only asks whether the
		// server speaks TLS, and sends nothing after the handshake.
		tc := tls.Client(conn, &tls.Config{InsecureSkipVerify: true, ServerName: hostOf(addr), NextProtos: []string{"h2"}})
		if tc.HandshakeContext(ctx) == nil {
			return fmt.Errorf("%w: %s answered a TLS handshake; dial it WithTLS", ErrServerTLS, addr)
		}
		return nil
	}
	c := cfg.Clone()
	if c.ServerName == "" {
		c.ServerName = hostOf(addr)
	}
	c.NextProtos = []string{"h2"}
	err = tls.Client(conn, c).HandshakeContext(ctx)
	var rec tls.RecordHeaderError
	var unknown x509.UnknownAuthorityError
	var verify *tls.CertificateVerificationError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rec):
		return fmt.Errorf("%w: %s did not answer the TLS handshake with TLS; dial it without WithTLS, or serve TLS there", ErrServerPlaintext, addr)
	case errors.As(err, &host):
		return fmt.Errorf("%w: %s: %v; dial it by a name its certificate holds, or set that name as WithTLS's ServerName", ErrUntrusted, addr, err)
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return fmt.Errorf("%w: %s: %v; its certificate is expired or not yet valid (or this machine's clock is wrong): renew the server's certificate", ErrUntrusted, addr, err)
	case errors.As(err, &unknown), errors.As(err, &verify):
		return fmt.Errorf("%w: %s: %v; trust the CA that signed its certificate (WithTLS's RootCAs)", ErrUntrusted, addr, err)
	}
	return nil
}

// hostOf is the host part of addr, for TLS's server name.
func hostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}
