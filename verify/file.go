package verify

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/schema"
	"github.com/rlrec/rlrec/schema/spacesv1"
)

// Advice shared by several checks.
const (
	fixDamaged = "the file is damaged: run 'rlrec recover ROOT' if the log still holds this data, otherwise move the file out of ROOT (one bad file makes a whole DuckDB scan fail) and re-record it"
	fixForeign = "rlrec did not write this file as it is now; move it out of ROOT, or restore it from a copy"
	fixFooter  = "strict readers (Spark, Athena, parquet-java) refuse the file though DuckDB and pandas may read it (rlrec wrote such footers before it stopped reusing parquet-go writers, parquet-go issue #602): rewrite it with a Parquet writer that keeps its key-value metadata, or move it out of ROOT and re-record it"
)

// fileCheck collects what checking one file found.
type fileCheck struct {
	v        *verifier
	f        *fileEntry
	problems []Problem
	more     int
	rows     int64

	// One of these is set when the file was read far enough.
	steps   *stepsSum
	episode *episodeSum
	session *sessionSum
}

func (c *fileCheck) add(check Check, row int64, fix, format string, args ...any) {
	if len(c.problems) >= c.v.opts.MaxProblemsPerFile {
		c.more++
		return
	}
	c.problems = append(c.problems, Problem{Check: check, Path: c.f.rel, Row: row, Message: fmt.Sprintf(format, args...), Fix: fix})
}

// checkFile opens one part file and runs the checks of its table. It
// always returns the check: a panic while reading the file (parquet-go
// may panic on damaged pages) is reported as damage to the file.
func (v *verifier) checkFile(f *fileEntry) (c *fileCheck) {
	c = &fileCheck{v: v, f: f}
	defer func() {
		if r := recover(); r != nil {
			c.add(CheckFile, -1, fixDamaged, "the file is damaged: reading it panicked: %v", r)
			c.steps, c.episode, c.session = nil, nil, nil
		}
	}()
	file, err := v.fs.Open(f.path)
	if err != nil {
		c.add(CheckFile, -1, "check the file's permissions", "cannot open: %v", err)
		return c
	}
	defer file.Close()
	if !c.checkFormat(file) {
		return c
	}
	pf, err := parquet.OpenFile(file, f.size, parquet.SkipBloomFilters(true))
	if err != nil {
		c.add(CheckFile, -1, fixDamaged, "not a readable Parquet file (truncated or damaged footer): %v", err)
		return c
	}
	if !c.checkCodecs(pf) || !c.checkMeta(pf) {
		return c
	}
	switch f.table {
	case schema.TableSteps:
		c.checkSteps(pf)
	case schema.TableEpisodes:
		c.checkEpisodes(pf)
	case schema.TableSessions:
		c.checkSessions(pf)
	case schema.TableLogs:
		checkFixed[schema.LogRow](c, pf, schema.LogsSchema)
	case schema.TableTelemetry:
		checkFixed[schema.TelemetryRow](c, pf, schema.TelemetrySchema)
	}
	return c
}

// checkFormat checks the footer as strict readers check it and every
// page against its checksum and its column chunk (parquetout.CheckPages).
// It reports false when the file cannot be read further: its footer
// cannot be read at all or a page is damaged.
func (c *fileCheck) checkFormat(r io.ReaderAt) bool {
	err := parquetout.CheckPages(r, c.f.size)
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

// checkMeta checks the key-value metadata and the partition path. It
// reports false when the file cannot be read further (unknown version).
func (c *fileCheck) checkMeta(pf *parquet.File) bool {
	ver, ok := pf.Lookup(schema.MetaSchemaVersion)
	switch {
	case !ok:
		c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", schema.MetaSchemaVersion)
	case ver != schema.SchemaVersion:
		c.add(CheckSchemaVersion, -1, "read it with the rlrec version that wrote it, or move it out of ROOT",
			"schema version %q is not the known version %q", ver, schema.SchemaVersion)
		return false
	}
	sid, ok := pf.Lookup(schema.MetaSessionID)
	if !ok {
		c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", schema.MetaSessionID)
	} else if sid != c.f.sid {
		c.add(CheckPartition, -1, "move the file to the partition its metadata names, or restore the directory's name",
			"the path says session_id %q, the metadata %s %q", c.f.sid, schema.MetaSessionID, sid)
	}
	if !episodeTable(c.f.table) {
		return true
	}
	erid, ok := pf.Lookup(schema.MetaEpisodeRecordID)
	if !ok {
		c.add(CheckMetadata, -1, fixForeign, "no %s in the key-value metadata", schema.MetaEpisodeRecordID)
	} else if erid != c.f.erid {
		c.add(CheckPartition, -1, "move the file to the partition its metadata names, or restore the directory's name",
			"the path says episode_record_id %q, the metadata %s %q", c.f.erid, schema.MetaEpisodeRecordID, erid)
	}
	return true
}

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
