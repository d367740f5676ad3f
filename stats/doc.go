// Package stats computes per-feature statistics of the steps of a ROOT:
// the normalisation input of a training pipeline. It is what 'rlrec stats'
// runs.
//
// # Features
//
// A feature is a numeric typed column of the steps table (schema
// package: "observation", "action", "observation.<path>",
// "action.<path>"), one per leaf of the observation and action spaces,
// plus "reward". Text leaves and leaves stored as binary (larger than the
// typed-column threshold, such as images) are not numeric columns and are
// left out, as are leaves with no elements (a Box of shape [0]). A
// feature has one element per element of its leaf, in row-major order:
// one for a scalar Box, a Discrete and reward; numel for other Box,
// MultiDiscrete and MultiBinary leaves.
//
// Values are read from the blobs, which are exact, as the typed columns
// hold them: every dtype converted to float64 (float16 widened exactly,
// integers beyond ±2^53 rounded to the nearest double), bool elements and
// MultiBinary elements as 0 and 1. A step whose observation is null (no
// observation was seen before its action) adds nothing to the
// observation features, as NULL adds nothing to a SQL aggregate.
//
// # Statistics
//
// For each element: count (the values seen), mean, std (the population
// standard deviation, DuckDB's stddev_pop and numpy's default ddof=0),
// min, max, and the quantiles p01, p25, p50, p75 and p99. Quantiles are
// discrete, as DuckDB's quantile_disc: the q-quantile of n sorted values
// is the value at 0-based index max(1, ceil(q·n)) - 1, the smallest value
// whose share of values at or below it reaches q. They are exact: every
// value of a scope is kept (8 bytes each) while it is computed. NaN sorts
// above +Inf, as in DuckDB: it makes mean and std NaN, max NaN, and
// quantiles that reach it NaN. The statistics of an element with no value
// are null (Summary.Count 0).
//
// mean and std are computed from the values by the corrected two-pass
// algorithm with compensated (Neumaier) sums: accurate to about 1e-15
// relative even for values far from zero (int32 values near 2^31 with a
// std of 3), where a one-pass update loses digits.
//
// # Scopes
//
// Each recording gets its statistics. The overall statistics merge the
// recordings whose spaces are equal (the same observation and action
// SpaceSpec, compared by their deterministic protobuf encoding): one
// group per distinct pair of spaces, named by Spaces, a hash of it. A
// ROOT whose recordings all share their spaces has one group.
package stats
