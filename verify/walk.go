package verify

import (
	"path"
	"path/filepath"
	"strings"

	"github.com/rlrec/rlrec/internal/hive"
	"github.com/rlrec/rlrec/internal/parquetout"
	"github.com/rlrec/rlrec/schema"
)

// fileEntry is one part file found under a table directory.
type fileEntry struct {
	path  string // OS path
	rel   string // relative to ROOT, "/" separators
	table string
	// sid and erid are the partition values decoded from the path.
	sid, erid string
	size      int64
}

// episodeTables are partitioned by session and episode record id, the
// others by session only.
func episodeTable(table string) bool {
	return table == schema.TableSteps || table == schema.TableEpisodes
}

var tables = []string{schema.TableSteps, schema.TableEpisodes, schema.TableSessions, schema.TableLogs, schema.TableTelemetry}

// walk lists the part files of every table and reports what else lies
// under the table directories.
func (v *verifier) walk() ([]fileEntry, error) {
	var files []fileEntry
	for _, table := range tables {
		dir := filepath.Join(v.root, table)
		entries, err := v.fs.ReadDir(dir)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			v.add(Problem{Check: CheckFile, Path: table, Row: -1, Message: "cannot list the table directory: " + err.Error(),
				Fix: "check the directory's permissions"})
			continue
		}
		for _, e := range entries {
			rel := path.Join(table, e.Name())
			sid, ok := v.partitionDir(rel, e.IsDir(), e.Name(), schema.ColSessionID)
			if !ok {
				continue
			}
			sdir := filepath.Join(dir, e.Name())
			if !episodeTable(table) {
				files = v.partFiles(files, sdir, rel, table, sid, "")
				continue
			}
			eps, err := v.fs.ReadDir(sdir)
			if err != nil {
				v.add(Problem{Check: CheckFile, Path: rel, Row: -1, Message: "cannot list the session directory: " + err.Error(),
					Fix: "check the directory's permissions"})
				continue
			}
			for _, ee := range eps {
				erel := path.Join(rel, ee.Name())
				erid, ok := v.partitionDir(erel, ee.IsDir(), ee.Name(), schema.ColEpisodeRecordID)
				if !ok {
					continue
				}
				files = v.partFiles(files, filepath.Join(sdir, ee.Name()), erel, table, sid, erid)
			}
		}
	}
	return files, nil
}

// partitionDir checks that a directory entry is a key=value partition
// directory and returns its decoded value.
func (v *verifier) partitionDir(rel string, isDir bool, name, key string) (string, bool) {
	if !isDir {
		v.unknown(rel, name, "a file where only "+key+"=... partition directories belong")
		return "", false
	}
	val, ok := strings.CutPrefix(name, key+"=")
	if !ok {
		v.unknown(rel, name, "a directory that is not a "+key+"=... partition")
		return "", false
	}
	dec, err := hive.Unescape(val)
	if err != nil {
		v.add(Problem{Check: CheckPartition, Path: rel, Row: -1,
			Message: "the partition value does not decode: " + err.Error(),
			Fix:     "rlrec never writes this name; move the directory out of ROOT"})
		return "", false
	}
	return dec, true
}

// partFiles lists the part files of a partition directory.
func (v *verifier) partFiles(files []fileEntry, dir, rel, table, sid, erid string) []fileEntry {
	entries, err := v.fs.ReadDir(dir)
	if err != nil {
		v.add(Problem{Check: CheckFile, Path: rel, Row: -1, Message: "cannot list the partition directory: " + err.Error(),
			Fix: "check the directory's permissions"})
		return files
	}
	for _, e := range entries {
		frel := path.Join(rel, e.Name())
		_, temp, ok := parquetout.ParsePartName(e.Name())
		switch {
		case ok && temp:
			v.temps = append(v.temps, frel)
			continue
		case !ok || e.IsDir():
			v.unknown(frel, e.Name(), "not a part file")
			continue
		}
		info, err := e.Info()
		if err != nil {
			v.add(Problem{Check: CheckFile, Path: frel, Row: -1, Message: "cannot stat: " + err.Error(), Fix: "check the file's permissions"})
			continue
		}
		v.partFilesSeen[table+"\x00"+sid+"\x00"+erid]++
		files = append(files, fileEntry{path: filepath.Join(dir, e.Name()), rel: frel, table: table, sid: sid, erid: erid, size: info.Size()})
	}
	return files
}

func (v *verifier) unknown(rel, name, what string) {
	v.add(Problem{Check: CheckStray, Path: rel, Row: -1,
		Message: "unknown entry " + name + " under a table directory: " + what,
		Fix:     "rlrec did not write it and dataset scans may trip over it; move it out of ROOT"})
}
