package verify

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlrec/rlrec/internal/s3server"
	"github.com/rlrec/rlrec/schema"
)

// TestVerifyS3 checks a ROOT in a bucket: clean, it reports what the same
// ROOT on disk reports; with a truncated part file (damaged on the
// server's disk, as no rlrec writer would leave it), the damage.
func TestVerifyS3(t *testing.T) {
	srv := s3server.Start(t)
	bdir := srv.Bucket(t, "rec")
	srv.SetEnv(t)
	local := base(t)
	srv.PutTree(t, local, "rec", "r", s3server.SkipState)
	ctx := context.Background()
	want, err := Root(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Root(ctx, "s3://rec/r")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != 0 || got.Files != want.Files || got.Rows != want.Rows || got.Bytes != want.Bytes || got.Files == 0 {
		t.Fatalf("bucket: %d files, %d rows, %d bytes, problems %v; disk: %d files, %d rows, %d bytes",
			got.Files, got.Rows, got.Bytes, got.Problems, want.Files, want.Rows, want.Bytes)
	}
	p := parquetFiles(t, local, schema.TableSteps)[0]
	rel, _ := filepath.Rel(local, p)
	obj := filepath.Join(bdir, "r", rel)
	info, err := os.Stat(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(obj, info.Size()-9); err != nil {
		t.Fatal(err)
	}
	got, err = Root(ctx, "s3://rec/r")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pr := range got.Problems {
		found = found || (pr.Check == CheckFile && pr.Path == filepath.ToSlash(rel))
	}
	if !found {
		t.Fatalf("a truncated object was not reported: %v", got.Problems)
	}
	if _, err := Root(ctx, "s3://"); err == nil {
		t.Fatal("a URL without a bucket was checked")
	}
}
