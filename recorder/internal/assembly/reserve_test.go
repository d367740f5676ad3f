package assembly

import "testing"

// streamingOutput takes an episode's rows the way the writer does.
type streamingOutput struct {
	capture
	streamed int // rows taken by StepsFull
	calls    int
}

func (o *streamingOutput) StepsFull(c Chunk) {
	o.calls++
	o.streamed += c.Len()
	c.Recycle()
}

func TestReserveKeepsArenasWithinTheirShare(t *testing.T) {
	for _, tc := range []struct {
		name     string
		budget   int
		open     int
		rowBytes int
		rows     int
	}{
		{"cartpole rows, one episode", 64 << 20, 1, 40, 10_000},
		{"image rows, 256 open", 64 << 20, 256, 21_200, 200},
		{"image rows, one episode", 64 << 20, 1, 150_600, 100},
		{"rows larger than the share", 1 << 20, 64, 300 << 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := &streamingOutput{}
			a := New(out, tc.budget)
			a.open = tc.open
			limit := a.maxEpisodeBuffer()
			s := &session{id: "s"}
			ep := &episode{}
			for i := range tc.rows {
				a.reserve(s, ep, tc.rowBytes)
				if len(ep.arena)+tc.rowBytes > cap(ep.arena) {
					t.Fatalf("row %d: reserve left %d bytes of room, need %d", i, cap(ep.arena)-len(ep.arena), tc.rowBytes)
				}
				ep.arena = append(ep.arena, make([]byte, tc.rowBytes)...)
				ep.rows = append(ep.rows, stepRow{})
				if c := cap(ep.arena); c > max(limit, tc.rowBytes) {
					t.Fatalf("row %d: arena capacity %d over the bound %d", i, c, max(limit, tc.rowBytes))
				}
			}
			if got := out.streamed + len(ep.rows); got != tc.rows {
				t.Fatalf("%d rows streamed or buffered, want %d", got, tc.rows)
			}
			if want := tc.rows * tc.rowBytes / (limit + tc.rowBytes); out.calls < want {
				t.Fatalf("%d streams for %d bytes with a %d-byte bound", out.calls, tc.rows*tc.rowBytes, limit)
			}
		})
	}
}
