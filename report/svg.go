package report

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/stats"
)

// The plots are SVG text made here, drawn with CSS classes only (no
// colours in the SVG), so the page's light and dark styles colour them:
//
//	grid     horizontal grid lines        axis    the axes
//	tick     tick labels                  label   axis titles
//	series   the values (line or points)  band    min-max of a bucket
//	dots     a dot per value (few values) ref     a reference line
//	mean     a rolling or bucket mean
//	bar      histogram bars               empty   "no values" text
//
// Every plot is an <svg role="img"> with an aria-label and a <title>
// saying what it shows, so a screen reader announces it; the numbers are
// also in the page's text and tables.

// Plot sizes, in CSS pixels (the page scales them down to fit).
const (
	plotW, plotH     = 560, 200
	plotLeft         = 56
	plotRight        = 14
	plotTop          = 12
	plotBottom       = 36
	histW, histH     = 320, 160
	miniW, miniH     = 96, 22
	defaultMaxPoints = 500
	// maxDots: up to this many values, each is drawn as a dot as well.
	maxDots = 60
)

// linePlot is a plot of values against their position (1-based).
type linePlot struct {
	// Title says what the plot shows; it becomes the aria-label.
	Title          string
	XLabel, YLabel string
	Values         []float64
	// Fixed, when set, is the y range [Lo, Hi] (a rate: [0, 1]).
	Fixed  bool
	Lo, Hi float64
	// Window, when > 1, adds the rolling mean of that many values.
	Window int
	// MaxPoints bounds the points drawn: beyond it, values are grouped
	// into MaxPoints buckets drawn as a min-max band with the bucket
	// means (0: defaultMaxPoints).
	MaxPoints int
	// Ref, when RefOn, draws a horizontal reference line at Ref (the
	// overall rate).
	RefOn bool
	Ref   float64
}

// svgOpen starts an svg element.
func svgOpen(b *strings.Builder, class string, w, h int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="%s" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="%s"><title>%s</title>`,
		class, w, h, w, h, esc(title), esc(title))
}

func esc(s string) string { return html.EscapeString(s) }

// num formats a number for a label: at most 4 significant digits.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case v == 0:
		return "0"
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// coord formats a coordinate with one decimal, without a trailing ".0".
func coord(v float64) string {
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	if s == "-0" {
		return "0"
	}
	return s
}

// niceStep returns the smallest step of 1, 2, 2.5 or 5 times a power of
// ten that is at least span/n.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		return mag
	case f <= 2:
		return 2 * mag
	case f <= 2.5:
		return 2.5 * mag
	case f <= 5:
		return 5 * mag
	}
	return 10 * mag
}

// niceRange widens [lo, hi] to multiples of a nice step and returns the
// ticks in it. Equal or non-finite bounds get a range around them.
func niceRange(lo, hi float64, n int) (float64, float64, []float64) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		lo, hi = 0, 1
	}
	if hi <= lo {
		d := math.Max(math.Abs(lo)*0.5, 1)
		lo, hi = lo-d, hi+d
	}
	step := niceStep(hi-lo, n)
	lo, hi = math.Floor(lo/step)*step, math.Ceil(hi/step)*step
	var ticks []float64
	for i := 0; ; i++ {
		v := lo + float64(i)*step
		if v > hi+step*1e-9 {
			break
		}
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		ticks = append(ticks, v)
	}
	return lo, hi, ticks
}

// SVG renders the plot.
func (p linePlot) SVG() string {
	var b strings.Builder
	svgOpen(&b, "plot", plotW, plotH, p.Title)
	n := len(p.Values)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range p.Values {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if n == 0 || lo > hi {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no values</text></svg>`, plotW/2, plotH/2)
		return b.String()
	}
	var yTicks []float64
	if p.Fixed {
		lo, hi = p.Lo, p.Hi
		_, _, yTicks = niceRange(lo, hi, 4)
	} else {
		lo, hi, yTicks = niceRange(lo, hi, 5)
	}
	x0, x1 := float64(plotLeft), float64(plotW-plotRight)
	y0, y1 := float64(plotH-plotBottom), float64(plotTop)
	// x: positions 1..n; one value sits in the middle.
	xAt := func(i float64) float64 {
		if n == 1 {
			return (x0 + x1) / 2
		}
		return x0 + (i-1)/float64(n-1)*(x1-x0)
	}
	yAt := func(v float64) float64 { return y0 + (v-lo)/(hi-lo)*(y1-y0) }

	b.WriteString(`<g class="grid">`)
	for _, t := range yTicks {
		y := coord(yAt(t))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x0), y, coord(x1), y)
	}
	b.WriteString(`</g><g class="tick">`)
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, coord(x0-6), coord(yAt(t)+4), num(t))
	}
	_, _, xTicks := niceRange(1, float64(max(n, 2)), 6)
	for _, t := range xTicks {
		if t < 1 || t > float64(n) || t != math.Trunc(t) {
			continue
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord(xAt(t)), coord(y0+16), num(t))
	}
	fmt.Fprintf(&b, `</g><g class="axis"><line x1="%s" y1="%s" x2="%s" y2="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/></g>`,
		coord(x0), coord(y0), coord(x1), coord(y0), coord(x0), coord(y0), coord(x0), coord(y1))
	fmt.Fprintf(&b, `<text class="label" x="%s" y="%d" text-anchor="middle">%s</text>`, coord((x0+x1)/2), plotH-4, esc(p.XLabel))
	fmt.Fprintf(&b, `<text class="label" x="12" y="%s" text-anchor="middle" transform="rotate(-90 12 %s)">%s</text>`,
		coord((y0+y1)/2), coord((y0+y1)/2), esc(p.YLabel))
	if p.RefOn {
		y := coord(yAt(p.Ref))
		fmt.Fprintf(&b, `<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x0), y, coord(x1), y)
	}
	maxPoints := p.MaxPoints
	if maxPoints <= 0 {
		maxPoints = defaultMaxPoints
	}
	clamp := func(v float64) float64 { return min(max(v, lo), hi) }
	if n <= maxPoints {
		pts := make([]string, 0, n)
		for i, v := range p.Values {
			if math.IsNaN(v) {
				continue
			}
			pts = append(pts, coord(xAt(float64(i+1)))+","+coord(yAt(clamp(v))))
		}
		if n > 1 {
			fmt.Fprintf(&b, `<polyline class="series" points="%s"/>`, strings.Join(pts, " "))
		}
		if n <= maxDots {
			// Few values: each is a dot too, so a single one shows.
			b.WriteString(`<g class="dots">`)
			for _, pt := range pts {
				x, y, _ := strings.Cut(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5"/>`, x, y)
			}
			b.WriteString(`</g>`)
		}
		if p.Window > 1 && n > p.Window {
			pts = pts[:0]
			var sum float64
			var cnt int
			for i, v := range p.Values {
				if !math.IsNaN(v) {
					sum += v
					cnt++
				}
				if j := i - p.Window; j >= 0 && !math.IsNaN(p.Values[j]) {
					sum -= p.Values[j]
					cnt--
				}
				if i+1 >= p.Window && cnt > 0 {
					pts = append(pts, coord(xAt(float64(i+1)))+","+coord(yAt(clamp(sum/float64(cnt)))))
				}
			}
			fmt.Fprintf(&b, `<polyline class="mean" points="%s"/>`, strings.Join(pts, " "))
		}
	} else {
		upper := make([]string, 0, maxPoints)
		lower := make([]string, 0, maxPoints)
		means := make([]string, 0, maxPoints)
		for k := range maxPoints {
			from, to := k*n/maxPoints, (k+1)*n/maxPoints
			bl, bh, sum, cnt := math.Inf(1), math.Inf(-1), 0.0, 0
			for _, v := range p.Values[from:to] {
				if math.IsNaN(v) {
					continue
				}
				bl, bh, sum, cnt = min(bl, v), max(bh, v), sum+v, cnt+1
			}
			if cnt == 0 {
				continue
			}
			x := coord(xAt(float64(from+to+1) / 2))
			upper = append(upper, x+","+coord(yAt(clamp(bh))))
			lower = append(lower, x+","+coord(yAt(clamp(bl))))
			means = append(means, x+","+coord(yAt(clamp(sum/float64(cnt)))))
		}
		for i, j := 0, len(lower)-1; i < j; i, j = i+1, j-1 {
			lower[i], lower[j] = lower[j], lower[i]
		}
		fmt.Fprintf(&b, `<polygon class="band" points="%s %s"/>`, strings.Join(upper, " "), strings.Join(lower, " "))
		fmt.Fprintf(&b, `<polyline class="mean" points="%s"/>`, strings.Join(means, " "))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// histogramPlot draws a stats.Histogram with axes.
func histogramPlot(title, xLabel string, h stats.Histogram) string {
	var b strings.Builder
	svgOpen(&b, "plot hist", histW, histH, title+histogramNote(h))
	if len(h.Counts) == 0 {
		fmt.Fprintf(&b, `<text class="empty" x="%d" y="%d" text-anchor="middle">no finite values</text></svg>`, histW/2, histH/2)
		return b.String()
	}
	var top int64
	for _, c := range h.Counts {
		top = max(top, c)
	}
	_, yHi, yTicks := niceRange(0, float64(top), 3)
	x0, x1 := float64(plotLeft), float64(histW-plotRight)
	y0, y1 := float64(histH-plotBottom), float64(plotTop)
	yAt := func(v float64) float64 { return y0 + v/yHi*(y1-y0) }
	b.WriteString(`<g class="grid">`)
	for _, t := range yTicks {
		y := coord(yAt(t))
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, coord(x0), y, coord(x1), y)
	}
	b.WriteString(`</g><g class="tick">`)
	for _, t := range yTicks {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, coord(x0-6), coord(yAt(t)+4), num(t))
	}
	if len(h.Counts) == 1 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, coord((x0+x1)/2), coord(y0+16), num(h.Lo))
	} else {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="start">%s</text>`, coord(x0), coord(y0+16), num(h.Lo))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end">%s</text>`, coord(x1), coord(y0+16), num(h.Hi))
	}
	b.WriteString(`</g><g class="bar">`)
	bw := (x1 - x0) / float64(len(h.Counts))
	if len(h.Counts) == 1 {
		bw = (x1 - x0) / 8
	}
	for k, c := range h.Counts {
		if c == 0 {
			continue
		}
		x := x0 + float64(k)*bw
		if len(h.Counts) == 1 {
			x = (x0+x1)/2 - bw/2
		}
		y := yAt(float64(c))
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s"/>`, coord(x+0.5), coord(y), coord(max(bw-1, 0.5)), coord(y0-y))
	}
	fmt.Fprintf(&b, `</g><g class="axis"><line x1="%s" y1="%s" x2="%s" y2="%s"/><line x1="%s" y1="%s" x2="%s" y2="%s"/></g>`,
		coord(x0), coord(y0), coord(x1), coord(y0), coord(x0), coord(y0), coord(x0), coord(y1))
	fmt.Fprintf(&b, `<text class="label" x="%s" y="%d" text-anchor="middle">%s</text>`, coord((x0+x1)/2), histH-4, esc(xLabel))
	b.WriteString(`</svg>`)
	return b.String()
}

// histogramNote names the values a histogram's bins leave out.
func histogramNote(h stats.Histogram) string {
	var parts []string
	for _, x := range []struct {
		n    int64
		what string
	}{{h.NegInf, "-Inf"}, {h.PosInf, "+Inf"}, {h.NaN, "NaN"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (not drawn: " + strings.Join(parts, ", ") + ")"
}

// miniHistogram draws a histogram small enough for a table cell: bars
// only, the numbers being in the row.
func miniHistogram(title string, h stats.Histogram) string {
	var b strings.Builder
	svgOpen(&b, "mini", miniW, miniH, title+histogramNote(h))
	var top int64
	for _, c := range h.Counts {
		top = max(top, c)
	}
	fmt.Fprintf(&b, `<line class="axis" x1="0" y1="%d" x2="%d" y2="%d"/>`, miniH-1, miniW, miniH-1)
	if top > 0 {
		b.WriteString(`<g class="bar">`)
		bw := float64(miniW) / float64(len(h.Counts))
		x := 0.0
		if len(h.Counts) == 1 {
			bw = float64(miniW) / 8
			x = float64(miniW)/2 - bw/2
		}
		for _, c := range h.Counts {
			if c > 0 {
				bh := max(float64(c)/float64(top)*float64(miniH-2), 1)
				fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s"/>`, coord(x), coord(float64(miniH-1)-bh), coord(max(bw-0.5, 0.5)), coord(bh))
			}
			x += bw
		}
		b.WriteString(`</g>`)
	}
	b.WriteString(`</svg>`)
	return b.String()
}
