package schema

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/schema/spacesv1"
)

// nestedSpec is a Dict/Tuple space with a leaf of every kind, an image
// above the binary threshold and a float16 leaf.
func nestedSpec() *spacesv1.SpaceSpec {
	return dict([]string{"pos", "cam", "inner", "flags", "cmd"},
		box(dtF32, 3),
		box(dtU8, 84, 84, 3),
		tuple(
			discrete(dtI32, 5, 0),
			box(dtF16, 2),
			box(dtF64),
			multiDiscrete(spacesv1.DataType_DATA_TYPE_UINT16, nil, 3, 4),
		),
		multiBinary(dtU8, 2, 2),
		text(),
	)
}

func mustLayout(t *testing.T, spec *spacesv1.SpaceSpec) *Layout {
	t.Helper()
	l, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestStepsSchemaGolden(t *testing.T) {
	st, err := StepsSchema(mustLayout(t, nestedSpec()), mustLayout(t, discrete(dtI64, 4, 0)), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.WriteString(st.Schema.String())
	out.WriteString("\n\n")
	for _, cols := range [][]TypedColumn{st.Observation, st.Action} {
		for _, c := range cols {
			fmt.Fprintf(&out, "%s index=%d form=%d kind=%s\n", c.Name, c.Index, c.Form, c.Kind)
		}
	}
	golden := filepath.Join("testdata", "steps_schema.golden")
	if *updateGolden {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("steps schema differs from %s (run with -update after a deliberate change):\n%s", golden, out.Bytes())
	}
}

func TestStepsSchemaColumns(t *testing.T) {
	fixed := []string{
		ColEpisodeID, ColEpisodeIndex, ColEnvIndex, ColStep, ColSessionStep,
		ColObservationBlob, ColActionBlob, ColReward, ColIsFirst, ColIsLast,
		ColTerminated, ColTruncated, ColRecordedAt,
	}
	if len(fixed) != NumFixedStepsColumns {
		t.Fatalf("NumFixedStepsColumns = %d, fixed columns %d", NumFixedStepsColumns, len(fixed))
	}
	tests := []struct {
		name      string
		obs, act  *spacesv1.SpaceSpec
		threshold int
		want      []string // typed column names
		forms     []ColumnForm
		types     []string // leaf column type, as parquet-go prints it
	}{
		{
			name: "single leaves", obs: box(dtF32, 4), act: discrete(dtI64, 2, 0),
			want:  []string{"observation", "action"},
			forms: []ColumnForm{FormList, FormScalar},
			types: []string{"FLOAT", "INT(64,true)"},
		},
		{
			name: "scalar box and unsigned", obs: box(spacesv1.DataType_DATA_TYPE_UINT8), act: box(spacesv1.DataType_DATA_TYPE_UINT64, 2),
			want:  []string{"observation", "action"},
			forms: []ColumnForm{FormScalar, FormList},
			types: []string{"INT(8,false)", "INT(64,false)"},
		},
		{
			name: "float16 widened", obs: box(dtF16, 2), act: box(dtF16),
			want:  []string{"observation", "action"},
			forms: []ColumnForm{FormList, FormScalar},
			types: []string{"FLOAT", "FLOAT"},
		},
		{
			name: "threshold", obs: box(dtU8, 8, 8), act: box(dtU8, 8), threshold: 32,
			want:  []string{"observation", "action"},
			forms: []ColumnForm{FormBinary, FormList},
			types: []string{"BYTE_ARRAY", "INT(8,false)"},
		},
		{
			name: "dict one key keeps its path", obs: dict([]string{"pos"}, box(dtF64, 2)), act: text(),
			want:  []string{"observation.pos", "action"},
			forms: []ColumnForm{FormList, FormString},
			types: []string{"DOUBLE", "STRING"},
		},
		{
			name: "nested", obs: tuple(multiBinary(dtBool, 3), dict([]string{"a", "b"}, multiDiscrete(dtI32, nil, 2, 2), box(dtBool))), act: tuple(),
			want:  []string{"observation.0", "observation.1.a", "observation.1.b"},
			forms: []ColumnForm{FormList, FormList, FormScalar},
			types: []string{"BOOLEAN", "INT(32,true)", "BOOLEAN"},
		},
		{
			name: "dotted and percent keys", obs: dict([]string{"pos.x", "50%", "a.b.c"}, box(dtF32, 2), discrete(dtI64, 3, 0), text()),
			act:   dict([]string{"a", "b"}, dict([]string{"c.d"}, box(dtU8)), tuple(box(dtF64))),
			want:  []string{"observation.pos%2Ex", "observation.50%25", "observation.a%2Eb%2Ec", "action.a.c%2Ed", "action.b.0"},
			forms: []ColumnForm{FormList, FormScalar, FormString, FormScalar, FormScalar},
			types: []string{"FLOAT", "INT(64,true)", "STRING", "INT(8,false)", "DOUBLE"},
		},
		{name: "nil layouts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var obs, act *Layout
			if tt.obs != nil {
				obs = mustLayout(t, tt.obs)
			}
			if tt.act != nil {
				act = mustLayout(t, tt.act)
			}
			st, err := StepsSchema(obs, act, tt.threshold)
			if err != nil {
				t.Fatal(err)
			}
			fields := st.Schema.Fields()
			if len(fields) != NumFixedStepsColumns+len(tt.want)+NumV3StepsColumns {
				t.Fatalf("%d fields, want %d:\n%s", len(fields), NumFixedStepsColumns+len(tt.want)+NumV3StepsColumns, st.Schema)
			}
			// Version 3's columns follow the typed ones, in their order.
			if st.V3Index != NumFixedStepsColumns+len(tt.want) {
				t.Errorf("V3Index %d, want %d", st.V3Index, NumFixedStepsColumns+len(tt.want))
			}
			for i, c := range V3StepsColumns() {
				if got := fields[st.V3Index+i].Name(); got != c.Name {
					t.Errorf("version 3 column %d is %q, want %q", i, got, c.Name)
				}
				if !fields[st.V3Index+i].Optional() {
					t.Errorf("%s is not optional", c.Name)
				}
			}
			// A version 2 table is the same without them.
			v2, err := StepsSchemaOf(SchemaVersion2, obs, act, tt.threshold, false)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(v2.Schema.Fields()); n != NumFixedStepsColumns+len(tt.want) || v2.V3Index != -1 {
				t.Errorf("version 2 table: %d fields, V3Index %d", n, v2.V3Index)
			}
			for i, name := range fixed {
				if fields[i].Name() != name {
					t.Errorf("field %d is %q, want %q", i, fields[i].Name(), name)
				}
			}
			cols := append(append([]TypedColumn{}, st.Observation...), st.Action...)
			for i, name := range tt.want {
				c := cols[i]
				f := fields[NumFixedStepsColumns+i]
				if c.Name != name || f.Name() != name {
					t.Errorf("typed column %d: %q / field %q, want %q", i, c.Name, f.Name(), name)
				}
				if !f.Optional() {
					t.Errorf("%s is not optional", name)
				}
				if c.Form != tt.forms[i] {
					t.Errorf("%s form %d, want %d", name, c.Form, tt.forms[i])
				}
				leaf, ok := st.Schema.Lookup(name)
				if !ok && c.Form == FormList {
					leaf, ok = st.Schema.Lookup(name, "list", "element")
				}
				if !ok {
					t.Fatalf("column %s not found", name)
				}
				if leaf.ColumnIndex != c.Index {
					t.Errorf("%s index %d, schema says %d", name, c.Index, leaf.ColumnIndex)
				}
				if got := leaf.Node.Type().String(); got != tt.types[i] {
					t.Errorf("%s type %s, want %s", name, got, tt.types[i])
				}
			}
		})
	}
}

func TestStepsSchemaTimestampsAndBlobs(t *testing.T) {
	st, err := StepsSchema(nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := st.Schema.Lookup(ColRecordedAt)
	if !isMicrosUTC(ts.Node.Type()) {
		t.Errorf("recorded_at logical type %v, want TIMESTAMP(MICROS, UTC)", ts.Node.Type().LogicalType())
	}
	for _, name := range []string{ColObservationBlob, ColActionBlob} {
		c, _ := st.Schema.Lookup(name)
		if !c.Node.Optional() || c.Node.Type().Kind() != parquet.ByteArray {
			t.Errorf("%s: optional %v kind %v", name, c.Node.Optional(), c.Node.Type().Kind())
		}
	}
}

// TestRowStructTags checks that the row structs spell the documented column
// names, in order.
func TestRowStructTags(t *testing.T) {
	tests := []struct {
		name   string
		schema *parquet.Schema
		cols   []string
	}{
		{"episodes", EpisodesSchema, []string{
			ColEpisodeRecordID, ColEpisodeID, ColEpisodeIndex, ColEnvIndex, ColEnvComponentID, ColModelComponentID,
			ColStartedFromAutoReset, ColStatus, ColStepCount, ColCumulativeReward, ColStepsRecorded,
			ColRewardSum, ColTerminated, ColTruncated, ColSuccess, ColDurationMs, ColStartedAt, ColEndedAt,
			ColFinalInfo, ColFinalObservationBlob, ColStepsFile,
			ColSeed, ColTrialIndex, ColSuccessSource, ColLane, ColPredictMs, ColStepMs,
		}},
		{"episodes version 2", EpisodesSchemaV2, []string{
			ColEpisodeRecordID, ColEpisodeID, ColEpisodeIndex, ColEnvIndex, ColEnvComponentID, ColModelComponentID,
			ColStartedFromAutoReset, ColStatus, ColStepCount, ColCumulativeReward, ColStepsRecorded,
			ColRewardSum, ColTerminated, ColTruncated, ColSuccess, ColDurationMs, ColStartedAt, ColEndedAt,
			ColFinalInfo, ColFinalObservationBlob, ColStepsFile,
		}},
		{"sessions", SessionsSchema, []string{
			ColEnvComponentID, ColModelComponentID, ColStatus, ColReason, ColTotalSteps,
			ColTotalEpisodes, ColStartedAt, ColEndedAt, ColEpisodesRecorded, ColStepsRecorded, ColDroppedSteps,
			ColProblems, ColProblemSummary, ColClock, ColSurplusSteps,
		}},
		{"sessions version 2", SessionsSchemaV2, []string{
			ColEnvComponentID, ColModelComponentID, ColStatus, ColReason, ColTotalSteps,
			ColTotalEpisodes, ColStartedAt, ColEndedAt, ColEpisodesRecorded, ColStepsRecorded, ColDroppedSteps,
			ColProblems, ColProblemSummary, ColClock,
		}},
		{"logs", LogsSchema, []string{ColTime, ColLevel, ColMessage, ColSource, ColLane}},
		{"logs version 2", LogsSchemaV2, []string{ColTime, ColLevel, ColMessage, ColSource}},
		{"telemetry", TelemetrySchema, []string{
			ColTime, ColHorizon, ColOp, ColComponent, ColMetric, ColKind, ColCount, ColAvg, ColP50, ColP95, ColP99,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fields := tt.schema.Fields()
			var got []string
			for _, f := range fields {
				got = append(got, f.Name())
			}
			if !reflect.DeepEqual(got, tt.cols) {
				t.Fatalf("columns\n got %v\nwant %v", got, tt.cols)
			}
			for _, f := range fields {
				if f.Name() == ColSessionID || f.Name() == ColEnvID || (f.Name() == ColEpisodeRecordID && !strings.HasPrefix(tt.name, "episodes")) {
					t.Errorf("partition column %s inside the file", f.Name())
				}
				if strings.HasSuffix(f.Name(), "_at") || f.Name() == ColTime {
					if !isMicrosUTC(f.Type()) {
						t.Errorf("%s logical type %v, want TIMESTAMP(MICROS, UTC)", f.Name(), f.Type().LogicalType())
					}
				}
			}
		})
	}
}

func isMicrosUTC(typ parquet.Type) bool {
	lt := typ.LogicalType()
	if lt == nil {
		return false
	}
	ts, ok := lt.Value.(*format.TimestampType)
	return ok && ts.IsAdjustedToUTC && ts.Unit.Value != nil && ts.Unit.Value.String() == (&format.MicroSeconds{}).String()
}
