package report

import (
	"slices"
	"testing"
)

func TestSampleSteps(t *testing.T) {
	tests := []struct {
		name string
		n    int64
		k    int
		want []int64
	}{
		{"none", 0, 8, nil},
		{"fewer steps than frames", 3, 8, []int64{0, 1, 2}},
		{"equal", 4, 4, []int64{0, 1, 2, 3}},
		{"one frame", 10, 1, []int64{0}},
		{"first and last", 10, 2, []int64{0, 9}},
		{"spread", 60, 4, []int64{0, 20, 39, 59}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sampleSteps(tc.n, tc.k); !slices.Equal(got, tc.want) {
				t.Fatalf("sampleSteps(%d, %d) = %v, want %v", tc.n, tc.k, got, tc.want)
			}
		})
	}
}
