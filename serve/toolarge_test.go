package serve_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/client"
	"github.com/rlrec/rlrec/serve"
	"github.com/rlrec/rlrec/sim"
)

// TestClientMessageTooLarge: a client whose messages exceed the server's
// maximum message size stops with a permanent error naming both sizes,
// instead of resending the same batch forever.
func TestClientMessageTooLarge(t *testing.T) {
	ts := startServer(t, t.TempDir(), "127.0.0.1:0", serve.WithMaxMessageBytes(64<<10))
	defer ts.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, ts.Addr, client.WithMaxMessageBytes(4<<20))
	if err != nil {
		t.Fatal(err)
	}
	// Images: one observation batch is about 169 KB.
	_, runErr := sim.Run(ctx, c, sim.Config{Env: "pick-place", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 1, Seed: 1, SessionID: "big"})
	err = c.Flush(ctx)
	if err == nil {
		err = runErr
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelClose()
	c.Close(closeCtx)
	if ctx.Err() != nil {
		t.Fatalf("the client was still retrying after 30 s: %v", err)
	}
	if !errors.Is(err, client.ErrEventTooLarge) || !strings.Contains(err.Error(), "65536") || !strings.Contains(err.Error(), "4194304") {
		t.Fatalf("error %v, want ErrEventTooLarge naming the server's 65536 and the client's 4194304 bytes", err)
	}
}
