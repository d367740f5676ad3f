package dataset

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/rlrec/rlrec/schema"
)

// A packed steps file (layout "session") holds many episodes per row
// group. Reading an episode decodes the row groups that hold it, and a
// replay or a copy reads every episode of the file, in about the order
// they are stored, with up to N of them open at once: without sharing,
// each row group was decoded once per episode it holds (a 3,000-episode
// cartpole replay decoded 47 GB for 30 MB of steps). A Dataset therefore
// keeps the last row groups it decoded from packed files, bounded by
// count and by size, and every episode iterator reads from them. Part
// files never change once published, so a decoded group stays right for
// the Dataset's life. The files stay open between iterators too (their
// footers are most of the cost of opening one), a few at a time, until
// Dataset.Close.
const (
	groupCacheCount = 8
	groupCacheBytes = 256 << 20
	idleFilesOpen   = 4
)

// decodedGroup is one row group of a packed steps file, decoded: its
// fixed columns, its episode_record_id column, and where each episode's
// rows are. It is never changed once built.
type decodedGroup struct {
	vals  [numReadColumns][]parquet.Value
	rids  []parquet.Value
	base  int64 // file row of the group's first row
	rows  int
	spans map[string]span // episode record id -> its rows
	size  int64           // bytes held, for the cache's bound
}

// span is the rows [start, end) of one episode in a row group.
type span struct{ start, end int }

type groupKey struct {
	path string
	rg   int
}

// groupCache is a Dataset's least-recently-used cache of decoded row
// groups of packed steps files, and of the packed files open. It is safe
// for concurrent use; a group decoded by two callers at once is decoded
// twice, and either copy kept.
type groupCache struct {
	mu    sync.Mutex
	lru   list.List // of *groupEntry, most recent first
	byKey map[groupKey]*list.Element
	bytes int64
	// decoded counts the row groups decoded, for tests.
	decoded int

	files  map[string]*sharedFile
	idle   list.List // of *sharedFile with no user, most recent first
	closed bool
	// opened counts the files opened, for tests.
	opened int
}

// sharedFile is a packed file open for the iterators that read it.
type sharedFile struct {
	f     *parquetFile
	users int
	idle  *list.Element // in groupCache.idle while users == 0
}

// open returns the packed file at path, open, for one more user, who
// hands it back with release.
func (c *groupCache) open(path string) (*parquetFile, error) {
	c.mu.Lock()
	if sf, ok := c.files[path]; ok {
		if sf.idle != nil {
			c.idle.Remove(sf.idle)
			sf.idle = nil
		}
		sf.users++
		c.mu.Unlock()
		return sf.f, nil
	}
	c.mu.Unlock()
	f, err := openFile(path)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opened++
	if sf, ok := c.files[path]; ok || c.closed {
		if ok {
			// Opened twice at once: use the first, close this one.
			f.Close()
			if sf.idle != nil {
				c.idle.Remove(sf.idle)
				sf.idle = nil
			}
			sf.users++
			return sf.f, nil
		}
		return f, nil // after Close: the caller's own, closed by release
	}
	if c.files == nil {
		c.files = make(map[string]*sharedFile)
	}
	c.files[path] = &sharedFile{f: f, users: 1}
	return f, nil
}

// release hands back a file open returned. A file no one uses stays open
// among the last idleFilesOpen, or until Close.
func (c *groupCache) release(f *parquetFile) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	sf, ok := c.files[f.path]
	if !ok || sf.f != f {
		return f.Close()
	}
	sf.users--
	if sf.users > 0 {
		return nil
	}
	if c.closed {
		delete(c.files, f.path)
		return f.Close()
	}
	sf.idle = c.idle.PushFront(sf)
	var err error
	for c.idle.Len() > idleFilesOpen {
		old := c.idle.Remove(c.idle.Back()).(*sharedFile)
		delete(c.files, old.f.path)
		if cerr := old.f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	return err
}

// close closes the idle files and drops the decoded groups; files still
// in use close when their last user releases them.
func (c *groupCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var err error
	for c.idle.Len() > 0 {
		sf := c.idle.Remove(c.idle.Back()).(*sharedFile)
		delete(c.files, sf.f.path)
		if cerr := sf.f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	c.lru.Init()
	c.byKey, c.bytes = nil, 0
	return err
}

type groupEntry struct {
	key groupKey
	g   *decodedGroup
}

// get returns row group rg of the packed file f, decoding it on a miss.
// cols are the file's fixed column indexes and ridCol its
// episode_record_id column.
func (c *groupCache) get(f *parquetFile, rg int, cols *[numReadColumns]int, ridCol int) (*decodedGroup, error) {
	k := groupKey{f.path, rg}
	c.mu.Lock()
	if e, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(e)
		g := e.Value.(*groupEntry).g
		c.mu.Unlock()
		return g, nil
	}
	c.mu.Unlock()
	g, err := decodeGroup(f, rg, cols, ridCol)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.decoded++
	if e, ok := c.byKey[k]; ok {
		c.lru.MoveToFront(e)
		return e.Value.(*groupEntry).g, nil
	}
	if c.byKey == nil {
		c.byKey = make(map[groupKey]*list.Element)
	}
	c.byKey[k] = c.lru.PushFront(&groupEntry{key: k, g: g})
	c.bytes += g.size
	for c.lru.Len() > 1 && (c.lru.Len() > groupCacheCount || c.bytes > groupCacheBytes) {
		e := c.lru.Back()
		old := e.Value.(*groupEntry)
		c.lru.Remove(e)
		delete(c.byKey, old.key)
		c.bytes -= old.g.size
	}
	return g, nil
}

// decodeGroup reads the fixed columns and the episode_record_id column of
// row group rg of f and indexes its episodes' rows. An episode's rows are
// contiguous in a packed file; a record id seen again after another's
// rows is damage, reported as such.
func decodeGroup(f *parquetFile, rg int, cols *[numReadColumns]int, ridCol int) (*decodedGroup, error) {
	groups := f.pf.RowGroups()
	g := &decodedGroup{rows: int(groups[rg].NumRows())}
	for i := range rg {
		g.base += groups[i].NumRows()
	}
	chunks := groups[rg].ColumnChunks()
	rids, err := readColumn(chunks[ridCol], nil)
	if err != nil || len(rids) != g.rows {
		return nil, fileErr(f.path, g.base, fmt.Errorf("%w: column %s of row group %d: %d values for %d rows (%v)", ErrColumn, schema.ColEpisodeRecordID, rg, len(rids), g.rows, err))
	}
	g.rids = rids
	for c := range numReadColumns {
		if cols[c] < 0 {
			continue
		}
		vals, err := readColumn(chunks[cols[c]], nil)
		if err != nil {
			return nil, fileErr(f.path, g.base, fmt.Errorf("read column %s of row group %d: %w", fixedColumns[c].Name, rg, err))
		}
		if len(vals) != g.rows {
			return nil, fileErr(f.path, g.base, fmt.Errorf("%w: column %s of row group %d has %d values for %d rows", ErrColumn, fixedColumns[c].Name, rg, len(vals), g.rows))
		}
		g.vals[c] = vals
		g.size += 24 * int64(len(vals))
		if fixedColumns[c].Node.Type().Kind() == parquet.ByteArray {
			for _, v := range vals {
				if !v.IsNull() {
					g.size += int64(len(v.ByteArray()))
				}
			}
		}
	}
	g.spans = make(map[string]span)
	for i := 0; i < g.rows; {
		rid := string(rids[i].ByteArray())
		j := i + 1
		for j < g.rows && string(rids[j].ByteArray()) == rid {
			j++
		}
		if _, dup := g.spans[rid]; dup {
			return nil, fileErr(f.path, g.base+int64(i), fmt.Errorf("%w: episode %q has rows apart in row group %d (a packed file keeps an episode's rows together)", ErrColumn, rid, rg))
		}
		g.spans[rid] = span{i, j}
		g.size += int64(len(rid)) + 40
		i = j
	}
	return g, nil
}
