package parquetout

import (
	"bytes"
	"runtime"
	"testing"

	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

type encoder = *kzstd.Encoder

// TestZstdKeptEncoders: the codec's kept encoders write the bytes
// parquet-go's own zstd codec writes, they outlive garbage collections
// (a sync.Pool's do not), and at most maxKeptEncoders stay idle.
func TestZstdKeptEncoders(t *testing.T) {
	ref := &zstd.Codec{Level: zstd.SpeedFastest}
	pages := []struct {
		name string
		page []byte
	}{
		{"empty", nil},
		{"small", []byte(`{"elapsed_steps":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]}`)},
		{"random text, 200 KiB", []byte(randomText(200<<10, 5))},
		{"zeros, 256 KiB", make([]byte, 256<<10)},
		{"random text, 2 MiB", []byte(randomText(2<<20, 6))},
	}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			want, err := ref.Encode(nil, p.page)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				got, err := zstdFastest.Encode(make([]byte, 0, 16), p.page)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("encoding %d: %d bytes differ from parquet-go's %d", i, len(got), len(want))
				}
			}
		})
	}

	// Several at once: the encoders made for them are dropped beyond the
	// bound.
	var es []encoder
	for range maxKeptEncoders + 3 {
		e, err := keptEncoders.get(zstd.SpeedFastest)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	if n := idleEncoders(); n != 0 {
		t.Fatalf("%d encoders idle while all are taken, want 0", n)
	}
	for _, e := range es {
		keptEncoders.put(zstd.SpeedFastest, e)
	}
	if n := idleEncoders(); n != maxKeptEncoders {
		t.Fatalf("%d encoders idle, want %d", n, maxKeptEncoders)
	}
	page := []byte(randomText(64<<10, 7))
	allocs := testing.AllocsPerRun(8, func() {
		// Two collections empty a sync.Pool.
		runtime.GC()
		runtime.GC()
		if _, err := zstdFastest.Encode(make([]byte, 0, 128<<10), page); err != nil {
			t.Fatal(err)
		}
	})
	// The dst buffer is the one allocation: the encoder and its history
	// are kept.
	if allocs > 1 {
		t.Errorf("a page after two collections took %.1f allocations, want at most 1 (the encoders were not kept?)", allocs)
	}
}

func idleEncoders() int {
	keptEncoders.mu.Lock()
	defer keptEncoders.mu.Unlock()
	return len(keptEncoders.free)
}
