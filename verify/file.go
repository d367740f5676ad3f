package verify

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/findings"
	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Advice shared by several checks.
const (
	// fixDamaged follows the words of a Recover remedy (see add).
	fixDamaged = " if the log still holds this data, otherwise move the file out of ROOT (one bad file makes a whole DuckDB scan fail) and re-record it"
	fixForeign = "rlrec did not write this file as it is now; move it out of ROOT, or restore it from a copy"
	fixFooter  = "strict readers (Spark, Athena, parquet-java) refuse the file though DuckDB and pandas may read it (rlrec wrote such footers before it stopped reusing parquet-go writers, parquet-go issue #602): rewrite it with a Parquet writer that keeps its key-value metadata, or move it out of ROOT and re-record it"
)

// fileSum is what the cross-file checks need of one file: the ids its
// metadata names, and a summary of its rows when every row was read.
type fileSum struct {
	f *fileEntry
	// meta holds the ids stored in the metadata; has says which were
	// there (session id, env id, episode record id).
	meta hive.Partition
	has  [3]bool
	// placed is set when the metadata holds the file's ids and they
	// encode to the partition directories it is in.
	placed bool
	// layout is the steps layout the metadata names; "" when missing or
	// unknown (reported).
	layout hive.Layout
	// read is set when the file was read to the end; the summaries below
	// are then complete, and nil otherwise.
	read    bool
	rows    int64 // of a logs or telemetry file
	steps   []*stepsSum
	episode *episodeSum
	session *sessionSum

	// rec and rid, the recording and (in an episode partition) episode
	// record id the file belongs to, are set by crossCheck: from the
	// metadata, else from files beside it, else from the path.
	rec hive.Recording
	rid string
}

// fileCheck collects what checking one file found.
type fileCheck struct {
	v        *verifier
	f        *fileEntry
	problems []Problem
	more     int
	rows     int64
	sum      fileSum
	// version is the file's schema version, once checkMeta read it.
	version string
}

func (c *fileCheck) add(check Check, row int64, fix, format string, args ...any) {
	if len(c.problems) >= c.v.opts.maxProblems {
		c.more++
		return
	}
	p := Problem{Check: check, Path: c.f.Rel, Row: row, Message: fmt.Sprintf(format, args...), Fix: fix}
	if fix == fixDamaged {
		p.Remedy = findings.Recover
	}
	c.problems = append(c.problems, p)
}

// checkFile opens one part file and runs the checks of its table. It
// always returns the check: a panic while reading the file (parquet-go
// may panic on damaged pages) is reported as damage to the file.
func (v *verifier) checkFile(f *fileEntry) (c *fileCheck) {
	c = &fileCheck{v: v, f: f, sum: fileSum{f: f}}
	defer func() {
		if r := recover(); r != nil {
			c.add(CheckFile, -1, fixDamaged, "the file is damaged: reading it panicked: %v", r)
			c.sum.read, c.sum.steps, c.sum.episode, c.sum.session = false, nil, nil, nil
		}
	}()
	file, err := v.rd.Open(f.Rel, f.Size)
	if err != nil {
		c.add(CheckFile, -1, "check the file's permissions", "cannot open: %v", err)
		return c
	}
	defer file.Close()
	if !c.checkFormat(file) {
		return c
	}
	pf, err := parquet.OpenFile(file, f.Size, parquet.SkipBloomFilters(true))
	if err != nil {
		c.add(CheckFile, -1, fixDamaged, "not a readable Parquet file (truncated or damaged footer): %v", err)
		return c
	}
	if !c.checkCodecs(pf) || !c.checkMeta(pf) {
		return c
	}
	switch f.Table {
	case schema.TableSteps:
		c.checkSteps(pf)
	case schema.TableEpisodes:
		c.checkEpisodes(pf)
	case schema.TableSessions:
		c.checkSessions(pf)
	case schema.TableLogs:
		var rows []schema.LogRow
		if parquet.EqualNodes(pf.Schema(), schema.LogsSchemaV2) {
			// A file without the lane column (schema version 2, or
			// version 3 before it gained it).
			var old []schema.LogRowV2
			old, c.sum.read = readRows[schema.LogRowV2](c, pf, schema.LogsSchemaV2)
			for _, r := range old {
				rows = append(rows, schema.LogRow{Time: r.Time, Level: r.Level, Message: r.Message, Source: r.Source})
			}
		} else {
			rows, c.sum.read = readRows[schema.LogRow](c, pf, schema.LogsSchema)
		}
		c.sum.rows = int64(len(rows))
		for i, r := range rows {
			// A row that holds an event must hold one: replay re-emits it.
			if r.Source != nil && *r.Source == schema.SourceEvent {
				if err := schema.CheckEventLog(r.Message); err != nil {
					c.add(CheckEventLog, int64(i), fixForeign, "logs row of source %s holds no event: %v", schema.SourceEvent, err)
				}
			}
		}
	case schema.TableTelemetry:
		var rows []schema.TelemetryRow
		rows, c.sum.read = readRows[schema.TelemetryRow](c, pf, schema.TelemetrySchema)
		c.sum.rows = int64(len(rows))
	}
	return c
}

// checkFormat checks the footer as strict readers check it and every
// page against its checksum and its column chunk (parquetout.CheckPages).
// It reports false when the file cannot be read further: its footer
// cannot be read at all or a page is damaged.
func (c *fileCheck) checkFormat(r io.ReaderAt) bool {
	err := parquetout.CheckPages(r, c.f.Size)
	var fe *parquetout.FooterError
	var pe *parquetout.PageError
	switch {
	case err == nil:
		return true
	case errors.As(err, &pe):
		c.add(CheckFile, -1, fixDamaged, "a page is damaged: %s", strings.TrimPrefix(pe.Error(), "parquetout: pages: "))
		return false
	case !errors.As(err, &fe):
		c.add(CheckFile, -1, "check the file's permissions and the disk", "cannot read: %v", err)
		return false
	case errors.Is(err, parquetout.ErrFooterUnreadable):
		c.add(CheckFile, -1, fixDamaged, "not a readable Parquet file (truncated or damaged footer): %s", fe.Problem)
		return false
	}
	c.add(CheckFooter, -1, fixFooter, "the footer is not valid Parquet: %s", strings.TrimPrefix(fe.Error(), "parquetout: footer: "))
	return true
}

// checkCodecs reports false, and the file as foreign, when a column chunk
// is compressed with a codec rlrec does not write: its pages are not read
// (parquet-go's LZ4 decoder, for one, grows its buffer without bound on
// damaged input).
func (c *fileCheck) checkCodecs(pf *parquet.File) bool {
	for i, rg := range pf.Metadata().RowGroups {
		for j, cc := range rg.Columns {
			switch cc.MetaData.Codec {
			case format.Uncompressed, format.Snappy, format.Zstd:
				continue
			}
			c.add(CheckFile, -1, fixForeign, "row group %d column %d is compressed with %s; rlrec writes ZSTD, SNAPPY or UNCOMPRESSED pages only, and does not read these",
				i, j, cc.MetaData.Codec)
			return false
		}
	}
	return true
}

// fixMove is the advice for a file whose metadata names another
// partition than the one it is in.
func fixMove(p hive.Partition) string {
	return "move the file to " + p.Rel() + ", the partition its metadata names, or restore the directory's name"
}

// checkMeta checks the key-value metadata and that its ids name the
// partition directories the file is in. It reports false when the file
// cannot be read further (unknown version).
func (c *fileCheck) checkMeta(pf *parquet.File) bool {
	ver, ok := pf.Lookup(schema.MetaSchemaVersion)
	switch {
	case !ok:
		c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", schema.MetaSchemaVersion)
	case !schema.KnownSchemaVersion(ver):
		c.add(CheckSchemaVersion, -1, "read it with the rlrec version that wrote it, or move it out of ROOT",
			"schema version %q is not a known version (%q or %q)", ver, schema.SchemaVersion2, schema.SchemaVersion)
		return false
	}
	c.version = ver
	c.checkLayout(pf)
	if v, ok := pf.Lookup(schema.MetaLastSequence); ok {
		// What a later rlrec serve takes for the recording's last event
		// in ROOT: a garbled one would make it record resent events again.
		if n, err := strconv.ParseUint(v, 10, 64); err != nil || n == 0 {
			c.add(CheckMetadata, -1, fixForeign, "%s is %q, not a sequence number", schema.MetaLastSequence, v)
		}
	}
	f, s := c.f, &c.sum
	s.meta = hive.Partition{Table: f.Table, Episode: f.Episode}
	keys := []struct {
		meta, part string
		value      *string
	}{
		{schema.MetaSessionID, hive.KeySessionID, &s.meta.SessionID},
		{schema.MetaEnvID, hive.KeyEnvID, &s.meta.EnvID},
		{schema.MetaEpisodeRecordID, hive.KeyEpisodeRecordID, &s.meta.EpisodeRecordID},
	}
	if !f.Episode {
		keys = keys[:2]
	}
	s.placed = true
	var wrong []int
	for i, k := range keys {
		v, ok := pf.Lookup(k.meta)
		if !ok {
			c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", k.meta)
			s.placed = false
			continue
		}
		*k.value, s.has[i] = v, true
		if hive.Segment(k.part, v) != f.dirs[i] {
			s.placed = false
			wrong = append(wrong, i)
		}
	}
	fix := "restore the directory's name, or move the file out of ROOT"
	if countFalse(s.has[:len(keys)]) == 0 {
		fix = fixMove(s.meta)
	}
	for _, i := range wrong {
		k := keys[i]
		c.add(CheckPartition, -1, fix,
			"the path says %s, the metadata %s %s", pathValue(f.dirs[i], k.part), k.meta, quote(*k.value))
	}
	return true
}

// checkLayout checks rlrec.layout, and for a steps file that its
// partition is one of that layout.
func (c *fileCheck) checkLayout(pf *parquet.File) {
	name, ok := pf.Lookup(schema.MetaLayout)
	if !ok {
		c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", schema.MetaLayout)
		return
	}
	l, err := hive.ParseLayout(name)
	if err != nil {
		c.add(CheckMetadata, -1, fixForeign, "%s: %v", schema.MetaLayout, err)
		return
	}
	c.sum.layout = l
	if c.f.Table != schema.TableSteps {
		return
	}
	if c.f.Episode && l != hive.LayoutEpisode {
		c.add(CheckPartition, -1, fixForeign, "a steps file of layout %q in an episode partition (episode_record_id=...), where layout %q files belong", l, hive.LayoutEpisode)
	} else if !c.f.Episode && l != hive.LayoutSession {
		c.add(CheckPartition, -1, fixForeign, "a steps file of layout %q directly in a recording partition, where layout %q files belong", l, hive.LayoutSession)
	}
}

// pathValue renders a partition directory name for messages: key "value"
// decoded, the name shortened when its value was cut, or the name itself
// when it does not decode.
func pathValue(dir, key string) string {
	v, exact, err := hive.ParseSegment(dir, key)
	switch {
	case err != nil:
		return dir
	case !exact:
		enc := dir[len(key)+1:]
		return fmt.Sprintf("%s=%s...%s (a cut name)", key, enc[:24], enc[len(enc)-17:])
	}
	return key + " " + quote(v)
}

// maxQuoted is the longest id quoted whole in a message.
const maxQuoted = 80

// quote quotes an id for a message, shortening a long one.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return fmt.Sprintf("%q", s)
	}
	cut := maxQuoted
	for cut > 0 && !utf8RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", s[:cut], len(s))
}

func countFalse(b []bool) int {
	n := 0
	for _, x := range b {
		if !x {
			n++
		}
	}
	return n
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// space parses and compiles the space stored under key; nil when absent
// or broken (broken is reported).
func (c *fileCheck) space(pf *parquet.File, key string) (*schema.Layout, string) {
	js, ok := pf.Lookup(key)
	if !ok {
		return nil, ""
	}
	spec, err := schema.ParseSpecJSON([]byte(js))
	if err != nil {
		c.add(CheckMetadata, -1, fixForeign, "%s does not parse: %v", key, err)
		return nil, js
	}
	l, err := compile(spec)
	if err != nil {
		c.add(CheckMetadata, -1, fixForeign, "%s is not a valid space: %v", key, err)
		return nil, js
	}
	return l, js
}

func compile(spec *spacesv1.SpaceSpec) (*schema.Layout, error) { return schema.Compile(spec) }

// checkLeaves checks a decoded blob against its layout: leaf count, fixed
// leaf sizes, text UTF-8. It returns whether the leaves fit.
func (c *fileCheck) checkLeaves(row int64, what string, l *schema.Layout, leaves [][]byte) bool {
	if len(leaves) != len(l.Leaves) {
		c.add(CheckBlob, row, fixDamaged, "%s blob has %d leaves, its space %d", what, len(leaves), len(l.Leaves))
		return false
	}
	for i := range l.Leaves {
		leaf := &l.Leaves[i]
		if leaf.Fixed() {
			if int64(len(leaves[i])) != leaf.Stride {
				c.add(CheckBlob, row, fixDamaged, "%s blob leaf %d (%s) has %d bytes, its space %d", what, i, leafName(leaf), len(leaves[i]), leaf.Stride)
				return false
			}
		} else if !validUTF8(leaves[i]) {
			c.add(CheckBlob, row, fixDamaged, "%s blob leaf %d (%s) is text but not valid UTF-8", what, i, leafName(leaf))
			return false
		}
	}
	return true
}

func leafName(l *schema.Leaf) string {
	if l.Path == "" {
		return l.String()
	}
	return l.Path + ": " + l.String()
}
