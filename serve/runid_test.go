package serve_test

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/ingest/ingestv1"
	"github.com/rlrec/rlrec/sim"
)

// withNonce returns msgs with the run nonce nonce appended to each.
func withNonce(msgs [][]byte, nonce []byte) [][]byte {
	out := make([][]byte, len(msgs))
	for i, m := range msgs {
		out[i] = events.AppendRunNonce(bytes.Clone(m), nonce)
	}
	return out
}

// untimed returns msgs without their times (as a producer that sends
// none), numbered as they were.
func untimed(t *testing.T, msgs [][]byte) [][]byte {
	t.Helper()
	out := make([][]byte, len(msgs))
	var dec events.Decoder
	for i, m := range msgs {
		ev, _, err := dec.Decode(m)
		if err != nil {
			t.Fatal(err)
		}
		seq := dec.Sequence()
		b, err := events.AppendMarshal(nil, ev, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = events.AppendSequence(b, seq)
	}
	return out
}

func runidInProcess(t *testing.T, root string) (string, func(bool)) {
	ts := startServer(t, root, "127.0.0.1:0")
	return ts.Addr, func(bool) { ts.stop(t) }
}

func runidInChild(t *testing.T, root string) (string, func(bool)) {
	addr := freeAddr(t)
	c := startChild(t, root, addr)
	return addr, func(kill bool) {
		if kill {
			c.kill()
		} else {
			c.term(t)
		}
	}
}

// TestRunIdentity: a second run that reuses a recording's ids is refused,
// live and after a restart (SIGTERM or SIGKILL), with or without run
// nonces and times, and never spliced into the first run's recording; a
// resend of the first run stays a resend, and new content under a used
// sequence number is refused. Every case's ROOT must equal the first run
// recorded alone.
func TestRunIdentity(t *testing.T) {
	cfg := sim.Config{SessionID: "runid", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6, Seed: 3}
	plainA := sequencedSession(t, cfg)
	first, _, err := events.Unmarshal(plainA[0])
	if err != nil {
		t.Fatal(err)
	}
	_, route := first.Header()
	other := cfg
	other.Seed, other.Route, other.MaxEpisodes = 9, route, 12
	plainB := sequencedSessionAt(t, other, time.Date(2026, 3, 4, 6, 0, 0, 0, time.UTC))
	if len(plainB) <= len(plainA) {
		t.Fatalf("the second run has %d events, the first %d: want it longer, so that it runs past the first's numbers", len(plainB), len(plainA))
	}
	t.Logf("the first run has %d events, the second %d", len(plainA), len(plainB))
	nonceA := bytes.Repeat([]byte{0xa1}, 16)
	nonceB := bytes.Repeat([]byte{0xb2}, 16)
	runA, runB := withNonce(plainA, nonceA), withNonce(plainB, nonceB)
	bareA, bareB := untimed(t, plainA), untimed(t, plainB)
	half := len(plainA) / 2

	type send struct {
		msgs [][]byte
		// refused: how many of msgs the server must refuse; want: a text
		// every refusal must hold.
		refused int
		want    []string
	}
	wantRoot := map[string]string{}
	reference := func(t *testing.T, a [][]byte) string {
		key := string(a[0])
		if w, ok := wantRoot[key]; ok {
			return w
		}
		root := t.TempDir()
		ts := startServer(t, root, "127.0.0.1:0")
		if refused := sendBatch(t, ts.Addr, a); len(refused) != 0 {
			t.Fatalf("the first run alone: refused %v", refused)
		}
		ts.stop(t)
		wantRoot[key] = digest(t, root)
		return wantRoot[key]
	}
	ofA := "run " + hex.EncodeToString(nonceA)
	ofB := "run " + hex.EncodeToString(nonceB)
	// changed is a's events from..to with other content under the same
	// numbers and nonce: B's events renumbered.
	changed := func(a, b [][]byte, from, to int, nonce []byte) [][]byte {
		var out [][]byte
		for i := from; i < to; i++ {
			m := resequenced(t, b[i], uint64(i+1))
			out = append(out, events.AppendRunNonce(m, nonce))
		}
		return out
	}
	cases := []struct {
		name string
		// a is the first run's events; steps before the restart (if
		// any) and after.
		a       [][]byte
		restart string // "", "term" or "kill"
		before  []send
		after   []send
	}{
		{name: "nonces, restart by SIGTERM", a: runA, restart: "term",
			before: []send{{msgs: runA[:half]}},
			after:  []send{{msgs: runB, refused: len(runB), want: []string{ofA, ofB}}, {msgs: runA[half-5:]}}},
		{name: "nonces, restart by SIGKILL", a: runA, restart: "kill",
			before: []send{{msgs: runA[:half]}},
			after:  []send{{msgs: runB, refused: len(runB), want: []string{ofA, ofB}}, {msgs: runA[half-5:]}}},
		{name: "nonces, the first run ended and published", a: runA, restart: "term",
			before: []send{{msgs: runA}},
			after:  []send{{msgs: runB, refused: len(runB), want: []string{ofA, ofB}}, {msgs: runA[len(runA)-5:]}}},
		{name: "nonces, live", a: runA,
			before: []send{{msgs: runA[:half]}, {msgs: runB, refused: len(runB), want: []string{ofA, ofB}}, {msgs: runA[half-5:]}}},
		{name: "second run without a nonce, restart by SIGKILL", a: runA, restart: "kill",
			before: []send{{msgs: runA[:half]}},
			after:  []send{{msgs: plainB, refused: len(plainB), want: []string{ofA, "a run without a nonce"}}, {msgs: runA[half:]}}},
		{name: "no nonces, times, restart by SIGKILL", a: plainA, restart: "kill",
			before: []send{{msgs: plainA[:half]}},
			after:  []send{{msgs: plainB, refused: len(plainB), want: []string{"a run without a nonce"}}, {msgs: plainA[half:]}}},
		{name: "resend of the same run across SIGKILL", a: runA, restart: "kill",
			before: []send{{msgs: runA[:half]}},
			after:  []send{{msgs: runA}}},
		{name: "new content under used numbers, same run", a: runA,
			before: []send{{msgs: runA[:half]}, {msgs: changed(runA, plainB, half-10, half, nonceA), refused: 10, want: []string{"already has with other content"}}, {msgs: runA[half:]}}},
		{name: "new content under used numbers, across SIGKILL", a: runA, restart: "kill",
			before: []send{{msgs: runA[:half]}},
			after:  []send{{msgs: changed(runA, plainB, half-10, half, nonceA), refused: 10, want: []string{"already has with other content"}}, {msgs: runA[half:]}}},
	}
	// Without times or nonces two runs' SessionStarted are the same bytes
	// (finding 2): the second run is refused from its first event whose
	// content differs under a used number, and nothing after it is taken.
	same := 0
	for same < len(bareA) && bytes.Equal(bareA[same], bareB[same]) {
		same++
	}
	if same == 0 || same >= half {
		t.Fatalf("untimed runs share %d leading events, want at least the SessionStarted and fewer than %d", same, half)
	}
	cases = append(cases, struct {
		name    string
		a       [][]byte
		restart string
		before  []send
		after   []send
	}{name: "no nonces, no times, live", a: bareA,
		before: []send{{msgs: bareA[:half]}, {msgs: bareB, refused: len(bareB) - same, want: []string{"already has with other content", "another run"}}, {msgs: bareA[half:]}}})
	cases = append(cases, struct {
		name    string
		a       [][]byte
		restart string
		before  []send
		after   []send
	}{name: "no nonces, no times, restart by SIGKILL", a: bareA, restart: "kill",
		before: []send{{msgs: bareA[:half]}},
		after:  []send{{msgs: bareB, refused: len(bareB) - same, want: []string{"already has with other content", "another run"}}, {msgs: bareA[half:]}}})

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := reference(t, c.a)
			root := t.TempDir()
			start := runidInProcess
			if c.restart != "" {
				start = runidInChild
			}
			do := func(addr string, sends []send) {
				for i, s := range sends {
					refused := sendBatch(t, addr, s.msgs)
					if len(refused) != s.refused {
						t.Errorf("send %d: %d of %d events refused, want %d", i, len(refused), len(s.msgs), s.refused)
					}
					for _, r := range refused {
						if r.GetReason() != ingestv1.RefusalReason_REFUSAL_REASON_RECORDER {
							t.Errorf("send %d: refusal %v", i, r)
						}
						for _, w := range s.want {
							if !strings.Contains(r.GetMessage(), w) {
								t.Errorf("send %d: refusal %q does not name %q", i, r.GetMessage(), w)
								break
							}
						}
					}
				}
			}
			addr, stop := start(t, root)
			do(addr, c.before)
			if c.restart != "" {
				stop(c.restart == "kill")
				addr, stop = start(t, root)
				do(addr, c.after)
			}
			stop(false)
			if got := digest(t, root); got != want {
				t.Errorf("ROOT differs from the first run's alone:\n%s", diffLines(want, got))
			}
			t.Logf("%d step rows compared", stepRows(want))
		})
	}
}

// stepRows sums the step rows a digest lists.
func stepRows(digest string) int {
	n := 0
	for _, line := range strings.Split(digest, "\n") {
		if !strings.HasPrefix(line, "steps ") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "rows="); ok {
				k, _ := strconv.Atoi(v)
				n += k
			}
		}
	}
	return n
}
