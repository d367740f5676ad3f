// Package schema describes the shapes of recorded data: the leaf walk of an
// rlmesh SpaceSpec (its fundamental leaves in canonical pre-order, with
// paths, kinds, dtypes and per-lane byte strides), spec validation and
// protojson parsing, and the Parquet schemas of rlrec's tables.
package schema
