package main

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
)

// TestArrowStepsSchema: the Arrow schema built from schema's fixed steps
// columns is the one replay --format arrow documents.
func TestArrowStepsSchema(t *testing.T) {
	want := arrow.NewSchema([]arrow.Field{
		{Name: "session_id", Type: arrow.BinaryTypes.String},
		{Name: "env_id", Type: arrow.BinaryTypes.String},
		{Name: "episode_record_id", Type: arrow.BinaryTypes.String},
		{Name: "episode_id", Type: arrow.BinaryTypes.String},
		{Name: "episode_index", Type: arrow.PrimitiveTypes.Int64},
		{Name: "env_index", Type: arrow.PrimitiveTypes.Int32},
		{Name: "step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "session_step", Type: arrow.PrimitiveTypes.Int64},
		{Name: "observation_blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "action_blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
		{Name: "reward", Type: arrow.PrimitiveTypes.Float64},
		{Name: "is_first", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "is_last", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "terminated", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "truncated", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "recorded_at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}},
	}, nil)
	if !arrowStepsSchema.Equal(want) {
		t.Errorf("Arrow steps schema\n%v\nwant\n%v", arrowStepsSchema, want)
	}
}
