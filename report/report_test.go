package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"image/png"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/roottest"
	"github.com/rlrec/rlrec/recorder"
	"github.com/rlrec/rlrec/sim"
)

// everyEnv is one recording of each built-in env, with incomplete
// episodes (cartpole's lanes still running at the end) and success
// reported (pick-place, all-leaves).
func everyEnv() []sim.Config {
	return []sim.Config{
		{SessionID: "s", Env: "cartpole", NumEnvs: 3, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 8, TimeLimit: 30, Seed: 1},
		{SessionID: "s", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 4, MaxEpisodeSteps: 30, Seed: 2},
		{SessionID: "s", Env: "all-leaves", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 6, Seed: 3},
	}
}

// renderPage builds and renders the report of every recording of root,
// or of those of the session ids given.
func renderPage(t testing.TB, root string, opts []Option, sessions ...string) (*Report, string) {
	t.Helper()
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	recs := d.Recordings()
	if len(sessions) > 0 {
		recs = nil
		for _, sid := range sessions {
			recs = append(recs, d.Find(sid, "")...)
		}
	}
	rep, err := Build(context.Background(), d, recs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	return rep, b.String()
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

// all returns the element nodes under n (n included) that match.
func all(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func hasClass(name, class string) func(*html.Node) bool {
	return func(n *html.Node) bool {
		c, _ := attr(n, "class")
		return n.Data == name && strings.Contains(" "+c+" ", " "+class+" ")
	}
}

func text(n *html.Node) string {
	var b strings.Builder
	for _, t := range all(n, func(*html.Node) bool { return true }) {
		for c := t.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
	}
	return b.String()
}

// pngImages decodes every data-URI image under n and returns how many.
func pngImages(t *testing.T, n *html.Node) int {
	t.Helper()
	count := 0
	for _, img := range all(n, tag("img")) {
		src, _ := attr(img, "src")
		b64, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok {
			t.Errorf("an image whose src is not an inline PNG: %.60s", src)
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Errorf("image data: %v", err)
			continue
		}
		im, err := png.Decode(bytes.NewReader(raw))
		if err != nil {
			t.Errorf("image does not decode as PNG: %v", err)
			continue
		}
		if w, _ := attr(img, "width"); w == "" || im.Bounds().Dx() == 0 {
			t.Errorf("image without a width")
		}
		if alt, _ := attr(img, "alt"); alt == "" {
			t.Errorf("image without alt text")
		}
		count++
	}
	return count
}

// TestSections checks every section of every recording's part of the
// page, on both layouts: each case fails when its section is missing or
// shows nothing.
func TestSections(t *testing.T) {
	for _, l := range []hive.Layout{hive.LayoutEpisode, hive.LayoutSession} {
		t.Run(string(l), func(t *testing.T) {
			t.Parallel()
			root := roottest.Record(t, everyEnv(), recorder.WithLayout(l))
			// Few, small frames: PNG encoding is slow under -race.
			rep, out := renderPage(t, root, []Option{WithPlayerFrames(6), WithStripFrames(3), WithFrameSide(42)})
			doc, err := html.Parse(strings.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			recs := map[string]*html.Node{}
			for _, s := range all(doc, hasClass("section", "recording")) {
				id, _ := attr(s, "id")
				recs[id] = s
			}
			if len(rep.Recordings) != 3 || len(recs) != 3 {
				t.Fatalf("%d recordings built, %d recording sections; want 3 and 3", len(rep.Recordings), len(recs))
			}
			overview := all(doc, func(n *html.Node) bool { v, _ := attr(n, "data-section"); return v == "overview" })
			if len(overview) != 1 || len(all(overview[0], tag("tbody"))) != 1 || len(all(all(overview[0], tag("tbody"))[0], tag("tr"))) != 3 {
				t.Fatalf("no overview table with a row per recording")
			}
			for _, r := range rep.Recordings {
				sec := recs[r.Anchor]
				if sec == nil {
					t.Fatalf("no section for %s", r.Name())
				}
				byName := map[string]*html.Node{}
				for _, s := range all(sec, func(n *html.Node) bool { _, ok := attr(n, "data-section"); return ok }) {
					v, _ := attr(s, "data-section")
					byName[v] = s
				}
				for _, tc := range sectionChecks {
					t.Run(r.EnvComponentID+"/"+tc.name, func(t *testing.T) {
						s := byName[tc.name]
						if s == nil {
							t.Fatalf("section %q missing", tc.name)
						}
						if strings.TrimSpace(text(s)) == "" {
							t.Fatalf("section %q is empty", tc.name)
						}
						tc.check(t, r, s)
					})
				}
			}
		})
	}
}

var sectionChecks = []struct {
	name  string
	check func(t *testing.T, r *Recording, s *html.Node)
}{
	{"returns", func(t *testing.T, r *Recording, s *html.Node) {
		if len(r.Completed) == 0 {
			t.Fatalf("no completed episode recorded")
		}
		svgs := all(s, tag("svg"))
		if len(svgs) != 2 {
			t.Fatalf("%d plots, want returns and lengths", len(svgs))
		}
		for _, svg := range svgs {
			if len(all(svg, tag("polyline"))) == 0 || len(all(svg, hasClass("g", "dots"))) == 0 {
				t.Errorf("plot %q draws no line or dots", text(svg))
			}
			if len(all(svg, tag("circle"))) < len(r.Completed) {
				t.Errorf("plot draws %d dots for %d episodes", len(all(svg, tag("circle"))), len(r.Completed))
			}
		}
	}},
	{"success", func(t *testing.T, r *Recording, s *html.Node) {
		if r.EnvComponentID == "env/cartpole" {
			if r.Reported != 0 || !strings.Contains(text(s), "No completed episode reported success") {
				t.Fatalf("cartpole reports no success; the section says %q", text(s))
			}
			return
		}
		if r.Reported == 0 || len(all(s, tag("svg"))) != 1 || len(all(s, hasClass("line", "ref"))) != 1 {
			t.Fatalf("%d episodes reported success; want a rate plot with its reference line", r.Reported)
		}
		if !strings.Contains(text(s), "%") {
			t.Fatalf("no rate in %q", text(s))
		}
	}},
	{"rewards", func(t *testing.T, r *Recording, s *html.Node) {
		hists := all(s, hasClass("svg", "hist"))
		if len(hists) != 2 {
			t.Fatalf("%d histograms, want rewards and returns", len(hists))
		}
		for _, h := range hists {
			if len(all(h, tag("rect"))) == 0 {
				t.Errorf("histogram %q has no bar", text(h))
			}
		}
	}},
	{"features", func(t *testing.T, r *Recording, s *html.Node) {
		rows := all(s, hasClass("tr", "elem"))
		if r.Stats == nil || len(r.Stats.Features) < 2 {
			t.Fatalf("no statistics of observation or action features")
		}
		want := 0
		for _, f := range r.Stats.Features {
			want += min(len(f.Elements), Settings{}.withDefaults().MaxElements)
		}
		if len(rows) != want {
			t.Fatalf("%d element rows, want %d", len(rows), want)
		}
		if heads := all(s, hasClass("tr", "feature")); len(heads) != len(r.Stats.Features) {
			t.Fatalf("%d feature rows, want %d", len(heads), len(r.Stats.Features))
		}
		if n := len(all(s, hasClass("svg", "mini"))); n == 0 {
			t.Fatalf("no distribution plot")
		}
		if !strings.Contains(text(s), "reward") {
			t.Fatalf("no reward row")
		}
	}},
	{"findings", func(t *testing.T, r *Recording, s *html.Node) {
		if r.Incomplete > 0 {
			if len(r.Notes) == 0 || !strings.Contains(text(s), "recorded as incomplete, as expected") {
				t.Fatalf("%d incomplete episodes and no note: %q", r.Incomplete, text(s))
			}
			return
		}
		if !strings.Contains(text(s), "None") {
			t.Fatalf("no findings and no statement so: %q", text(s))
		}
	}},
	{"frames", func(t *testing.T, r *Recording, s *html.Node) {
		if r.EnvComponentID != "env/pick-place" {
			if len(r.Images) != 0 || !strings.Contains(text(s), "no image leaf") {
				t.Fatalf("%s has no image leaf; the section says %q", r.EnvComponentID, text(s))
			}
			return
		}
		seqs := all(s, hasClass("figure", "sequence"))
		if len(seqs) == 0 {
			t.Fatalf("no frame sequence")
		}
		for _, q := range seqs {
			strip := all(q, hasClass("ul", "strip"))
			players := all(q, func(n *html.Node) bool { _, ok := attr(n, "data-player"); return ok })
			if len(strip) != 1 || len(players) != 1 {
				t.Fatalf("a sequence without its strip or player")
			}
			if n := pngImages(t, strip[0]); n < 2 {
				t.Errorf("strip of %d frames", n)
			}
			if n := pngImages(t, players[0]); n < 2 {
				t.Errorf("player of %d frames", n)
			}
			if len(all(players[0], tag("button"))) != 1 || len(all(players[0], tag("input"))) != 1 || len(all(players[0], tag("label"))) != 1 {
				t.Errorf("player without its labelled controls")
			}
		}
		labels := map[string]bool{}
		for _, q := range seqs {
			v, _ := attr(q, "data-labels")
			for _, l := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
				labels[l] = true
			}
		}
		for _, l := range []string{"first", "best", "worst"} {
			if !labels[l] {
				t.Errorf("no %s episode among the sequences %v", l, labels)
			}
		}
	}},
}

// TestEdgeCases: recordings and bounds the demo does not reach.
func TestEdgeCases(t *testing.T) {
	tests := []struct {
		name  string
		cfgs  []sim.Config
		opts  []Option
		check func(t *testing.T, rep *Report, out string)
	}{
		{"failed before any episode completed",
			[]sim.Config{{SessionID: "f", Env: "cartpole", NumEnvs: 2, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 5, FailAfterSteps: 3, Seed: 1}},
			nil,
			func(t *testing.T, rep *Report, out string) {
				r := rep.Recordings[0]
				if len(r.Completed) != 0 || r.Incomplete != 2 || len(r.Problems) == 0 {
					t.Fatalf("%d completed, %d incomplete, problems %v", len(r.Completed), r.Incomplete, r.Problems)
				}
				for _, want := range []string{"No episode of this recording completed", "Problem: session f env ", "failed (", "No completed episode reported success"} {
					if !strings.Contains(out, want) {
						t.Errorf("the page does not say %q", want)
					}
				}
			}},
		{"frame budget spent",
			[]sim.Config{{SessionID: "b", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 20, Seed: 2}},
			[]Option{WithFrameBytes(1), WithPlayerFrames(4)},
			func(t *testing.T, rep *Report, out string) {
				img := rep.Recordings[0].Images[0]
				if len(img.Sequences) != 0 || len(img.Omitted) == 0 || rep.FrameBytes != 0 {
					t.Fatalf("%d sequences shown, %d left out, %d bytes of frames; want none shown", len(img.Sequences), len(img.Omitted), rep.FrameBytes)
				}
				if !strings.Contains(out, "Left out: episode ") || !strings.Contains(out, "frame budget of 1 B") {
					t.Fatalf("the page does not say which frames it left out")
				}
			}},
		{"frames shrunk and bounded",
			[]sim.Config{{SessionID: "k", Env: "pick-place", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 30, Seed: 2}},
			[]Option{WithFrameSide(30), WithPlayerFrames(5), WithStripFrames(3)},
			func(t *testing.T, rep *Report, out string) {
				for _, s := range rep.Recordings[0].Images[0].Sequences {
					if len(s.Frames) > 5 || len(s.Strip) > 3 || s.Frames[0].W != 28 || s.Frames[0].H != 28 {
						t.Fatalf("%d frames, strip %d, %dx%d; want at most 5, 3, and 28x28 (84 shrunk by 3)", len(s.Frames), len(s.Strip), s.Frames[0].W, s.Frames[0].H)
					}
				}
				if !strings.Contains(out, "shrunk from 84x84 to 28x28") {
					t.Fatalf("the page does not say the frames were shrunk")
				}
			}},
		{"buckets beyond MaxPoints",
			[]sim.Config{{SessionID: "m", Env: "cartpole", NumEnvs: 4, Autoreset: sim.AutoresetNextStep, MaxEpisodes: 30, TimeLimit: 20, Seed: 3}},
			[]Option{WithMaxPoints(10)},
			func(t *testing.T, rep *Report, out string) {
				if strings.Count(out, `<polygon class="band"`) != 2 || !strings.Contains(out, "each point is a bucket of consecutive episodes") {
					t.Fatalf("30 episodes with MaxPoints 10: want two band plots and the sentence explaining them")
				}
			}},
		{"elements beyond MaxElements",
			[]sim.Config{{SessionID: "e", Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 10, Seed: 5}},
			[]Option{WithMaxElements(1)},
			func(t *testing.T, rep *Report, out string) {
				want, cut := 0, 0
				for _, f := range rep.Recordings[0].Stats.Features {
					want += min(len(f.Elements), 1)
					if len(f.Elements) > 1 {
						cut++
					}
				}
				if got := strings.Count(out, `<tr class="elem">`); got != want || cut == 0 {
					t.Fatalf("%d element rows, want %d (one per feature; %d features have more elements)", got, want, cut)
				}
			}},
		{"ids are escaped",
			[]sim.Config{{SessionID: `<script>alert("x")</script>&`, Env: "cartpole", NumEnvs: 1, Autoreset: sim.AutoresetDisabled, MaxEpisodes: 2, MaxEpisodeSteps: 10, Seed: 4}},
			nil,
			func(t *testing.T, rep *Report, out string) {
				if strings.Contains(out, `<script>alert`) || !strings.Contains(out, `&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;`) {
					t.Fatalf("the session id reached the page unescaped")
				}
				if _, err := html.Parse(strings.NewReader(out)); err != nil {
					t.Fatal(err)
				}
			}},
	}
	// One ROOT holds every case's recording, each its own session id.
	var cfgs []sim.Config
	for _, tc := range tests {
		cfgs = append(cfgs, tc.cfgs...)
	}
	root := roottest.Record(t, cfgs, recorder.WithLayout(hive.LayoutEpisode))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rep, out := renderPage(t, root, tc.opts, tc.cfgs[0].SessionID)
			if len(rep.Recordings) != 1 {
				t.Fatalf("%d recordings of session %q", len(rep.Recordings), tc.cfgs[0].SessionID)
			}
			tc.check(t, rep, out)
		})
	}
}

func TestBuildNoRecordings(t *testing.T) {
	root := roottest.Record(t, everyEnv()[:1], recorder.WithLayout(hive.LayoutEpisode))
	d, err := dataset.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := Build(context.Background(), d, nil); err != ErrNoRecordings {
		t.Fatalf("got %v, want ErrNoRecordings", err)
	}
}

// TestPageSizeBounded: beyond MaxPoints episodes, the page does not grow
// with the episodes: ten times as many add less than 3 kB (longer numbers
// in the tables and labels), where drawing each episode would add tens.
func TestPageSizeBounded(t *testing.T) {
	size := func(episodes int64) int {
		root := roottest.Record(t, []sim.Config{{SessionID: "n", Env: "cartpole", NumEnvs: 8, Autoreset: sim.AutoresetNextStep, MaxEpisodes: episodes, TimeLimit: 30, Seed: 5}}, recorder.WithLayout(hive.LayoutSession))
		_, out := renderPage(t, root, []Option{WithMaxPoints(20)})
		return len(out)
	}
	small, large := size(60), size(600)
	if large-small > 3000 {
		t.Fatalf("60 episodes: %d bytes; 600 episodes: %d bytes; want less than 3 kB more", small, large)
	}
}
