package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/s3server"
)

// TestReadCommandsS3 runs the read commands on the golden ROOT uploaded
// to a bucket: each prints what it prints for the ROOT on disk, with the
// URL where the path was.
func TestReadCommandsS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	srv.PutTree(t, goldenRoot, "rec", "golden", s3server.SkipState)
	const url = "s3://rec/golden"
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"inspect", []string{"inspect", "ROOT"}},
		{"inspect json", []string{"inspect", "--json", "ROOT"}},
		{"inspect episode", []string{"inspect", "--session", "golden-cartpole", "--episode", "ep-000002", "ROOT"}},
		{"verify", []string{"verify", "ROOT"}},
		{"stats", []string{"stats", "ROOT"}},
		{"replay", []string{"replay", "--session", "golden-all-leaves", "--episode", "ep-000001", "ROOT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			with := func(root string) []string {
				out := append([]string(nil), tc.args...)
				for i, a := range out {
					if a == "ROOT" {
						out[i] = root
					}
				}
				return out
			}
			lcode, lout, lerr := runReadCmd(t, with(goldenRoot)...)
			code, out, errOut := runReadCmd(t, with(url)...)
			if code != lcode || lcode != 0 {
				t.Fatalf("exit %d (stderr %q), on disk %d (%q)", code, errOut, lcode, lerr)
			}
			norm := func(s, root string) string { return strings.ReplaceAll(s, root, "ROOT") }
			if g, w := norm(out, url), norm(lout, goldenRoot); g != w {
				t.Errorf("output differs from the ROOT on disk:\n got %s\nwant %s", g, w)
			}
		})
	}
}

// TestCopyExportFromS3: copy and export read a bucket's ROOT as they read
// the same ROOT on disk: the copies inspect alike, the exports hold the
// same files.
func TestCopyExportFromS3(t *testing.T) {
	srv := s3server.Start(t)
	srv.Bucket(t, "rec")
	srv.SetEnv(t)
	srv.PutTree(t, goldenRoot, "rec", "golden", s3server.SkipState)
	dir := t.TempDir()
	for i, src := range []string{goldenRoot, "s3://rec/golden"} {
		dst := filepath.Join(dir, fmt.Sprint("copy", i))
		if code, _, errOut := runReadCmd(t, "copy", src, dst, "--layout", "session"); code != 0 {
			t.Fatalf("copy %s: exit %d: %s", src, code, errOut)
		}
		out := filepath.Join(dir, fmt.Sprint("export", i))
		if code, _, errOut := runReadCmd(t, "export", src, "--format", "lerobot", "-o", out, "--session", "golden-cartpole"); code != 0 {
			t.Fatalf("export %s: exit %d: %s", src, code, errOut)
		}
	}
	_, a, _ := runReadCmd(t, "inspect", filepath.Join(dir, "copy0"))
	_, b, _ := runReadCmd(t, "inspect", filepath.Join(dir, "copy1"))
	if strings.ReplaceAll(a, "copy0", "copyN") != strings.ReplaceAll(b, "copy1", "copyN") || a == "" {
		t.Errorf("the copy from the bucket inspects otherwise:\n%s\nwant\n%s", b, a)
	}
	tree := func(root string) map[string]int64 {
		out := map[string]int64{}
		filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				info, _ := e.Info()
				rel, _ := filepath.Rel(root, p)
				out[rel] = info.Size()
			}
			return nil
		})
		return out
	}
	if a, b := tree(filepath.Join(dir, "export0")), tree(filepath.Join(dir, "export1")); !reflect.DeepEqual(a, b) || len(a) == 0 {
		t.Errorf("the export from the bucket differs:\n%v\nwant\n%v", b, a)
	}
}
