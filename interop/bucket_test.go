package interop

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/internal/s3server"
)

// readmeBucketDuckDB returns the DuckDB one-liners over a bucket
// (s3://BUCKET/PREFIX/) of docs/object-storage.md, whole.
func readmeBucketDuckDB(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "docs", "object-storage.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(readme), "\n") {
		q, ok := strings.CutPrefix(strings.TrimSpace(line), `duckdb -c "`)
		if ok && strings.Contains(q, "'s3://BUCKET/PREFIX/") {
			lines = append(lines, strings.TrimSuffix(q, `"`))
		}
	}
	return lines
}

// TestReadBucketInPlace: a ROOT uploaded to a real S3 server (versitygw)
// reads in place as docs/object-storage.md's "Reading a bucket in place" says, with
// the ids 007 and 2026-01-02 kept as written: the DuckDB line's query over the keys the bucket stores
// (versitygw's directory: DuckDB's httpfs is downloaded when first
// loaded, which the test machines cannot), giving what it gives over the
// ROOT directory; the line itself sets the endpoint, path-style
// addressing and credentials. The polars and pyarrow lines run in Python
// over HTTP (python/tests/test_readme.py).
func TestReadBucketInPlace(t *testing.T) {
	root, sessions := idsRoot(t)
	srv := s3server.Start(t)
	dir := srv.Bucket(t, "datasets")
	srv.PutTree(t, root, "datasets", "ids", s3server.SkipState)

	t.Run("duckdb", func(t *testing.T) {
		lines := readmeBucketDuckDB(t)
		if len(lines) == 0 {
			t.Fatal("no DuckDB one-liner over s3://BUCKET/PREFIX/ in docs/object-storage.md")
		}
		db := openDuck(t)
		for _, line := range lines {
			for _, setting := range []string{"LOAD httpfs", "SET s3_endpoint=", "SET s3_url_style='path'", "SET s3_access_key_id=", "SET s3_secret_access_key=", "hive_types_autocast=false"} {
				if !strings.Contains(line, setting) {
					t.Errorf("docs/object-storage.md DuckDB line over a bucket lacks %q: %s", setting, line)
				}
			}
			stmts := strings.Split(line, "; ")
			q := stmts[len(stmts)-1]
			if !strings.HasPrefix(q, "SELECT ") {
				t.Fatalf("docs/object-storage.md DuckDB line over a bucket does not end with its query: %s", line)
			}
			stored := query(t, db, strings.ReplaceAll(q, "'s3://BUCKET/PREFIX/", "'"+filepath.Join(dir, "ids")+"/")+" ORDER BY ALL")
			local := query(t, db, strings.ReplaceAll(q, "'s3://BUCKET/PREFIX/", "'"+root+"/")+" ORDER BY ALL")
			if len(stored) == 0 || !reflect.DeepEqual(stored, local) {
				t.Errorf("%s\nover the bucket's keys: %v\nover the ROOT directory: %v", q, stored, local)
			}
			for _, r := range stored {
				sid, _ := r["session_id"].(string)
				env, _ := r["env_id"].(string)
				if want, ok := sessions[sid]; !ok || want != env {
					t.Errorf("%s: session_id %#v env_id %#v, want one of %v as written", q, r["session_id"], r["env_id"], sessions)
				}
			}
		}
	})
}
