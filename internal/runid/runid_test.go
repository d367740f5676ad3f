package runid

import (
	"bytes"
	"testing"
)

func TestWindow(t *testing.T) {
	cases := []struct {
		name string
		add  [][2]uint64 // seq, hash
		get  map[uint64]uint64
		miss []uint64
	}{
		{name: "in order", add: [][2]uint64{{1, 11}, {2, 12}, {3, 13}}, get: map[uint64]uint64{1: 11, 2: 12, 3: 13}, miss: []uint64{0, 4}},
		{name: "a resend changes nothing", add: [][2]uint64{{1, 11}, {2, 12}, {2, 99}, {1, 98}}, get: map[uint64]uint64{1: 11, 2: 12}},
		{name: "a gap starts again", add: [][2]uint64{{1, 11}, {2, 12}, {7, 17}, {8, 18}}, get: map[uint64]uint64{7: 17, 8: 18}, miss: []uint64{1, 2, 6}},
		{name: "starts anywhere", add: [][2]uint64{{500, 5}, {501, 6}}, get: map[uint64]uint64{500: 5, 501: 6}, miss: []uint64{499, 502}},
		{name: "no hash, no number", add: [][2]uint64{{0, 3}, {1, 0}}, miss: []uint64{0, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w Window
			for _, a := range c.add {
				w.Add(a[0], a[1])
			}
			for seq, want := range c.get {
				if got, ok := w.Get(seq); !ok || got != want {
					t.Errorf("Get(%d) = %d, %t; want %d", seq, got, ok, want)
				}
			}
			for _, seq := range c.miss {
				if got, ok := w.Get(seq); ok {
					t.Errorf("Get(%d) = %d, want none", seq, got)
				}
			}
		})
	}
}

// TestWindowBound: the window keeps at least the last WindowEvents
// hashes and never more than twice as many.
func TestWindowBound(t *testing.T) {
	var w Window
	n := uint64(5*WindowEvents + 17)
	for seq := uint64(1); seq <= n; seq++ {
		w.Add(seq, seq*3)
		if w.Len() > 2*WindowEvents {
			t.Fatalf("after %d events the window holds %d hashes", seq, w.Len())
		}
	}
	for seq := n - WindowEvents + 1; seq <= n; seq++ {
		if got, ok := w.Get(seq); !ok || got != seq*3 {
			t.Fatalf("Get(%d) = %d, %t; want %d", seq, got, ok, seq*3)
		}
	}
	if _, ok := w.Get(1); ok {
		t.Error("the first hash is still kept")
	}
}

func TestNonceFormat(t *testing.T) {
	drawn := bytes.Repeat([]byte{0xab}, NonceBytes)
	derived := Derive([]byte("first event"))
	cases := []struct {
		name     string
		nonce    []byte
		describe string
		derived  bool
	}{
		{name: "drawn", nonce: drawn, describe: "run abababababababababababababababab"},
		{name: "derived", nonce: derived, describe: "a run without a nonce (its first event's hash ", derived: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Describe(c.nonce); len(got) < len(c.describe) || got[:len(c.describe)] != c.describe {
				t.Errorf("Describe = %q, want it to begin %q", got, c.describe)
			}
			if Derived(c.nonce) != c.derived {
				t.Errorf("Derived = %t", !c.derived)
			}
			back, err := Parse(Format(c.nonce))
			if err != nil || !bytes.Equal(back, c.nonce) {
				t.Errorf("Parse(Format) = %x, %v; want %x", back, err, c.nonce)
			}
		})
	}
	if bytes.Equal(Derive([]byte("a")), Derive([]byte("b"))) {
		t.Error("two first events derive the same nonce")
	}
	if ContentHash(nil) == 0 {
		t.Error("a content hash of 0")
	}
}

func TestChain(t *testing.T) {
	full := Chain{}.Add(1, 11).Add(2, 12).Add(3, 13)
	cases := []struct {
		name  string
		chain Chain
		want  Chain
	}{
		{name: "a resend changes nothing", chain: full.Add(2, 99).Add(3, 13), want: full},
		{name: "a gap stops it", chain: full.Add(5, 15), want: full},
		{name: "no hash stops it", chain: full.Add(4, 0), want: full},
		{name: "unnumbered", chain: Chain{}.Add(0, 7), want: Chain{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.chain != c.want {
				t.Errorf("chain %v, want %v", c.chain, c.want)
			}
		})
	}
	if other := (Chain{}).Add(1, 11).Add(2, 99).Add(3, 13); other == full || other.Events != 3 {
		t.Errorf("changing event 2 gives %v, the same as %v", other, full)
	}
	back, err := ParseChain(full.String())
	if err != nil || back != full {
		t.Errorf("ParseChain(%q) = %v, %v", full.String(), back, err)
	}
	for _, bad := range []string{"", "3", "x:0000000000000000", "3:00", "3:zz00000000000000"} {
		if _, err := ParseChain(bad); err == nil {
			t.Errorf("ParseChain(%q) took it", bad)
		}
	}
}
