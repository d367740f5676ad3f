//go:build !race

package parquetout

// raceDetector: see race_on_test.go.
const raceDetector = false
