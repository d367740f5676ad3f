package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/sim"
)

// resequenced returns msg numbered seq instead.
func resequenced(t *testing.T, msg []byte, seq uint64) []byte {
	t.Helper()
	ev, at, err := events.Unmarshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	m, err := events.AppendMarshal(nil, ev, at)
	if err != nil {
		t.Fatal(err)
	}
	return events.AppendSequence(m, seq)
}

// sendRefused sends msgs as one batch on a new stream and returns the
// error that ended it; it fails the test if the batch is acknowledged.
func sendRefused(t *testing.T, addr string, msgs [][]byte) error {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := ingestv1.NewIngestClient(cc).Record(ctx, grpc.WaitForReady(true))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&ingestv1.RecordRequest{Batch: 1, Events: msgs}); err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := st.Recv()
		if err != nil {
			return err
		}
		if resp.GetDurableBatch() >= 1 {
			t.Fatalf("batch acknowledged (refused %v)", resp.GetRefused())
		}
	}
}

// TestSequenceAttacks: a client cannot make the server acknowledge events
// it then drops. Each case's ROOT must equal that of the honest run alone.
func TestSequenceAttacks(t *testing.T) {
	cfg := sim.Config{SessionID: "seq", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 3}
	msgs := sequencedSession(t, cfg)
	if len(msgs) < 60 {
		t.Fatalf("%d events, want at least 60", len(msgs))
	}
	refRoot := t.TempDir()
	ts := startServer(t, refRoot, "127.0.0.1:0")
	sendBatch(t, ts.Addr, msgs)
	ts.stop(t)
	want := digest(t, refRoot)

	// A second run with the same ids, started later (so its SessionStarted
	// differs), and a different seed.
	first, _, err := events.Unmarshal(msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	_, route := first.Header()
	other := cfg
	other.Seed, other.Route = 9, route
	second := sequencedSessionAt(t, other, time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC))

	for _, c := range []struct {
		name string
		run  func(t *testing.T, addr string)
	}{
		{"sequence jumps ahead", func(t *testing.T, addr string) {
			sendBatch(t, addr, msgs[:20])
			err := sendRefused(t, addr, [][]byte{msgs[20], resequenced(t, msgs[21], 1_000_000)})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "sequence 1000000") {
				t.Errorf("stream ended with %v, want InvalidArgument naming the sequence", err)
			}
			// The honest client goes on: nothing after the forged event is dropped.
			if refused := sendBatch(t, addr, msgs[20:]); len(refused) != 0 {
				t.Errorf("refused %v", refused)
			}
		}},
		{"first event far ahead", func(t *testing.T, addr string) {
			if err := sendRefused(t, addr, [][]byte{resequenced(t, msgs[0], 50)}); status.Code(err) != codes.InvalidArgument {
				t.Errorf("stream ended with %v, want InvalidArgument", err)
			}
			sendBatch(t, addr, msgs)
		}},
		{"second run reuses an open recording's ids", func(t *testing.T, addr string) {
			sendBatch(t, addr, msgs[:30])
			refused := sendBatch(t, addr, second[:40])
			if len(refused) != 40 {
				t.Errorf("%d of 40 events of the second run refused, want all", len(refused))
			}
			for _, r := range refused {
				if r.GetReason() != ingestv1.RefusalReason_REFUSAL_REASON_RECORDER {
					t.Errorf("refusal %v", r)
				}
			}
			sendBatch(t, addr, msgs[30:])
		}},
		{"resent SessionStarted is a resend", func(t *testing.T, addr string) {
			sendBatch(t, addr, msgs[:30])
			if refused := sendBatch(t, addr, msgs); len(refused) != 0 {
				t.Errorf("resend refused: %v", refused)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			ts := startServer(t, root, "127.0.0.1:0")
			c.run(t, ts.Addr)
			ts.stop(t)
			if got := digest(t, root); got != want {
				t.Errorf("ROOT differs from the honest run's:\n%s", diffLines(want, got))
			}
		})
	}
}
