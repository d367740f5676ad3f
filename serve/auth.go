package serve

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net"
	"os"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/rlrec/rlrec/ingest/ingestv1"
)

// ReadToken reads a token file: one line, surrounding white space
// ignored.
func ReadToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" || strings.ContainsAny(tok, "\r\n") {
		return "", fmt.Errorf("token file %s: want one non-empty line: %w", path, ErrBadToken)
	}
	return tok, nil
}

// CheckListen refuses an address that is not on the loopback interface
// when token is empty. A host name is resolved; an empty host (":7465")
// listens on every interface and is refused too.
func CheckListen(addr, token string) error {
	if token != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("listen address %q listens on every interface, not loopback; give the server a token, or listen on 127.0.0.1: %w", addr, ErrInsecureListen)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		ips, err := net.LookupIP(host)
		if err != nil || len(ips) == 0 {
			return fmt.Errorf("listen address %q: cannot resolve %q to check that it is loopback (%v): %w", addr, host, err, ErrInsecureListen)
		}
		for _, a := range ips {
			if !a.IsLoopback() {
				return fmt.Errorf("listen address %q resolves to %v, not loopback; give the server a token, or listen on 127.0.0.1: %w", addr, a, ErrInsecureListen)
			}
		}
		return nil
	}
	if !ip.IsLoopback() {
		return fmt.Errorf("listen address %q is not loopback; give the server a token, or listen on 127.0.0.1: %w", addr, ErrInsecureListen)
	}
	return nil
}

// checkToken checks the token of a call to the Ingest service; other
// services (health) are open.
func (s *Server) checkToken(ctx context.Context, method string) error {
	if s.opts.token == "" || !strings.HasPrefix(method, "/"+ingestv1.Ingest_ServiceDesc.ServiceName+"/") {
		return nil
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(ingestv1.AuthorizationKey)
	if len(vals) == 0 {
		s.m.unauthenticated.Add(1)
		return status.Error(codes.Unauthenticated, "rlrec server: no token; give the client the server's token (client.WithToken)")
	}
	want := "Bearer " + s.opts.token
	if len(vals) != 1 || subtle.ConstantTimeCompare([]byte(vals[0]), []byte(want)) != 1 {
		s.m.unauthenticated.Add(1)
		return status.Error(codes.Unauthenticated, "rlrec server: wrong token")
	}
	return nil
}

func (s *Server) streamAuth(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.checkToken(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

func (s *Server) unaryAuth(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.checkToken(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}
