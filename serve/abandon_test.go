package serve_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/sim"
)

// TestAbandonedStreams: streams whose clients go away (context cancelled,
// connection closed) end on the server at once, not when it drains: the
// streams gauge comes back to 0.
func TestAbandonedStreams(t *testing.T) {
	msgs := sequencedSession(t, sim.Config{SessionID: "gone", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 2, Seed: 5})
	ts := startServer(t, t.TempDir(), "127.0.0.1:0")
	defer ts.stop(t)
	const streams = 40
	for i := range streams {
		cc, err := grpc.NewClient(ts.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		st, err := ingestv1.NewIngestClient(cc).Record(ctx, grpc.WaitForReady(true))
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if err := st.Send(&ingestv1.RecordRequest{Batch: 1, Events: msgs[:3]}); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
		cc.Close()
	}
	gauge := func() string {
		w := httptest.NewRecorder()
		ts.srv.Metrics().ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
		b, _ := io.ReadAll(w.Result().Body)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "rlrec_serve_streams ") {
				return strings.TrimPrefix(l, "rlrec_serve_streams ")
			}
		}
		return "?"
	}
	deadline := time.Now().Add(10 * time.Second)
	for gauge() != "0" {
		if time.Now().After(deadline) {
			t.Fatalf("rlrec_serve_streams %s 10 s after %d clients went away, want 0", gauge(), streams)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
