package where

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rlrec/rlrec/dataset"
	"github.com/rlrec/rlrec/schema"
)

// Type is the type of a filterable column.
type Type uint8

const (
	TypeString Type = iota + 1
	TypeInt
	TypeFloat
	TypeBool
	TypeTimestamp
)

func (t Type) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "integer"
	case TypeFloat:
		return "float"
	case TypeBool:
		return "bool"
	case TypeTimestamp:
		return "timestamp"
	}
	return "unknown"
}

// value is one column value of an episode; null when the column is null.
type value struct {
	null bool
	s    string
	i    int64 // TypeInt; TypeTimestamp: unix microseconds
	f    float64
	b    bool
}

type column struct {
	name string
	typ  Type
	get  func(e *dataset.Episode) value
}

func str(s string) value { return value{s: s} }

func optStr(s *string) value {
	if s == nil {
		return value{null: true}
	}
	return value{s: *s}
}

func optInt(p *int64) value {
	if p == nil {
		return value{null: true}
	}
	return value{i: *p}
}

func optFloat(p *float64) value {
	if p == nil {
		return value{null: true}
	}
	return value{f: *p}
}

func optTime(p *time.Time) value {
	if p == nil {
		return value{null: true}
	}
	return value{i: p.UnixMicro()}
}

// columns lists what a filter may name, by lower-case name.
var columns = func() map[string]*column {
	cols := []*column{
		{schema.ColSessionID, TypeString, func(e *dataset.Episode) value { return str(e.SessionID) }},
		{schema.ColEnvID, TypeString, func(e *dataset.Episode) value { return str(e.EnvID) }},
		{schema.ColEpisodeRecordID, TypeString, func(e *dataset.Episode) value { return str(e.Row.EpisodeRecordID) }},
		{schema.ColEpisodeID, TypeString, func(e *dataset.Episode) value { return str(e.Row.EpisodeID) }},
		{schema.ColEpisodeIndex, TypeInt, func(e *dataset.Episode) value { return value{i: e.Row.EpisodeIndex} }},
		{schema.ColEnvIndex, TypeInt, func(e *dataset.Episode) value { return value{i: int64(e.Row.EnvIndex)} }},
		{schema.ColEnvComponentID, TypeString, func(e *dataset.Episode) value { return str(e.Row.EnvComponentID) }},
		{schema.ColModelComponentID, TypeString, func(e *dataset.Episode) value { return str(e.Row.ModelComponentID) }},
		{schema.ColStartedFromAutoReset, TypeBool, func(e *dataset.Episode) value { return value{b: e.Row.StartedFromAutoReset} }},
		{schema.ColStatus, TypeString, func(e *dataset.Episode) value { return str(e.Row.Status) }},
		{schema.ColStepCount, TypeInt, func(e *dataset.Episode) value { return optInt(e.Row.StepCount) }},
		{schema.ColCumulativeReward, TypeFloat, func(e *dataset.Episode) value { return optFloat(e.Row.CumulativeReward) }},
		{schema.ColStepsRecorded, TypeInt, func(e *dataset.Episode) value { return value{i: e.Row.StepsRecorded} }},
		{schema.ColRewardSum, TypeFloat, func(e *dataset.Episode) value { return value{f: e.Row.RewardSum} }},
		{schema.ColTerminated, TypeBool, func(e *dataset.Episode) value { return value{b: e.Row.Terminated} }},
		{schema.ColTruncated, TypeBool, func(e *dataset.Episode) value { return value{b: e.Row.Truncated} }},
		{schema.ColSuccess, TypeBool, func(e *dataset.Episode) value {
			if e.Row.Success == nil {
				return value{null: true}
			}
			return value{b: *e.Row.Success}
		}},
		{schema.ColDurationMs, TypeInt, func(e *dataset.Episode) value { return optInt(e.Row.DurationMs) }},
		{schema.ColStartedAt, TypeTimestamp, func(e *dataset.Episode) value { return value{i: e.Row.StartedAt.UnixMicro()} }},
		{schema.ColEndedAt, TypeTimestamp, func(e *dataset.Episode) value { return optTime(e.Row.EndedAt) }},
		{schema.ColFinalInfo, TypeString, func(e *dataset.Episode) value { return optStr(e.Row.FinalInfo) }},
		{schema.ColStepsFile, TypeString, func(e *dataset.Episode) value { return optStr(e.Row.StepsFile) }},
		// Schema version 3 (rlmesh 0.1); null in version 2 rows.
		{schema.ColSeed, TypeInt, func(e *dataset.Episode) value { return optInt(e.Row.Seed) }},
		{schema.ColTrialIndex, TypeInt, func(e *dataset.Episode) value {
			if e.Row.TrialIndex == nil || *e.Row.TrialIndex > math.MaxInt64 {
				// A trial index past int64 (no runtime counts that far)
				// compares as null rather than wrapping.
				return value{null: true}
			}
			return value{i: int64(*e.Row.TrialIndex)}
		}},
		{schema.ColSuccessSource, TypeString, func(e *dataset.Episode) value { return optStr(e.Row.SuccessSource) }},
		{schema.ColLane, TypeInt, func(e *dataset.Episode) value { return optInt(e.Row.Lane) }},
		{schema.ColPredictMs, TypeFloat, func(e *dataset.Episode) value { return optFloat(e.Row.PredictMs) }},
		{schema.ColStepMs, TypeFloat, func(e *dataset.Episode) value { return optFloat(e.Row.StepMs) }},
	}
	m := make(map[string]*column, len(cols))
	for _, c := range cols {
		m[c.name] = c
	}
	return m
}()

// Column is a column a filter may name, with its type.
type Column struct {
	Name string
	Type Type
}

// Columns lists the columns a filter may name, sorted by name.
func Columns() []Column {
	out := make([]Column, 0, len(columns))
	for _, c := range columns {
		out = append(out, Column{c.name, c.typ})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func columnNames() string {
	cs := Columns()
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}
