//go:build race

package parquetout

// raceDetector: the race detector makes sync.Pool drop a random share of
// what is put back, so parquet-go's pooled zstd encoders are rebuilt at
// random and allocation counts are not the program's.
const raceDetector = true
