package client

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportClosure: a Go producer that imports client pulls in neither
// the server nor the recorder, its log or parquet-go (the client needs
// only the protocol in ingest/ingestv1).
func TestImportClosure(t *testing.T) {
	// go test puts the go command that runs it first on PATH.
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		for _, banned := range []string{
			"github.com/rlrec/rlrec/recorder",
			"github.com/rlrec/rlrec/serve",
			"github.com/rlrec/rlrec/internal/wal",
			"github.com/rlrec/rlrec/internal/logrec",
			"github.com/rlrec/rlrec/internal/parquetout",
			"github.com/parquet-go",
		} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("client imports %s", dep)
			}
		}
	}
}
