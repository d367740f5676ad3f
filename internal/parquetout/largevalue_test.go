package parquetout

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// randomText is n bytes of random text (6 bits a byte), which no codec
// compresses much.
func randomText(n int, seed uint64) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	r := rand.New(rand.NewPCG(seed, 29))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// TestLargeLogMessage writes a logs file holding one message near the
// maximum event size with each codec, and checks that the message is in
// the file once (no page statistics or index bounds copy it into the page
// header or the footer) and that writing the file allocates a bounded
// multiple of it (the recorder's memory bound counts on it: a 15 MB
// message used to cost about ten times its size while its file was
// written).
func TestLargeLogMessage(t *testing.T) {
	const size = 8 << 20
	msg := randomText(size, 1)
	t0 := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	rows := []schema.LogRow{
		{Time: t0, Level: "info", Message: "small before"},
		{Time: t0, Level: "info", Message: msg},
		{Time: t0, Level: "warn", Message: "small after"},
	}
	for _, tc := range []struct {
		name  string
		codec string
	}{
		{"zstd", CompressionZstd},
		{"snappy", CompressionSnappy},
		{"none", CompressionNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Compression: tc.codec}
			var warm bytes.Buffer
			if err := EncodeTable(&warm, "warm-up", Metadata{}, cfg, rows); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			out.Grow(2 * size)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if err := EncodeTable(&out, "logs", Metadata{}, cfg, rows); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: a %d MiB message: file %d bytes, %.1f MiB allocated (%.2f times the message)",
				tc.name, size>>20, out.Len(), float64(allocated)/(1<<20), float64(allocated)/size)
			if out.Len() > size+64<<10 {
				t.Errorf("the file is %d bytes for a %d-byte message: the message is in it more than once (page statistics or index bounds?)", out.Len(), size)
			}
			if allocated > 5*size {
				t.Errorf("writing the file allocated %d MiB, %.1f times its %d MiB message: want at most 5", allocated>>20, float64(allocated)/size, size>>20)
			}
			got, err := parquet.Read[schema.LogRow](bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, rows) {
				t.Fatal("the rows read back differ from those written")
			}
		})
	}
}

// TestZstdLargePage: the zstd codec compresses a large page that does not
// compress into one output buffer of its worst-case size, not into a
// buffer grown by appending block after block (about 15 allocations for 4
// MiB, five times the page in all, the old and new buffers live at once),
// and round-trips it.
func TestZstdLargePage(t *testing.T) {
	for _, tc := range []struct {
		name      string
		page      []byte
		maxAllocs float64
	}{
		{"random text, 4 MiB", []byte(randomText(4<<20, 2)), 3},
		{"random text, 16 MiB", []byte(randomText(16<<20, 3)), 3},
		{"zeros, 4 MiB", make([]byte, 4<<20), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var enc []byte
			var err error
			allocs := testing.AllocsPerRun(4, func() {
				enc, err = zstdFastest.Encode(nil, tc.page)
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bytes to %d: %.1f allocations a page", len(tc.page), len(enc), allocs)
			// The output is the one buffer of the worst-case size, never
			// one grown by appending (whose capacity would differ).
			if want := len(tc.page) + len(tc.page)>>10 + 64; cap(enc) != want {
				t.Errorf("compressing %d bytes gave an output of capacity %d, want the worst-case buffer of %d: its output grows as it is written?", len(tc.page), cap(enc), want)
			}
			// Counted only without the race detector (raceDetector).
			if !raceDetector && allocs > tc.maxAllocs {
				t.Errorf("compressing %d bytes took %.1f allocations, want at most %.0f: its output grows as it is written?", len(tc.page), allocs, tc.maxAllocs)
			}
			dec, err := zstdFastest.Decode(nil, enc)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dec, tc.page) {
				t.Fatal("the page decoded differs from the page encoded")
			}
		})
	}
}
