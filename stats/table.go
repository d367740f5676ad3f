package stats

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/rlrec/rlrec/blob"
	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/schema"
)

// Scopes of a Row.
const (
	ScopeRecording = "recording"
	ScopeOverall   = "overall"
)

// Row is one row of the stats table: the statistics of one element of
// one feature in one scope. Its parquet tags define the table's columns
// (the contract of the file 'rlrec stats -o' writes). Statistics are null
// when count is 0.
type Row struct {
	// Scope is "recording" (session_id and env_id name it) or "overall"
	// (session_id and env_id are null; recordings counts the recordings
	// merged).
	Scope      string  `parquet:"scope,dict"`
	SessionID  *string `parquet:"session_id,optional"`
	EnvID      *string `parquet:"env_id,optional"`
	Spaces     string  `parquet:"spaces,dict"`
	Recordings int64   `parquet:"recordings"`
	Steps      int64   `parquet:"steps"`
	Feature    string  `parquet:"feature,dict"`
	Leaf       string  `parquet:"leaf,dict"`
	// Element is the 0-based row-major element index in the leaf, Index
	// the same as a multi-dimensional index ("[]" for a scalar, "[1,2]").
	Element int64    `parquet:"element"`
	Index   string   `parquet:"index,dict"`
	Count   int64    `parquet:"count"`
	Mean    *float64 `parquet:"mean,optional"`
	Std     *float64 `parquet:"std,optional"`
	Min     *float64 `parquet:"min,optional"`
	Max     *float64 `parquet:"max,optional"`
	P01     *float64 `parquet:"p01,optional"`
	P25     *float64 `parquet:"p25,optional"`
	P50     *float64 `parquet:"p50,optional"`
	P75     *float64 `parquet:"p75,optional"`
	P99     *float64 `parquet:"p99,optional"`
}

// Rows flattens a result: the recordings' rows, then the overall ones.
func (r *Result) Rows() []Row {
	var out []Row
	for _, rec := range r.Recordings {
		sid, eid := rec.SessionID, rec.EnvID
		out = appendRows(out, Row{Scope: ScopeRecording, SessionID: &sid, EnvID: &eid, Spaces: rec.Spaces, Recordings: 1, Steps: rec.Steps}, rec.Features)
	}
	for _, g := range r.Overall {
		out = appendRows(out, Row{Scope: ScopeOverall, Spaces: g.Spaces, Recordings: int64(len(g.Recordings)), Steps: g.Steps}, g.Features)
	}
	return out
}

func appendRows(out []Row, base Row, feats []Feature) []Row {
	for _, f := range feats {
		for i, s := range f.Elements {
			r := base
			r.Feature, r.Leaf, r.Element, r.Index, r.Count = f.Name, f.Leaf, int64(i), Index(f.Shape, i), s.Count
			if s.Count > 0 {
				vals := []**float64{&r.P01, &r.P25, &r.P50, &r.P75, &r.P99}
				r.Mean, r.Std, r.Min, r.Max = ptr(s.Mean), ptr(s.Std), ptr(s.Min), ptr(s.Max)
				for k := range vals {
					*vals[k] = ptr(s.Quantiles[k])
				}
			}
			out = append(out, r)
		}
	}
	return out
}

func ptr(f float64) *float64 { return &f }

// Metadata keys of the stats file.
const (
	MetaStatsVersion = "rlrec.stats_version"
	MetaQuantiles    = "rlrec.stats.quantiles"
	MetaStd          = "rlrec.stats.std"
)

// WriteParquet writes the result's rows as one Parquet file (zstd), with
// the key-value metadata rlrec.schema_version (of the tables the
// statistics were computed from), rlrec.stats_version ("1"),
// rlrec.stats.quantiles ("exact quantile_disc") and rlrec.stats.std
// ("population").
func (r *Result) WriteParquet(w io.Writer) error {
	pw := parquet.NewGenericWriter[Row](w,
		parquet.Compression(&zstd.Codec{}),
		parquet.KeyValueMetadata(schema.MetaSchemaVersion, schema.SchemaVersion),
		parquet.KeyValueMetadata(MetaStatsVersion, "1"),
		parquet.KeyValueMetadata(MetaQuantiles, "exact quantile_disc"),
		parquet.KeyValueMetadata(MetaStd, "population"),
	)
	rows := r.Rows()
	for len(rows) > 0 {
		n, err := pw.Write(rows[:min(len(rows), 8192)])
		if err != nil {
			return fmt.Errorf("write stats rows: %w", err)
		}
		rows = rows[n:]
	}
	if err := pw.Close(); err != nil {
		return fmt.Errorf("write stats file: %w", err)
	}
	return nil
}

// AppendJSON appends the result as one JSON object:
//
//	{"recordings": [{"session_id", "env_id", "spaces", "steps", "features": [F...]}],
//	 "overall": [{"spaces", "recordings": [{"session_id", "env_id"}], "steps", "features": [F...]}]}
//
// where each feature F is {"feature", "leaf", "shape", "count": [..],
// "mean": [..], "std": [..], "min": [..], "max": [..], "p01": [..], ...},
// one array element per leaf element (row-major), null where count is 0,
// NaN and the infinities as the strings "NaN", "Infinity", "-Infinity".
func (r *Result) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"recordings":[`...)
	for i, rec := range r.Recordings {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"session_id":`...)
		dst = blob.AppendJSONString(dst, rec.SessionID)
		dst = append(dst, `,"env_id":`...)
		dst = blob.AppendJSONString(dst, rec.EnvID)
		dst = append(dst, `,"spaces":`...)
		dst = blob.AppendJSONString(dst, rec.Spaces)
		dst = append(dst, `,"steps":`...)
		dst = blob.AppendJSONInt(dst, rec.Steps)
		dst = appendFeaturesJSON(dst, rec.Features)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"overall":[`...)
	for i, g := range r.Overall {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"spaces":`...)
		dst = blob.AppendJSONString(dst, g.Spaces)
		dst = append(dst, `,"recordings":[`...)
		for k, rec := range g.Recordings {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"session_id":`...)
			dst = blob.AppendJSONString(dst, rec.SessionID)
			dst = append(dst, `,"env_id":`...)
			dst = blob.AppendJSONString(dst, rec.EnvID)
			dst = append(dst, '}')
		}
		dst = append(dst, `],"steps":`...)
		dst = blob.AppendJSONInt(dst, g.Steps)
		dst = appendFeaturesJSON(dst, g.Features)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendFeaturesJSON(dst []byte, feats []Feature) []byte {
	dst = append(dst, `,"features":[`...)
	for i, f := range feats {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"feature":`...)
		dst = blob.AppendJSONString(dst, f.Name)
		dst = append(dst, `,"leaf":`...)
		dst = blob.AppendJSONString(dst, f.Leaf)
		dst = append(dst, `,"shape":[`...)
		for k, d := range f.Shape {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = blob.AppendJSONInt(dst, d)
		}
		dst = append(dst, `],"count":[`...)
		for k, s := range f.Elements {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = blob.AppendJSONInt(dst, s.Count)
		}
		dst = append(dst, ']')
		stat := func(name string, get func(*Summary) float64) {
			dst = append(dst, `,"`+name+`":[`...)
			for k := range f.Elements {
				if k > 0 {
					dst = append(dst, ',')
				}
				s := &f.Elements[k]
				if s.Count == 0 {
					dst = append(dst, "null"...)
				} else {
					dst = blob.AppendJSONFloat(dst, get(s), 64)
				}
			}
			dst = append(dst, ']')
		}
		stat("mean", func(s *Summary) float64 { return s.Mean })
		stat("std", func(s *Summary) float64 { return s.Std })
		stat("min", func(s *Summary) float64 { return s.Min })
		stat("max", func(s *Summary) float64 { return s.Max })
		for q, name := range QuantileNames {
			stat(name, func(s *Summary) float64 { return s.Quantiles[q] })
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

// WriteText writes the result as aligned tables, one per recording and one
// per group of recordings with equal spaces.
func (r *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	section := func(title string, feats []Feature) {
		fmt.Fprintf(tw, "%s\n", title)
		fmt.Fprintf(tw, "feature\tindex\tcount\tmean\tstd\tmin\tp01\tp25\tp50\tp75\tp99\tmax\t\n")
		for _, f := range feats {
			for i, s := range f.Elements {
				fmt.Fprintf(tw, "%s\t%s\t%d\t", f.Name, Index(f.Shape, i), s.Count)
				vals := append([]float64{s.Mean, s.Std, s.Min}, s.Quantiles[:]...)
				vals = append(vals, s.Max)
				for _, v := range vals {
					if s.Count == 0 {
						fmt.Fprintf(tw, "-\t")
					} else {
						fmt.Fprintf(tw, "%s\t", formatStat(v))
					}
				}
				fmt.Fprintf(tw, "\n")
			}
		}
		fmt.Fprintf(tw, "\n")
	}
	for _, rec := range r.Recordings {
		section(fmt.Sprintf("%s: %s, spaces %s", rec.Recording, count(rec.Steps, "step"), spacesName(rec.Spaces)), rec.Features)
	}
	for _, g := range r.Overall {
		section(fmt.Sprintf("overall, spaces %s: %s of %s", spacesName(g.Spaces), count(g.Steps, "step"), recordingList(g.Recordings)), g.Features)
	}
	return tw.Flush()
}

func spacesName(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func recordingList(recs []dataset.Recording) string {
	if len(recs) == 1 {
		return "1 recording"
	}
	sessions := map[string]bool{}
	for _, r := range recs {
		sessions[r.SessionID] = true
	}
	if len(sessions) == 1 {
		return fmt.Sprintf("%d recordings of session %q", len(recs), recs[0].SessionID)
	}
	return fmt.Sprintf("%d recordings", len(recs))
}

func count(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}

// formatStat renders a statistic in at most about 10 characters.
func formatStat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	s := strconv.FormatFloat(v, 'g', 6, 64)
	return strings.Replace(s, "e+", "e", 1)
}
