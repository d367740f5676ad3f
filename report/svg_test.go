package report

import (
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlrec/rlrec/stats"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or writes it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run 'go test ./report -run %s -update' to create it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from %s:\ngot:\n%s\nwant:\n%s", t.Name(), path, got, want)
	}
}

// wellFormed checks that an SVG is one well-formed XML element with a
// title and an aria-label, and returns the names of the elements in it.
func wellFormed(t *testing.T, svg string) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(svg))
	names := map[string]int{}
	depth, roots := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				roots++
				if e.Name.Local != "svg" {
					t.Fatalf("root element %s, want svg", e.Name.Local)
				}
				label := false
				for _, a := range e.Attr {
					label = label || a.Name.Local == "aria-label" && a.Value != ""
				}
				if !label {
					t.Errorf("svg without an aria-label")
				}
			}
			names[e.Name.Local]++
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if roots != 1 || names["title"] != 1 {
		t.Fatalf("%d root elements and %d titles, want 1 and 1", roots, names["title"])
	}
	return names
}

func TestLinePlotGolden(t *testing.T) {
	seq := func(n int, f func(i int) float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	tests := []struct {
		name string
		plot linePlot
		// want counts elements by name
		want map[string]int
	}{
		{"line-few", linePlot{Title: "return per episode", XLabel: "episode", YLabel: "return", Values: []float64{1, 3, 2, 5}},
			map[string]int{"polyline": 1, "polygon": 0}},
		{"line-mean", linePlot{Title: "return", XLabel: "episode", YLabel: "return", Values: seq(12, func(i int) float64 { return float64(i % 4) }), Window: 4},
			map[string]int{"polyline": 2}},
		{"line-buckets", linePlot{Title: "length", XLabel: "episode", YLabel: "steps", Values: seq(20, func(i int) float64 { return float64(i * i % 7) }), MaxPoints: 5},
			map[string]int{"polygon": 1, "polyline": 1}},
		{"line-one", linePlot{Title: "one", XLabel: "episode", YLabel: "return", Values: []float64{-2.5}},
			map[string]int{"circle": 1, "polyline": 0}},
		{"line-empty", linePlot{Title: "none", XLabel: "episode", YLabel: "return"},
			map[string]int{"polyline": 0, "text": 1}},
		{"line-rate", linePlot{Title: "success rate", XLabel: "episode", YLabel: "rate", Values: []float64{0, 0.5, 1, 2.0 / 3}, Fixed: true, Lo: 0, Hi: 1, RefOn: true, Ref: 0.5},
			map[string]int{"polyline": 1}},
		{"line-nan", linePlot{Title: "with NaN", XLabel: "episode", YLabel: "return", Values: []float64{1, math.NaN(), 3, math.Inf(1)}},
			map[string]int{"polyline": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := tc.plot.SVG()
			names := wellFormed(t, svg)
			for el, n := range tc.want {
				if names[el] != n {
					t.Errorf("%d <%s> elements, want %d", names[el], el, n)
				}
			}
			golden(t, tc.name+".svg", svg)
		})
	}
}

func TestHistogramPlotGolden(t *testing.T) {
	tests := []struct {
		name  string
		h     stats.Histogram
		rects int
	}{
		{"hist-spread", stats.HistogramOf([]float64{0, 1, 1, 2, 2, 2, 3, 8}), 5},
		{"hist-one-value", stats.HistogramOf([]float64{1, 1, 1}), 1},
		{"hist-empty", stats.HistogramOf(nil), 0},
		{"hist-nonfinite", stats.HistogramOf([]float64{math.NaN(), math.Inf(-1), 0, 4}), 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := histogramPlot("reward per step", "reward", tc.h)
			if names := wellFormed(t, svg); names["rect"] != tc.rects {
				t.Errorf("%d bars, want %d", names["rect"], tc.rects)
			}
			golden(t, tc.name+".svg", svg)
			mini := miniHistogram("distribution", tc.h)
			if names := wellFormed(t, mini); names["rect"] != tc.rects {
				t.Errorf("mini: %d bars, want %d", names["rect"], tc.rects)
			}
			golden(t, "mini-"+tc.name+".svg", mini)
		})
	}
}

func TestNiceRange(t *testing.T) {
	tests := []struct {
		name       string
		lo, hi     float64
		wantLo     float64
		wantHi     float64
		wantTicks  int
		firstTicks []float64
	}{
		{"unit", 0, 1, 0, 1, 5, []float64{0, 0.25}},
		{"returns", 9, 500, 0, 600, 4, []float64{0, 200}},
		{"negative", -3.2, 1.1, -4, 2, 4, []float64{-4, -2}},
		{"equal", 5, 5, 2, 8, 4, []float64{2, 4}},
		{"nan", math.NaN(), 1, 0, 1, 5, []float64{0, 0.25}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi, ticks := niceRange(tc.lo, tc.hi, 4)
			if lo != tc.wantLo || hi != tc.wantHi || len(ticks) != tc.wantTicks || ticks[0] != tc.firstTicks[0] || ticks[1] != tc.firstTicks[1] {
				t.Fatalf("niceRange(%v, %v) = %v, %v, %v", tc.lo, tc.hi, lo, hi, ticks)
			}
		})
	}
}

func TestPlotTextEscaped(t *testing.T) {
	svg := linePlot{Title: `<script>alert("x")</script> & co`, XLabel: "a<b", YLabel: "c&d", Values: []float64{1, 2}}.SVG()
	wellFormed(t, svg)
	if strings.Contains(svg, "<script") {
		t.Fatalf("a title reached the SVG unescaped:\n%s", svg)
	}
}
