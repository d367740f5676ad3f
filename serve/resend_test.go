package serve_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/sim"
)

// TestResendAfterPublished is a client resending events its server made
// durable but never acknowledged, to a new server started after the
// recording ended, was published and left the log. The new server must
// drop what ROOT holds (the files' rlrec.last_sequence), so ROOT stays
// byte-identical; a new run that reuses the recording's ids must be
// refused, from its SessionStarted on, not taken for a resend.
func TestResendAfterPublished(t *testing.T) {
	msgs := sequencedSession(t, sim.Config{SessionID: "resent", Env: "cartpole", NumEnvs: 2,
		Autoreset: sim.AutoresetNextStep, MaxEpisodes: 4, Seed: 3, LateWindow: true})
	root := t.TempDir()
	ts := startServer(t, root, "127.0.0.1:0")
	if refused := sendBatch(t, ts.Addr, msgs); len(refused) != 0 {
		t.Fatalf("first run: refused %v", refused)
	}
	ts.stop(t)
	before := tree(t, root)

	for _, c := range []struct {
		name string
		send [][]byte
		// refused: how many of send the server refuses (the rest it
		// drops as resent).
		refused int
	}{
		{"resent tail", msgs[len(msgs)-6:], 0},
		{"resent late window only", msgs[len(msgs)-1:], 0},
		{"new run with the same ids", msgs[:5], 5},
		{"whole run resent", msgs, len(msgs)},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := startServer(t, root, "127.0.0.1:0")
			refused := sendBatch(t, ts.Addr, c.send)
			ts.stop(t)
			if len(refused) != c.refused {
				t.Errorf("%d of %d events refused, want %d: %v", len(refused), len(c.send), c.refused, refused)
			}
			for _, r := range refused {
				if !strings.Contains(r.GetMessage(), "already in ROOT") {
					t.Errorf("refusal %v, want the recording named as already in ROOT", r)
				}
			}
			if after := tree(t, root); after != before {
				t.Errorf("ROOT changed:\n%s", diffLines(before, after))
			}
		})
	}
}

// sequencedSession runs cfg and returns its events as a client sends
// them: stamped and numbered within their recording from 1.
func sequencedSession(t *testing.T, cfg sim.Config) [][]byte {
	t.Helper()
	return sequencedSessionAt(t, cfg, time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
}

// sequencedSessionAt is sequencedSession with its events stamped from at.
func sequencedSessionAt(t *testing.T, cfg sim.Config, at time.Time) [][]byte {
	t.Helper()
	var buf bytes.Buffer
	w := events.NewStreamWriter(&buf)
	if _, err := sim.Run(context.Background(), sim.NewStreamHooks(w), cfg); err != nil {
		t.Fatal(err)
	}
	next := map[hive.Recording]uint64{}
	var msgs [][]byte
	for b := buf.Bytes(); len(b) > 0; {
		n, k := protowire.ConsumeVarint(b)
		if k < 0 || uint64(len(b)-k) < n {
			t.Fatalf("stream framing broken at %d bytes from its end", len(b))
		}
		ev, _, err := events.Unmarshal(b[k : k+int(n)])
		if err != nil {
			t.Fatal(err)
		}
		b = b[k+int(n):]
		sid, route := ev.Header()
		rec := hive.Recording{SessionID: sid, EnvID: route.EnvID}
		next[rec]++
		at = at.Add(time.Millisecond)
		m, err := events.AppendMarshal(nil, ev, at)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, events.AppendSequence(m, next[rec]))
	}
	if len(next) != 1 {
		t.Fatalf("the session's events name %d recordings, want 1", len(next))
	}
	return msgs
}

// sendBatch sends msgs as one batch on a new stream and returns the
// refusals of its acknowledgement.
func sendBatch(t *testing.T, addr string, msgs [][]byte) []*ingestv1.Refusal {
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
	var refused []*ingestv1.Refusal
	for {
		resp, err := st.Recv()
		if err != nil {
			t.Fatalf("receive the acknowledgement: %v", err)
		}
		refused = append(refused, resp.GetRefused()...)
		if resp.GetDurableBatch() >= 1 {
			break
		}
	}
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	return refused
}

// tree lists the table files under root with their digests (the
// recorder's own state in _rlrec left out), one line each, sorted.
func tree(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == hive.StateDir {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		lines = append(lines, fmt.Sprintf("%s %x", rel, sha256.Sum256(b)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
