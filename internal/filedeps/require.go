package filedeps

import "testing"

// Require fails t with every problem Check finds in the package in dir
// (a test's own package: "."), and logs its counts.
func Require(t testing.TB, dir string, allowed []Allowed) {
	t.Helper()
	g, problems, err := Check(dir, allowed)
	if err != nil {
		t.Fatal(err)
	}
	deps, mutual := g.Count()
	t.Logf("%d files, %d file-to-file dependencies, %d mutual pairs", len(g.Files), deps, mutual)
	for _, p := range problems {
		t.Error(p)
	}
}
