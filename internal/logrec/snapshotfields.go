package logrec

import (
	"time"

	"github.com/rlrec/rlrec/events"
	"github.com/rlrec/rlrec/schema/spacesv1"
	"google.golang.org/protobuf/proto"
)

// The conversions between a snapshot's field values and the Go values
// they hold, for the code that fills a Snapshot and restores from one.

// UnixNanos is t as a snapshot's optional time fields hold it: Unix
// nanoseconds, nil (absent) for the zero time.
func UnixNanos(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixNano()
	return &v
}

// TimeOf is the time a snapshot's optional time field holds (UnixNanos),
// in UTC; the zero time when absent.
func TimeOf(v *int64) time.Time {
	if v == nil {
		return time.Time{}
	}
	return time.Unix(0, *v).UTC()
}

// Present returns b, non-nil even when empty: an optional bytes field
// that is present.
func Present(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// SpecBytes is spec as a snapshot's space fields hold it: its
// deterministic wire form, non-nil even when empty; nil (absent) for a
// nil spec.
func SpecBytes(spec *spacesv1.SpaceSpec) ([]byte, error) {
	if spec == nil {
		return nil, nil
	}
	wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(spec)
	if wire == nil && err == nil {
		wire = []byte{}
	}
	return wire, err
}

// RouteOf is c as a snapshot's route; nil (absent) for the zero context.
func RouteOf(c events.RuntimeEnvContext) *Route {
	if c == (events.RuntimeEnvContext{}) {
		return nil
	}
	return &Route{EnvId: []byte(c.EnvID), EnvComponentId: []byte(c.EnvComponentID),
		ModelComponentId: []byte(c.ModelComponentID)}
}

// Context is the runtime context r holds; the zero context for nil.
func (r *Route) Context() events.RuntimeEnvContext {
	if r == nil {
		return events.RuntimeEnvContext{}
	}
	return events.RuntimeEnvContext{EnvID: string(r.EnvId), EnvComponentID: string(r.EnvComponentId),
		ModelComponentID: string(r.ModelComponentId)}
}

// The bits of Row.Flags. Part of the on-disk format: do not change them.
const (
	RowFirst      = 1
	RowLast       = 2
	RowTerminated = 4
	RowTruncated  = 8
)

// RowFlags is the Row.Flags of a step row.
func RowFlags(first, last, terminated, truncated bool) int64 {
	var f int64
	for j, set := range []bool{first, last, terminated, truncated} {
		if set {
			f |= 1 << j
		}
	}
	return f
}

// TelemetryOf is a telemetry row r, received at at for horizon, as a
// snapshot holds it.
func TelemetryOf(at time.Time, horizon string, r events.TelemetryRow) *Telemetry {
	return &Telemetry{Time: UnixNanos(at), Horizon: []byte(horizon),
		Op: []byte(r.Op), Component: []byte(r.Component), Metric: []byte(r.Metric),
		Kind: int64(r.Kind), Count: int64(r.Count), Avg: r.Avg, P50: r.P50, P95: r.P95, P99: r.P99}
}

// Row is the telemetry row t holds (its time and horizon apart).
func (t *Telemetry) Row() events.TelemetryRow {
	return events.TelemetryRow{Op: string(t.Op), Component: string(t.Component), Metric: string(t.Metric),
		Kind: events.MetricKind(t.Kind), Count: uint64(t.Count), Avg: t.Avg, P50: t.P50, P95: t.P95, P99: t.P99}
}

// LogOf is a log row (its time, level, message and source, nil for
// null) as a snapshot holds it.
func LogOf(at time.Time, level, message string, source *string) *Log {
	m := &Log{Time: UnixNanos(at), Level: []byte(level), Message: []byte(message)}
	if source != nil {
		m.Source = Present([]byte(*source))
	}
	return m
}

// SourceOf is the source of the log row l holds; nil for null.
func (l *Log) SourceOf() *string {
	if l.Source == nil {
		return nil
	}
	src := string(l.Source)
	return &src
}
