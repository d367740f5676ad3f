package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// salvageSweepEnv set to "long" runs TestSalvageThenVerify over more
// crash points and damage positions (RELIABILITY.md).
const salvageSweepEnv = "RLREC_SALVAGE_SWEEP"

// TestSalvageThenVerify damages the log of a crashed ROOT (4 KiB
// segments, so that all but the last are sealed) in the ways that stop a
// recovery: a segment cut short inside a record, bytes flipped inside a
// record, a segment deleted (the oldest, one in the middle, the newest).
// 'rlrec recover' refuses each; 'rlrec recover --salvage' recovers, and
// 'rlrec verify' must then pass: a salvage leaves no sessions row whose
// counts disagree with the files. The normal run covers one crash point
// and two damage positions (15 logs); RLREC_SALVAGE_SWEEP=long runs seven
// crash points and five positions (231 logs).
func TestSalvageThenVerify(t *testing.T) {
	stream := readTestStream(t)
	prefixes, positions := []int{300}, []float64{0.3, 0.7}
	if os.Getenv(salvageSweepEnv) == "long" {
		prefixes, positions = []int{150, 300, 450, 600, 750, 900, -1}, []float64{0.1, 0.3, 0.5, 0.7, 0.9}
	}
	type damage struct {
		name string
		do   func(t *testing.T, segs []string)
	}
	rewrite := func(t *testing.T, path string, f func([]byte) []byte) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const header = 24 // a segment's header
	var cases []damage
	for _, at := range positions {
		for _, seg := range []int{0, 1, -2} { // sealed segments
			cases = append(cases,
				damage{fmt.Sprintf("truncate segment %d at %.1f", seg, at), func(t *testing.T, segs []string) {
					rewrite(t, segAt(segs, seg), func(b []byte) []byte { return b[:header+int(float64(len(b)-header)*at)] })
				}},
				damage{fmt.Sprintf("flip segment %d at %.1f", seg, at), func(t *testing.T, segs []string) {
					rewrite(t, segAt(segs, seg), func(b []byte) []byte {
						i := header + int(float64(len(b)-header)*at)
						for k := i; k < i+8 && k < len(b); k++ {
							b[k] ^= 0x5a
						}
						return b
					})
				}})
		}
	}
	for _, seg := range []int{0, 1, -1} {
		cases = append(cases, damage{fmt.Sprintf("delete segment %d", seg), func(t *testing.T, segs []string) {
			if err := os.Remove(segAt(segs, seg)); err != nil {
				t.Fatal(err)
			}
		}})
	}
	for _, n := range prefixes {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%d events/%s", n, tc.name), func(t *testing.T) {
				root := crashedRoot(t, stream, n)
				resegment(t, root, 4096)
				tc.do(t, segments(t, root))
				if code, out, errs := runCmd(t, "recover", root); code != 1 || !strings.Contains(errs, "--salvage") {
					t.Fatalf("recover of a damaged log: exit %d, want 1 pointing to --salvage\n%s%s", code, out, errs)
				}
				code, out, errs := runCmd(t, "recover", "--salvage", root)
				if code != 0 {
					t.Fatalf("recover --salvage: exit %d\n%s%s", code, out, errs)
				}
				if !strings.Contains(out, "log damage:") || strings.Contains(out, "log damage:            none") {
					t.Errorf("recover --salvage does not say what it cut:\n%s", out)
				}
				if code, vout, verrs := runCmd(t, "verify", root); code != 0 {
					t.Errorf("verify after the salvage: exit %d\n%s%s\nthe salvage said:\n%s", code, vout, verrs, out)
				}
			})
		}
	}
}

// segAt returns segs[i], counting from the end when i is negative.
func segAt(segs []string, i int) string {
	if i < 0 {
		i += len(segs)
	}
	return segs[i]
}
