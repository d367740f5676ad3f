// Package interop holds end-to-end tests of rlrec's output read by other
// tools: DuckDB (through duckdb-go) and Apache Arrow's Parquet reader
// (arrow-go). It is a separate module because duckdb-go needs cgo and the
// main module stays cgo-free; it has no code of its own, only tests (see
// docs/reading.md and docs/development.md).
package interop
