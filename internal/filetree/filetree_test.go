package filetree

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	for rel, body := range map[string]string{
		"steps/session_id=s/part-00000.parquet": "a",
		"sessions/part-00000.parquet":           "b",
		"_rlrec/layout":                         "session",
		"_rlrec/log/seg":                        "log",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		skip func(string) bool
		want map[string][]byte
	}{
		{"everything", nil, map[string][]byte{
			"steps/session_id=s/part-00000.parquet": []byte("a"), "sessions/part-00000.parquet": []byte("b"),
			"_rlrec/layout": []byte("session"), "_rlrec/log/seg": []byte("log")}},
		{"tables", State, map[string][]byte{
			"steps/session_id=s/part-00000.parquet": []byte("a"), "sessions/part-00000.parquet": []byte("b")}},
		{"a directory skipped whole", func(rel string) bool { return rel == "steps" }, map[string][]byte{
			"sessions/part-00000.parquet": []byte("b"), "_rlrec/layout": []byte("session"), "_rlrec/log/seg": []byte("log")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read(dir, c.skip)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Read: %q, want %q", got, c.want)
			}
		})
	}
	if _, err := Read(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("Read of a missing directory: no error")
	}
}

func TestState(t *testing.T) {
	for rel, want := range map[string]bool{"_rlrec": true, "_rlrec/layout": true, "_rlrec/log/seg": true, "_rlrecx/a": false, "steps/_rlrec": false, "sessions": false} {
		if got := State(rel); got != want {
			t.Errorf("State(%q) = %v, want %v", rel, got, want)
		}
	}
}
