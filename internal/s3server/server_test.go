package s3server

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// bucket is the tests' bucket (S3 names have 3 to 63 characters).
const bucket = "rec"

func TestBinaryMissing(t *testing.T) {
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "no-such-versitygw"))
	_, err := Binary()
	if err == nil || !strings.Contains(err.Error(), InstallCommand) {
		t.Fatalf("Binary() error = %v, want one naming %q", err, InstallCommand)
	}
}

func TestLoopbackOnly(t *testing.T) {
	s := Start(t)
	host, _, err := net.SplitHostPort(s.Addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("server address %q, want 127.0.0.1:port", s.Addr)
	}
}

// TestRestart checks what the store's tests rely on: objects are plain
// files under Dir, a stopped server refuses requests, and a restarted one
// on the same directory and endpoint has the objects and an in-flight
// multipart upload it had.
func TestRestart(t *testing.T) {
	ctx := context.Background()
	s := Start(t)
	s.Bucket(t, bucket)
	c := s.Client()
	body := []byte("hello, bucket")
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k/v=1/part-00000.parquet"), Body: bytes.NewReader(body)}); err != nil {
		t.Fatal(err)
	}
	if !s.Equal(bucket, "k/v=1/part-00000.parquet", body) {
		t.Fatal("the object is not a plain file under Dir with its bytes")
	}
	up, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("big")})
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("x"), 1000)
	p1, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String("big"), UploadId: up.UploadId, PartNumber: aws.Int32(1), Body: bytes.NewReader(part)})
	if err != nil {
		t.Fatal(err)
	}

	for _, kill := range []bool{false, true} {
		if kill {
			err = s.Kill()
		} else {
			err = s.Stop()
		}
		if err != nil {
			t.Fatal(err)
		}
		short, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err = c.HeadObject(short, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("k/v=1/part-00000.parquet")})
		cancel()
		if err == nil {
			t.Fatalf("kill=%v: a stopped server answered", kill)
		}
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("k/v=1/part-00000.parquet")})
		if err != nil {
			t.Fatalf("kill=%v: after restart: %v", kill, err)
		}
		out.Body.Close()
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: aws.String(bucket), Key: aws.String("big"), UploadId: up.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: []types.CompletedPart{{PartNumber: aws.Int32(1), ETag: p1.ETag}}},
	}); err != nil {
		t.Fatalf("complete an upload begun before the restarts: %v", err)
	}
	if !s.Equal(bucket, "big", part) {
		t.Fatal("the completed upload does not hold its part")
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("a second Stop: %v", err)
	}
	if _, err := s.Object(bucket, "missing"); err == nil {
		t.Fatal("Object of a missing key did not fail")
	}
}
