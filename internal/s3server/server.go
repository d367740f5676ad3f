package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the versitygw release the project tests against.
const Version = "v1.8.0"

// EnvBinary names the environment variable that holds the path of the
// versitygw binary.
const EnvBinary = "RLREC_VERSITYGW"

// InstallCommand installs the pinned versitygw into $GOBIN (or
// $(go env GOPATH)/bin).
const InstallCommand = "go install github.com/versity/versitygw/cmd/versitygw@" + Version

// Credentials and region of every server Start runs; tests pass them to
// clients (Env, Config) and to subprocesses.
const (
	AccessKey = "rlrec-test"
	SecretKey = "rlrec-test-secret"
	Region    = "us-east-1"
)

// startTimeout bounds how long a server may take to answer after start.
const startTimeout = 30 * time.Second

// Server is one running versitygw. Its methods are safe for concurrent use.
type Server struct {
	// Dir is the posix backend's directory: bucket B is Dir/B, object K of
	// it the file Dir/B/K.
	Dir string
	// Addr is the host:port it listens on (127.0.0.1 only).
	Addr string

	bin string
	log string // the server's output, for failure messages

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Binary returns the path of the versitygw binary: RLREC_VERSITYGW, else
// the one .ci/run installs into its cache, else versitygw on PATH. The
// error says how to install it.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("s3server: %s=%s: %w; install it with %q, or run bash .ci/run, which installs it", EnvBinary, p, err, InstallCommand)
		}
		return p, nil
	}
	if dir, err := os.UserCacheDir(); err == nil {
		p := filepath.Join(dir, "rlrec-ci", "versitygw-"+Version, "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("s3server: no versitygw binary: set %s to its path, or install it with %q (bash .ci/run installs it into its cache and sets %s)", EnvBinary, InstallCommand, EnvBinary)
}

// Start runs a server for the test t and stops it when t ends. It fails
// t when versitygw is missing or does not come up.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	s := &Server{Dir: filepath.Join(base, "gw"), bin: bin, log: filepath.Join(base, "versitygw.log")}
	if err := os.Mkdir(s.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The kernel's free port may be taken between the probe and the
	// server's bind: try a few.
	for try := 0; ; try++ {
		if s.Addr, err = freePort(); err != nil {
			t.Fatal(err)
		}
		if err = s.start(); err == nil {
			break
		}
		if try == 4 {
			t.Fatalf("s3server: start versitygw: %v", err)
		}
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Errorf("s3server: stop: %v", err)
		}
	})
	return s
}

// freePort returns a loopback address with a port free right now.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("s3server: find a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

// start runs the process and waits until it answers HTTP.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("s3server: already running")
	}
	out, err := os.OpenFile(s.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("s3server: open its log: %w", err)
	}
	cmd := exec.Command(s.bin,
		"--port", s.Addr,
		"--access", AccessKey,
		"--secret", SecretKey,
		"--region", Region,
		"--quiet",
		"posix", s.Dir)
	// Only what the command line says: no VGW_* or ROOT_* setting of the
	// caller's environment.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	cmd.Stdout, cmd.Stderr = out, out
	setParentDeath(cmd)
	if err := cmd.Start(); err != nil {
		out.Close()
		return fmt.Errorf("s3server: run %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		out.Close()
		close(done)
	}()
	if err := waitReady(s.Addr, done); err != nil {
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w; its output: %s", err, s.tail())
	}
	s.cmd, s.done = cmd, done
	return nil
}

// waitReady polls addr until it answers an HTTP request (any status), the
// process exits (done) or startTimeout passes.
func waitReady(addr string, done <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
	for {
		select {
		case <-done:
			return fmt.Errorf("s3server: versitygw exited while starting on %s", addr)
		default:
		}
		if resp, err := c.Get("http://" + addr + "/"); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3server: versitygw did not answer on %s within %v", addr, startTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tail returns the end of the server's output.
func (s *Server) tail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for
// it. Stopping a stopped server does nothing.
func (s *Server) Stop() error { return s.stop(false) }

// Kill ends the server with SIGKILL, as a crash would, and waits for it.
func (s *Server) Kill() error { return s.stop(true) }

func (s *Server) stop(kill bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	cmd, done := s.cmd, s.done
	s.cmd, s.done = nil, nil
	sig := os.Interrupt
	if kill {
		sig = os.Kill
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("s3server: signal versitygw: %w", err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
	return nil
}

// Restart starts a stopped server again on the same directory and port.
func (s *Server) Restart() error { return s.start() }

// Endpoint is the server's URL, for AWS_ENDPOINT_URL.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// Env returns the environment a subprocess needs to reach the server
// through the standard credential chain.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_ENDPOINT_URL=" + s.Endpoint(),
	}
}

// SetEnv sets Env in this process for the test t (t.Setenv), so that
// code loading the standard credential chain finds the server.
func (s *Server) SetEnv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	// A profile or config file of the machine must not take over.
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "no-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "no-credentials"))
}

// Client returns an S3 client of the server: path-style addressing, its
// credentials, the SDK's default retries.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		Region:       Region,
		BaseEndpoint: aws.String(s.Endpoint()),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
}

// Bucket creates a bucket and returns its directory.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("s3server: create bucket %s: %v", name, err)
	}
	return filepath.Join(s.Dir, name)
}

// Object returns the bytes of object key of bucket as the server stores
// them (its file), or an error wrapping fs.ErrNotExist.
func (s *Server) Object(bucket, key string) ([]byte, error) {
	return os.ReadFile(filepath.Join(s.Dir, bucket, filepath.FromSlash(key)))
}

// Equal reports whether object key of bucket holds exactly want.
func (s *Server) Equal(bucket, key string, want []byte) bool {
	got, err := s.Object(bucket, key)
	return err == nil && bytes.Equal(got, want)
}

// PutTree uploads every file under dir to bucket as prefix/REL (REL its
// path below dir, "/" separators), except those skip reports: a ROOT
// recorded on disk, as a bucket would hold it.
func (s *Server) PutTree(t testing.TB, dir, bucket, prefix string, skip func(rel string) bool) {
	t.Helper()
	c := s.Client()
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skip != nil && skip(rel) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		key := rel
		if prefix != "" {
			key = prefix + "/" + rel
		}
		_, err = c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)})
		return err
	})
	if err != nil {
		t.Fatalf("s3server: upload %s: %v", dir, err)
	}
}

// SkipState skips the recorder's log and lock (PutTree): in a bucket's
// ROOT they live on the recorder's disk.
func SkipState(rel string) bool {
	return strings.HasPrefix(rel, "_rlrec/") && rel != "_rlrec/layout"
}
