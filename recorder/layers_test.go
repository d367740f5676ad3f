package recorder

import (
	"testing"

	"github.com/rlrec/rlrec/internal/filedeps"
)

// layersAllowed are the mutual file dependencies recorder/ keeps, each
// with the reason it stays. TestLayers fails on any other cycle among
// the package's files, and on an entry here that is no longer mutual.
// It is empty: every cycle was broken by moving code to the file of its
// step or to the state files. Add a pair only with the reason moving
// code cannot break it.
var layersAllowed = []filedeps.Allowed{}

// TestLayers holds recorder/ to "within each stage no file depends on a
// file that depends on it" (see doc.go's stages): it type-checks the
// package's non-test files and fails listing every cycle among them not
// allowlisted above.
func TestLayers(t *testing.T) {
	filedeps.Require(t, ".", layersAllowed)
}
