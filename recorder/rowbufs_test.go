package recorder

import "testing"

// TestRowBufsRecycle checks that a written job's buffers start the next
// episode's rows, emptied, and that large ones are not kept.
func TestRowBufsRecycle(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rows     int
		arena    int
		recycled bool
	}{
		{"cartpole episode", 64, 4 << 10, true},
		{"too many rows", rowBufsMaxRows + 1, 4 << 10, false},
		{"arena too large", 64, rowBufsMaxBytes + 1, false},
		{"no rows", 0, 4 << 10, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var drain episode
			for takeRowBufs(&drain); cap(drain.rows) != 0; takeRowBufs(&drain) {
				drain = episode{}
			}
			j := rowsJob{rows: make([]stepRow, tc.rows), arena: make([]byte, 10, tc.arena)}
			rows, arena := j.rows, j.arena
			recycleRows(&j)
			if j.rows != nil || j.arena != nil {
				t.Fatal("the job still holds its buffers")
			}
			var ep episode
			takeRowBufs(&ep)
			if got := cap(ep.rows) != 0; got != tc.recycled {
				t.Fatalf("recycled: %v, want %v", got, tc.recycled)
			}
			if !tc.recycled {
				return
			}
			if len(ep.rows) != 0 || len(ep.arena) != 0 {
				t.Fatalf("recycled buffers hold %d rows and %d bytes, want none", len(ep.rows), len(ep.arena))
			}
			if &ep.rows[:1][0] != &rows[:1][0] || &ep.arena[:1][0] != &arena[:1][0] {
				t.Fatal("the episode got other buffers than the job's")
			}
			full := episode{rows: ep.rows[:1]}
			takeRowBufs(&full)
			if cap(full.arena) != 0 {
				t.Fatal("an episode with rows was given buffers")
			}
		})
	}
}
