package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"path/filepath"

	"github.com/rlrec/rlrec/internal/vfs"
)

// The log's expectation. The manifest (manifest.go) names the segments
// the log must have, but it lives in the log directory: deleted with its
// oldest segment, or with the whole directory, it says nothing, and the
// pending file (PendingName) is never named at all. So the log also
// records, outside its directory, what it expects: ExpectName in the log
// directory's parent (ROOT/_rlrec, or an s3:// ROOT's --log-dir), the
// manifest's range and whether a pending file was in use. Repair (and
// CheckExpected, read-only) compares the log directory with it: a missing
// log directory, manifest, segment or pending file is named, never taken
// for a log that has nothing.
//
// Layout, 36 bytes, little-endian (part of the on-disk format: do not
// change it):
//
//	+-----------------+-----------+-------------+-------------+-----------+-----------+
//	| magic (8)       | version   | first       | last        | flags     | CRC-32C   |
//	| "rlrecEXP"      | uint32 =1 | uint64      | uint64      | uint32    | of 0..31  |
//	+-----------------+-----------+-------------+-------------+-----------+-----------+
//
// flags bit 0: a pending file is in use. The file is written as the
// manifest is (whole, under a temporary name, fsynced, renamed, directory
// fsynced) each time the manifest is, after it, and after the pending file
// is mapped; RemoveExpected removes it before a log is cleared (a clean
// close), so that it never names what a crash can have left absent. A
// log with no such file (an earlier version, or cleared) is checked by
// its manifest alone, as before.

// ExpectName is the name of the log's expectation in the log directory's
// parent directory.
const ExpectName = "log-expect"

// ErrPendingMissing is the cause of a CorruptionError for a log whose
// pending file is gone though a writer had one in use: the records it
// held and had not written to a segment are lost.
var ErrPendingMissing = errors.New("wal: the log's pending file is missing")

// ErrLogMissing is the cause of a CorruptionError for a log directory
// that is gone, or lost its manifest, while the log expected records.
var ErrLogMissing = errors.New("wal: the log is missing")

const (
	expectMagic   = "rlrecEXP"
	expectVersion = 1 // do not change
	expectSize    = 36
	expectPending = 1 // flags bit 0; do not change
)

type logExpectation struct {
	m       manifest
	pending bool
}

func (e logExpectation) encode() []byte {
	b := make([]byte, 0, expectSize)
	b = append(b, expectMagic...)
	b = binary.LittleEndian.AppendUint32(b, expectVersion)
	b = binary.LittleEndian.AppendUint64(b, e.m.first)
	b = binary.LittleEndian.AppendUint64(b, e.m.last)
	var flags uint32
	if e.pending {
		flags |= expectPending
	}
	b = binary.LittleEndian.AppendUint32(b, flags)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeExpectation(b []byte) (logExpectation, error) {
	if len(b) != expectSize || string(b[:8]) != expectMagic ||
		binary.LittleEndian.Uint32(b[8:]) != expectVersion ||
		binary.LittleEndian.Uint32(b[32:]) != crc32.Checksum(b[:32], castagnoli) {
		return logExpectation{}, fmt.Errorf("wal: bad log expectation (%d bytes)", len(b))
	}
	e := logExpectation{m: manifest{first: binary.LittleEndian.Uint64(b[12:]), last: binary.LittleEndian.Uint64(b[20:])}}
	e.pending = binary.LittleEndian.Uint32(b[28:])&expectPending != 0
	if e.m.first == 0 || e.m.last < e.m.first {
		return logExpectation{}, fmt.Errorf("wal: bad log expectation: segments %d to %d", e.m.first, e.m.last)
	}
	return e, nil
}

// expectPath is the expectation's path for the log in dir.
func expectPath(dir string) string {
	return filepath.Join(filepath.Dir(filepath.Clean(dir)), ExpectName)
}

// readExpectation reads the expectation of the log in dir; ok is false
// when there is none.
func readExpectation(fsys vfs.FS, dir string) (e logExpectation, ok bool, err error) {
	name := expectPath(dir)
	b, ok, err := readSmall(fsys, name, expectSize)
	if !ok || err != nil {
		return e, false, err
	}
	e, err = decodeExpectation(b)
	if err != nil {
		return e, false, fmt.Errorf("%w: %s: delete it to recover without checking what the log expects", err, name)
	}
	return e, true, nil
}

// writeExpectation makes e the expectation of the log in dir, durably.
func writeExpectation(fsys vfs.FS, dir string, e logExpectation) error {
	name := expectPath(dir)
	if err := vfs.WriteFile(fsys, name+tempSuffix, name, e.encode()); err != nil {
		return fmt.Errorf("wal: write log expectation: %w", err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("wal: sync %s: %w", filepath.Dir(name), err)
	}
	return nil
}

// RemoveExpected removes the expectation of the log in dir, durably:
// before the log is cleared (its records all written out). A missing one
// is no error.
func RemoveExpected(fsys vfs.FS, dir string) error {
	name := expectPath(dir)
	err := fsys.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: remove %s: %w", name, err)
	}
	if err := fsys.SyncDir(filepath.Dir(name)); err != nil {
		return fmt.Errorf("wal: sync %s: %w", filepath.Dir(name), err)
	}
	return nil
}

// expectedManifest returns the manifest to check the log in dir by: its
// own, or the expectation's range when the manifest is gone. lost says
// the manifest is gone though the expectation names segments.
func expectedManifest(fsys vfs.FS, dir string) (m manifest, ok bool, lost bool, err error) {
	m, ok, err = readManifest(fsys, dir)
	if err != nil || ok {
		return m, ok, false, err
	}
	e, eok, err := readExpectation(fsys, dir)
	if err != nil || !eok {
		return m, false, false, err
	}
	return e.m, true, true, nil
}

// checkPending returns the CorruptionError of a log in dir whose pending
// file is gone though its expectation says one was in use, nil otherwise.
func checkPending(fsys vfs.FS, dir string) (*CorruptionError, error) {
	e, ok, err := readExpectation(fsys, dir)
	if err != nil || !ok || !e.pending {
		return nil, err
	}
	name := filepath.Join(dir, PendingName)
	if _, err := fsys.Stat(name); err == nil {
		return nil, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("wal: stat %s: %w", name, err)
	}
	return &CorruptionError{Segment: name, Last: true, Err: fmt.Errorf(
		"%w: %s (the log's expectation, %s, says a writer had it in use): the records it held that were not yet written to a segment (those of the writer's last moments, hooks may have returned for them) are lost unless the file is put back",
		ErrPendingMissing, name, expectPath(dir))}, nil
}

// CheckExpected compares the log in dir with what it expects (its
// manifest, and its expectation outside dir) without changing anything:
// it returns a *CorruptionError wrapping ErrSegmentMissing, ErrLogMissing
// or ErrPendingMissing naming what is gone, or nil. A missing dir is
// checked too: then every segment the expectation names is missing.
func CheckExpected(fsys vfs.FS, dir string) error {
	m, ok, _, err := expectedManifest(fsys, dir)
	if err != nil {
		return err
	}
	if ok {
		segs, err := listSegments(fsys, dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if missing := missingSegments(m, segs); len(missing) > 0 {
			return missingError(dir, m, segs, missing)
		}
	}
	ce, err := checkPending(fsys, dir)
	if err != nil {
		return err
	}
	if ce != nil {
		return ce
	}
	return nil
}
