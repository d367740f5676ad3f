package recorder

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/store"

	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// SyncPolicy says when a hook call returns relative to the durability of
// its event.
type SyncPolicy int

const (
	// SyncGroup returns as soon as the event is queued; the log is synced
	// in groups every SyncInterval. Flush and Close make everything durable.
	SyncGroup SyncPolicy = 1
	// SyncEach returns only once the event is durable in the log.
	SyncEach SyncPolicy = 2
)

// Compression is the codec of the Parquet files.
type Compression string

// Parquet codecs a Recorder can write.
const (
	CompressionZstd   Compression = "zstd"
	CompressionSnappy Compression = "snappy"
	CompressionNone   Compression = "none"
)

// options is the validated configuration of a Recorder.
type options struct {
	syncPolicy     SyncPolicy
	syncInterval   time.Duration
	batchDelay     time.Duration
	layout         hive.Layout // "": the ROOT's, or LayoutEpisode for a new one
	memoryBudget   int64
	maxEvent       int64 // 0: the budget's (memoryBudget.maxEvent)
	compression    Compression
	rowGroupRows   int
	typedThreshold int // the leaf size above which a typed column holds raw bytes: the format's 4 KiB, no option
	clock          func() time.Time
	logger         *slog.Logger
	fs             vfs.FS
	salvage        bool
	resume         bool
	workers        int
	// segmentSize is the log's segment size (0: the log's default, 64
	// MiB); tests make it small to exercise reclaiming and snapshots.
	segmentSize int64
	// reclaimEvery is how many events the pipeline handles between looks
	// for log segments it can remove (0: reclaimEvery); tests lower it.
	reclaimEvery int

	// st and stateDir are WithStore's: nil and "" for ROOT's own.
	st       store.Root
	stateDir string
}

// DefaultMemoryBudget is the memory budget of a Recorder opened without
// WithMemoryBudget.
const DefaultMemoryBudget = 256 << 20

// GCMemoryLimit is the Go memory limit (debug.SetMemoryLimit, GOMEMLIMIT)
// for a process whose memory is mostly a Recorder's with the given budget:
// under it, the recorder's share of the peak RSS stays within the budget
// plus 64 MiB, plus the log's pending file, which is mapped into the
// process outside the Go heap (two halves of an eighth of the budget).
//
// The budget bounds what the recorder keeps live. Go's garbage collector,
// left to GOGC alone, lets the heap grow to about twice the live data
// before it collects, so with every share of the budget full (hundreds of
// open image episodes, say) RSS could reach twice the budget. A library
// must not set a process-wide limit, so the Recorder does not; the rlrec
// command does, and a program embedding a Recorder should add this to the
// limit it sets for its own memory. The extra 32 MiB is the recorder's
// fixed overhead beyond its shares (code, goroutine stacks, codec state).
func GCMemoryLimit(budget int64) int64 { return budget + 32<<20 }

func defaultOptions() options {
	return options{
		syncPolicy:     SyncGroup,
		syncInterval:   100 * time.Millisecond,
		batchDelay:     2 * time.Second,
		memoryBudget:   DefaultMemoryBudget,
		compression:    CompressionZstd,
		rowGroupRows:   64 * 1024,
		typedThreshold: 4096,
		clock:          time.Now,
		logger:         slog.New(slog.DiscardHandler),
		fs:             vfs.OS(),
		workers:        2,
	}
}

// validate checks the options once, at Open.
func (o *options) validate() error {
	switch {
	case o.syncPolicy != SyncGroup && o.syncPolicy != SyncEach:
		return fmt.Errorf("sync policy %d: %w", o.syncPolicy, ErrInvalidOption)
	case o.layout != "" && o.layout != hive.LayoutEpisode && o.layout != hive.LayoutSession:
		return fmt.Errorf("layout %q: want %q or %q: %w", o.layout, hive.LayoutEpisode, hive.LayoutSession, ErrInvalidOption)
	case o.batchDelay <= 0:
		return fmt.Errorf("episode batch delay %v must be positive: %w", o.batchDelay, ErrInvalidOption)
	case o.syncInterval <= 0:
		return fmt.Errorf("sync interval %v must be positive: %w", o.syncInterval, ErrInvalidOption)
	case o.memoryBudget < 16<<20:
		return fmt.Errorf("memory budget %d bytes is below the 16 MiB minimum: %w", o.memoryBudget, ErrInvalidOption)
	case o.maxEvent < 0 || o.maxEvent > wal.MaxRecordSize:
		return fmt.Errorf("maximum event size %d bytes: want 1 to %d (one log record): %w", o.maxEvent, wal.MaxRecordSize, ErrInvalidOption)
	case o.compression != CompressionZstd && o.compression != CompressionSnappy && o.compression != CompressionNone:
		return fmt.Errorf("compression %q (want zstd, snappy or none): %w", o.compression, ErrInvalidOption)
	case o.rowGroupRows <= 0:
		return fmt.Errorf("row group size %d rows must be positive: %w", o.rowGroupRows, ErrInvalidOption)
	case o.clock == nil || o.logger == nil || o.fs == nil:
		return fmt.Errorf("nil clock, logger or file system: %w", ErrInvalidOption)
	case o.st != nil && o.stateDir == "":
		return fmt.Errorf("a store without a local state directory: %w", ErrInvalidOption)
	case o.workers <= 0:
		return fmt.Errorf("%d writer workers: %w", o.workers, ErrInvalidOption)
	}
	return nil
}

// Option configures a Recorder.
type Option func(*options)

// WithSyncPolicy sets when hooks return (default SyncGroup).
func WithSyncPolicy(p SyncPolicy) Option { return func(o *options) { o.syncPolicy = p } }

// WithSyncInterval sets the group-commit interval (default 100 ms).
func WithSyncInterval(d time.Duration) Option { return func(o *options) { o.syncInterval = d } }

// WithLayout chooses the steps layout of a new ROOT (hive.LayoutEpisode,
// the default, or hive.LayoutSession); Open refuses a ROOT created with
// the other one. Without it, a recorder takes the ROOT's layout.
func WithLayout(l hive.Layout) Option { return func(o *options) { o.layout = l } }

// WithEpisodeBatchDelay bounds how long a finished episode waits before
// its row (and its steps file) is published: the rows of the episodes of
// a recording that finish within it share one episodes file (default 2 s;
// a recording's end, Flush and Close publish at once).
func WithEpisodeBatchDelay(d time.Duration) Option { return func(o *options) { o.batchDelay = d } }

// WithMemoryBudget bounds the memory the recorder holds for queued events
// and unwritten rows (default 256 MiB); when it is full, hooks wait.
func WithMemoryBudget(bytes int64) Option { return func(o *options) { o.memoryBudget = bytes } }

// WithMaxEventSize sets the largest event, encoded, that a hook accepts;
// a larger one is refused with ErrEventTooLarge and the recorder goes on.
// The default is a sixteenth of the memory budget (16 MiB for the default
// budget): one event costs several times its size in memory while it is
// logged, assembled and written, and the default keeps that within the
// budget. Raising it beyond that lets an event take memory beyond the
// budget; raise WithMemoryBudget with it. At most 256 MiB, the most one
// log record holds.
func WithMaxEventSize(bytes int64) Option { return func(o *options) { o.maxEvent = bytes } }

// WithCompression sets the Parquet codec (default zstd).
func WithCompression(c Compression) Option { return func(o *options) { o.compression = c } }

// WithRowGroupRows bounds the rows of one Parquet row group (default 65536).
func WithRowGroupRows(n int) Option { return func(o *options) { o.rowGroupRows = n } }

// WithClock sets the clock that stamps events (default time.Now).
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithLogger sets the logger for what the recorder reports (problems in the
// input, recovery); by default nothing is logged.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithFS sets the file system all files are written through (default the
// operating system's).
func WithFS(fsys vfs.FS) Option { return func(o *options) { o.fs = fsys } }

// WithStore makes the recorder write ROOT's part files, and read what
// it reads of ROOT (the layout file, whether ROOT holds a recording, a
// recording's published files), through st, and keep its own state (the
// log, the lock, the recovery journal and the open marker) in the local
// directory stateDir, made when missing. It is how a recorder writes an
// s3:// ROOT (store.OpenRoot), whose state cannot live in the bucket: a
// lock needs a file system, and the log a local disk's syncs. Two
// recorders with different state directories may record into one bucket
// prefix at once; their recordings must differ (a collision is an error
// of the recording, never an overwrite). ROOT names the store in messages.
//
// Without it the recorder writes the directory ROOT through
// store.NewFS on WithFS's file system, with its state in ROOT/_rlrec.
func WithStore(st store.Root, stateDir string) Option {
	return func(o *options) { o.st, o.stateDir = st, stateDir }
}

// WithSalvage lets recovery cut a log at corruption inside a sealed segment,
// losing what follows it, instead of refusing to open.
func WithSalvage(on bool) Option { return func(o *options) { o.salvage = on } }

// WithWriters sets how many goroutines write Parquet files (default 2).
func WithWriters(n int) Option { return func(o *options) { o.workers = n } }

// withSegmentSize sets the log's segment size (tests only).
func withSegmentSize(bytes int64) Option { return func(o *options) { o.segmentSize = bytes } }

// withReclaimEvery sets how often the pipeline reclaims log space (tests
// only).
func withReclaimEvery(events int) Option { return func(o *options) { o.reclaimEvery = events } }
