package events

import (
	"testing"
)

func TestRoundTripProperty(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	g := newGen(1)
	for i := range n {
		k := allKinds[i%len(allKinds)]
		ev, tm := g.event(k), g.time()
		m, err := ToProto(ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: ToProto: %v", i, k, err)
		}
		got, gotT, err := FromProto(m)
		if err != nil {
			t.Fatalf("#%d %v: FromProto: %v", i, k, err)
		}
		if d := diffEvents(ev, got); d != "" {
			t.Fatalf("#%d %v proto round trip: %s", i, k, d)
		}
		if !gotT.Equal(tm) {
			t.Fatalf("#%d time %v, want %v", i, gotT, tm)
		}
		b, err := AppendMarshal(nil, ev, tm)
		if err != nil {
			t.Fatalf("#%d %v: AppendMarshal: %v", i, k, err)
		}
		got, gotT, err = Unmarshal(b)
		if err != nil {
			t.Fatalf("#%d %v: Unmarshal: %v", i, k, err)
		}
		if d := diffEvents(ev, got); d != "" {
			t.Fatalf("#%d %v bytes round trip: %s", i, k, d)
		}
		if !gotT.Equal(tm) {
			t.Fatalf("#%d time %v, want %v", i, gotT, tm)
		}
	}
}
