package report

import (
	"bufio"
	_ "embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/stats"
)

//go:embed page.html.tmpl
var pageTemplate string

//go:embed page.css
var pageCSS string

//go:embed page.js
var pageJS string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"returnsPlot": func(r *Recording, maxPoints int) template.HTML {
		return template.HTML(linePlot{Title: fmt.Sprintf("Return of each of the %d completed episodes, in order of completion", len(r.Completed)),
			XLabel: "episode, in order of completion", YLabel: "return", Values: r.Returns(), Window: meanWindow(len(r.Completed)), MaxPoints: maxPoints}.SVG())
	},
	"lengthsPlot": func(r *Recording, maxPoints int) template.HTML {
		return template.HTML(linePlot{Title: fmt.Sprintf("Length in steps of each of the %d completed episodes, in order of completion", len(r.Completed)),
			XLabel: "episode, in order of completion", YLabel: "steps", Values: r.Lengths(), Window: meanWindow(len(r.Completed)), MaxPoints: maxPoints}.SVG())
	},
	"successPlot": func(r *Recording, maxPoints int) template.HTML {
		return template.HTML(linePlot{Title: fmt.Sprintf("Success rate over the last %d episodes that reported success, in order of completion; the line across is the overall rate", r.SuccessWindow()),
			XLabel: "episode reporting success, in order of completion", YLabel: "success rate", Values: r.RollingSuccess(),
			Fixed: true, Lo: 0, Hi: 1, RefOn: true, Ref: r.SuccessRate(), MaxPoints: maxPoints}.SVG())
	},
	"rewardPlot": func(f *stats.Feature) template.HTML {
		return template.HTML(histogramPlot(fmt.Sprintf("Histogram of the reward of each of the %d steps", f.Elements[0].Count), "reward per step", f.Elements[0].Histogram))
	},
	"returnHistogram": func(r *Recording) template.HTML {
		return template.HTML(histogramPlot(fmt.Sprintf("Histogram of the returns of the %d completed episodes", len(r.Completed)), "return per episode", stats.HistogramOf(r.Returns())))
	},
	"mini": func(f *stats.Feature, i int) template.HTML {
		return template.HTML(miniHistogram(fmt.Sprintf("Distribution of %s%s", f.Name, elementSuffix(f, i)), f.Elements[i].Histogram))
	},
	"elements": func(f *stats.Feature, max int) []int {
		n := min(len(f.Elements), max)
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	},
	"elemIndex": func(f *stats.Feature, i int) string { return stats.Index(f.Shape, i) },
	"num":       num,
	"pct": func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	},
	"q": func(s stats.Summary, i int) string { return num(s.Quantiles[i]) },
	"dataURI": func(f Frame) template.URL {
		return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(f.PNG))
	},
	"labels": joinLabels,
	"time": func(t time.Time) string {
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"timePtr": func(t *time.Time) string {
		if t == nil {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"deref": func(s *string) string {
		if s == nil {
			return ""
		}
		return *s
	},
	"int64p": func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	},
	"texts": func(fs []findings.Finding) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = f.Text
		}
		return out
	},
	"css":        func() template.CSS { return template.CSS(pageCSS) },
	"js":         func() template.JS { return template.JS(pageJS) },
	"bytes":      humanBytes,
	"add":        func(a, b int) int { return a + b },
	"sub":        func(a, b int) int { return a - b },
	"stripFrame": func(s *Sequence, i int) Frame { return s.Frames[i] },
}).Parse(pageTemplate))

// meanWindow is the rolling-mean window of a per-episode plot: a
// twentieth of the episodes, at least 5; none below 20 episodes.
func meanWindow(n int) int {
	if n < 20 {
		return 0
	}
	return max(n/20, 5)
}

func elementSuffix(f *stats.Feature, i int) string {
	if len(f.Shape) == 0 {
		return ""
	}
	return stats.Index(f.Shape, i)
}

// WriteHTML writes the report as one self-contained HTML page: styles,
// script, plots (SVG) and frames (PNG data URIs) inline, nothing fetched.
// It does not close w.
func (rep *Report) WriteHTML(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	if err := page.Execute(bw, rep); err != nil {
		return fmt.Errorf("render report: %w", err)
	}
	return bw.Flush()
}

// Title is the page's title.
func (rep *Report) Title() string {
	if len(rep.Recordings) == 1 {
		r := rep.Recordings[0]
		return fmt.Sprintf("rlrec report: %s, session %s env %s", r.EnvComponentID, r.SessionID, r.EnvID)
	}
	return fmt.Sprintf("rlrec report: %s (%d recordings)", rep.Root, len(rep.Recordings))
}

// Name is the recording's heading.
func (r *Recording) Name() string {
	env := r.EnvComponentID
	if env == "" {
		env = "recording"
	}
	return fmt.Sprintf("%s: session %s env %s", env, r.SessionID, r.EnvID)
}

// Status is the sessions row's status, or says there is none.
func (r *Recording) Status() string {
	if r.Row == nil {
		return "no sessions row"
	}
	return r.Row.Status
}

// FeatureNotes says which features' elements the table leaves out.
func (r *Recording) FeatureNotes(maxElems int) []string {
	var out []string
	if r.Stats == nil {
		return nil
	}
	for _, f := range r.Stats.Features {
		if len(f.Elements) > maxElems {
			out = append(out, fmt.Sprintf("%s: the first %d of its %d elements are shown; %s lists them all",
				f.Name, maxElems, len(f.Elements), r.words.Say(findings.Action{Remedy: findings.Stats, Root: r.root, Recording: r.Recording})))
		}
	}
	return out
}

// LeftOutLeaves names the observation and action leaves that have no
// statistics: Text, leaves stored as binary (images), zero-element
// leaves.
func (r *Recording) LeftOutLeaves() string {
	have := map[string]bool{}
	if r.Stats != nil {
		for _, f := range r.Stats.Features {
			have[f.Name] = true
		}
	}
	var out []string
	for _, side := range []struct {
		prefix string
		l      *schema.Layout
	}{{schema.ColObservation, r.Spaces.Observation}, {schema.ColAction, r.Spaces.Action}} {
		if side.l == nil {
			continue
		}
		for _, lf := range side.l.Leaves {
			if n := schema.ColumnName(side.prefix, lf.Path); !have[n] {
				out = append(out, n+" ("+lf.String()+")")
			}
		}
	}
	return strings.Join(out, ", ")
}
