package parquetout

import "sync/atomic"

// FileShare divides one memory share among the steps files open at once.
//
// An open steps file holds a parquet-go writer, which keeps its current row
// group's pages in memory and preallocates about one page buffer for each
// non-nullable column (parquet-go sizes those from the page buffer size,
// whatever the column's type), plus a write buffer. With default settings
// that is about 4 MiB per file before any row group, so 256 episodes
// streaming at once held over 1 GiB with a 256 MiB budget. Each file is
// therefore given share/open bytes: a page size class chosen when the file
// is created (PageClass, PageClassConfig), and a row group bound updated
// before every batch of rows (RowGroupBytes, for SetRowGroupBytes). The
// caller counts the open files (Opened, Closed). It is safe for
// concurrent use.
type FileShare struct {
	share int64
	open  atomic.Int64
}

// NewFileShare returns a FileShare of share bytes with no file open.
func NewFileShare(share int64) *FileShare { return &FileShare{share: share} }

// Page size classes (bytes): the page buffer size of a new steps file is
// the largest class whose pagesPerFile pages fit its part of the share.
// A smaller page costs nothing in the files of short episodes (their
// columns are smaller than any class) and, in long ones, only more page
// headers.
var pageClasses = [...]int{256 << 10, 64 << 10, 16 << 10, 4 << 10}

// pagesPerFile is what a file's part of the share must hold in pages:
// about one per column (the steps table has 13 fixed columns plus the
// typed ones) and the row group's pages.
const pagesPerFile = 24

// minRowGroupBytes is the least row group bound a file gets, however many
// are open: smaller row groups would make the files slow to scan.
const minRowGroupBytes = 1 << 20

// Opened counts a file opened; Closed one finished or aborted.
func (s *FileShare) Opened() { s.open.Add(1) }

// Closed counts a file finished or aborted.
func (s *FileShare) Closed() { s.open.Add(-1) }

// perFile is each open file's part of the share, counting one more file
// about to open when opening is true.
func (s *FileShare) perFile(opening bool) int64 {
	n := s.open.Load()
	if opening {
		n++
	}
	return s.share / max(n, 1)
}

// PageClass returns the page size class of a file about to open, for
// PageClassConfig (and as part of a cache key: there are few).
func (s *FileShare) PageClass() int {
	per := s.perFile(true)
	for i, p := range pageClasses {
		if int64(p)*pagesPerFile <= per {
			return i
		}
	}
	return len(pageClasses) - 1
}

// PageClassConfig returns cfg with the writer settings of page class c.
func PageClassConfig(cfg Config, c int) Config {
	cfg.PageBufferSize = pageClasses[c]
	cfg.WriteBufferSize = max(pageClasses[c], 16<<10)
	return cfg
}

// RowGroupBytes is the row group bound of an open file now: half its part
// of the share, within [1 MiB, limit].
func (s *FileShare) RowGroupBytes(limit int64) int64 {
	return max(min(s.perFile(false)/2, limit), minRowGroupBytes)
}
