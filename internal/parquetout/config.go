package parquetout

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	kzstd "github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/uncompressed"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/schema"
)

// Compression names accepted in Config.Compression.
const (
	CompressionZstd   = "zstd"   // zstd at its fastest level (the default)
	CompressionSnappy = "snappy" // snappy via s2's fast snappy-compatible encoder
	CompressionNone   = "none"
)

// Defaults of Config; see the package doc for how they were chosen.
const (
	DefaultCompression    = CompressionZstd
	DefaultRowGroupRows   = 128 * 1024
	DefaultRowGroupBytes  = 32 << 20
	DefaultPageBufferSize = 256 * 1024
	DefaultWriteBuffer    = 256 * 1024
)

// Config configures the table writers. The zero value means all defaults.
type Config struct {
	// Compression is CompressionZstd, CompressionSnappy or
	// CompressionNone; "" means DefaultCompression.
	Compression string
	// RowGroupRows bounds the rows of one row group; 0 means
	// DefaultRowGroupRows.
	RowGroupRows int64
	// RowGroupBytes bounds the payload bytes buffered for one row group
	// (blobs, leaves and fixed columns, before encoding); 0 means
	// DefaultRowGroupBytes. A writer's memory is about this much plus
	// one page per column.
	RowGroupBytes int64
	// PageBufferSize is the target uncompressed size of a data page; 0
	// means DefaultPageBufferSize.
	PageBufferSize int
	// WriteBufferSize is the size of a file's write buffer; 0 means
	// DefaultWriteBuffer.
	//
	// parquet-go preallocates about PageBufferSize bytes for each
	// non-nullable column of an open writer, so a writer holds roughly
	// columns x PageBufferSize + WriteBufferSize besides its row group.
	// Both are worth shrinking where many files are open at once.
	WriteBufferSize int
	// BinaryThreshold is the per-lane leaf size above which a typed steps
	// column stores raw bytes; 0 means schema.DefaultBinaryThreshold.
	BinaryThreshold int
}

func (c Config) withDefaults() Config {
	if c.Compression == "" {
		c.Compression = DefaultCompression
	}
	if c.RowGroupRows <= 0 {
		c.RowGroupRows = DefaultRowGroupRows
	}
	if c.RowGroupBytes <= 0 {
		c.RowGroupBytes = DefaultRowGroupBytes
	}
	if c.PageBufferSize <= 0 {
		c.PageBufferSize = DefaultPageBufferSize
	}
	if c.WriteBufferSize <= 0 {
		c.WriteBufferSize = DefaultWriteBuffer
	}
	if c.BinaryThreshold <= 0 {
		c.BinaryThreshold = schema.DefaultBinaryThreshold
	}
	return c
}

// Shared codec instances: they pool their encoders.
var (
	zstdFastest = sizedZstd{&zstd.Codec{Level: zstd.SpeedFastest}}
	snappyFast  = &fastSnappy{}
	noCodec     = &uncompressed.Codec{}
)

func codecFor(name string) (compress.Codec, error) {
	switch name {
	case CompressionZstd:
		return zstdFastest, nil
	case CompressionSnappy:
		return snappyFast, nil
	case CompressionNone:
		return noCodec, nil
	}
	return nil, fmt.Errorf("%w %q (want %q, %q or %q)", ErrCodec, name, CompressionZstd, CompressionSnappy, CompressionNone)
}

// writerOptions returns the parquet-go options for a file of schema s whose
// blob columns are listed in blobPaths.
func (c Config) writerOptions(blobPaths [][]string, kv []kvPair) ([]parquet.WriterOption, error) {
	codec, err := codecFor(c.Compression)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{
		parquet.Compression(codec),
		parquet.PageBufferSize(c.PageBufferSize),
		// The file's write buffer is rlrec's own (getWriteBuffer).
		parquet.WriteBufferSize(0),
		parquet.CreatedBy("rlrec", schema.SchemaVersion, ""),
	}
	for _, p := range blobPaths {
		opts = append(opts, parquet.SkipPageStatistics(p...), parquet.SkipPageBounds(p...))
	}
	for _, e := range kv {
		opts = append(opts, parquet.KeyValueMetadata(e.key, e.value))
	}
	return opts, nil
}

// fastSnappy is the SNAPPY parquet codec with s2's fast snappy-compatible
// encoder: parquet-go's own snappy codec uses the slower "better" mode.
type fastSnappy struct{}

func (fastSnappy) String() string                            { return "SNAPPY" }
func (fastSnappy) CompressionCodec() format.CompressionCodec { return format.Snappy }

func (fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	n := s2.MaxEncodedLen(len(src))
	if n < 0 {
		return nil, fmt.Errorf("parquetout: page of %d bytes too large for snappy", len(src))
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return s2.EncodeSnappy(dst[:n], src), nil
}

func (fastSnappy) Decode(dst, src []byte) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if cap(dst) < n {
		dst = make([]byte, n)
	}
	return snappy.Decode(dst[:n], src)
}

// sizedZstd is parquet-go's zstd codec, handed an output buffer of the
// page's worst-case compressed size when the page is large (1 MiB or
// more) and the buffer it was given is smaller. klauspost's EncodeAll
// grows its output by appending block after block, so a large page that
// compresses little (a log message of random text, an image) went
// through a growing buffer: for 4 MiB, 19 allocations and about five
// times the page, the old and new buffers live at once at each copy
// (TestZstdLargePage).
//
// It also keeps its encoders (keptEncoders): parquet-go's codec pools
// them in a sync.Pool, which every other garbage collection empties, and
// a new encoder allocates a history of at least 1 MiB on its first page
// (11 MB of fresh memory, and its page faults, per 94,000-row session of
// BenchmarkLayouts). The encoders are made with parquet-go's options, so
// the pages are the same bytes (TestGoldenRootReproduced).
type sizedZstd struct{ *zstd.Codec }

func (c sizedZstd) Encode(dst, src []byte) ([]byte, error) {
	if len(src) >= 1<<20 {
		// A stored block costs 3 bytes of header per 128 KiB block, a
		// frame header at most 18: len(src)>>10 covers both with room.
		if n := len(src) + len(src)>>10 + 64; cap(dst) < n {
			dst = make([]byte, 0, n)
		}
	}
	level := c.Level
	if level == 0 {
		level = zstd.DefaultLevel
	}
	e, err := keptEncoders.get(level)
	if err != nil {
		return nil, fmt.Errorf("parquetout: zstd encoder: %w", err)
	}
	out := e.EncodeAll(src, dst[:0])
	keptEncoders.put(level, e)
	return out, nil
}

// maxKeptEncoders bounds the idle encoders kept: one per writer goroutine
// of a recorder on two cores, each about 1.3 MiB.
const maxKeptEncoders = 2

// keptEncoders are the idle zstd encoders, of one level (the codecs of
// this package use SpeedFastest only; an encoder of another level is
// made and dropped).
var keptEncoders encoderFreeList

type encoderFreeList struct {
	mu   sync.Mutex
	free []*kzstd.Encoder
}

func (l *encoderFreeList) get(level zstd.Level) (*kzstd.Encoder, error) {
	if level == zstd.SpeedFastest {
		l.mu.Lock()
		if n := len(l.free); n > 0 {
			e := l.free[n-1]
			l.free[n-1] = nil
			l.free = l.free[:n-1]
			l.mu.Unlock()
			return e, nil
		}
		l.mu.Unlock()
	}
	// parquet-go's compress/zstd.Codec makes its encoders so.
	return kzstd.NewWriter(nil,
		kzstd.WithEncoderConcurrency(zstd.DefaultConcurrency),
		kzstd.WithEncoderLevel(level),
		kzstd.WithZeroFrames(true),
		kzstd.WithEncoderCRC(false),
	)
}

func (l *encoderFreeList) put(level zstd.Level, e *kzstd.Encoder) {
	if level != zstd.SpeedFastest {
		return
	}
	l.mu.Lock()
	if len(l.free) < maxKeptEncoders {
		l.free = append(l.free, e)
	}
	l.mu.Unlock()
}
