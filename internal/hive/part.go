package hive

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rlrec/rlrec/schema"
)

// Part file names. They are part of the on-disk layout: do not change them.
const (
	partPrefix = "part-"
	partSuffix = ".parquet"
	tmpPrefix  = "."
	tmpSuffix  = ".tmp"
	partDigits = 5
)

// PartName returns the final name of part n: part-00000.parquet.
func PartName(n int) string {
	return fmt.Sprintf("%s%0*d%s", partPrefix, partDigits, n, partSuffix)
}

// TempName returns the name part n is written under until it is committed:
// .part-00000.parquet.tmp.
func TempName(n int) string { return tmpPrefix + PartName(n) + tmpSuffix }

// ParsePartName returns the number of a part file name, final or temp, and
// whether name is one.
func ParsePartName(name string) (n int, temp bool, ok bool) {
	if strings.HasPrefix(name, tmpPrefix) && strings.HasSuffix(name, tmpSuffix) {
		name = name[len(tmpPrefix) : len(name)-len(tmpSuffix)]
		temp = true
	}
	if !strings.HasPrefix(name, partPrefix) || !strings.HasSuffix(name, partSuffix) {
		return 0, false, false
	}
	digits := name[len(partPrefix) : len(name)-len(partSuffix)]
	if len(digits) < partDigits {
		return 0, false, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, false, false
	}
	return n, temp, true
}

// Hidden reports names every reader skips: the recorder's state ("_"),
// hidden files and temp files.
func Hidden(name string) bool {
	return strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".tmp")
}

// The recorder's own state under ROOT. Part of the on-disk layout: do not
// change them.
const (
	// StateDir is the recorder's directory under ROOT.
	StateDir = "_rlrec"
	// LogDir is the log's directory under StateDir.
	LogDir = "log"
	// LockName is the lock file under StateDir.
	LockName = "LOCK"
	// LayoutName is the file under StateDir that holds the ROOT's schema
	// version and steps layout.
	LayoutName = "layout"
	// JournalName is the recovery journal in the recorder's state
	// directory (StateDir, or an s3:// ROOT's local one).
	JournalName = "journal"
	// OpenMarkerName is the open marker in the recorder's state
	// directory: there while a recorder may have files under temp names.
	OpenMarkerName = "open"
)

// Keys of the layout file (StateDir/LayoutName): lines key=value. Part of
// the on-disk layout: do not change them.
const (
	layoutKeyVersion = "schema_version"
	layoutKeyLayout  = "layout"
)

// LayoutFile returns the body of the layout file of a ROOT of layout l
// and the current schema version.
func LayoutFile(l Layout) []byte {
	return fmt.Appendf(nil, "%s=%s\n%s=%s\n", layoutKeyVersion, schema.SchemaVersion, layoutKeyLayout, l)
}

// ParseLayoutFile reads the body of a layout file (of a ROOT created at
// schema version 2 or 3: the version the file names is that of the ROOT's
// creation, and a ROOT created at version 2 takes recordings of version 3
// too, each recording's files of one version): an error wrapping
// ErrSchemaVersion names a ROOT of another schema version, one wrapping
// ErrBadLayout an unknown layout.
func ParseLayoutFile(b []byte) (Layout, error) {
	kv := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		kv[k] = v
	}
	if v := kv[layoutKeyVersion]; !schema.KnownSchemaVersion(v) {
		return "", fmt.Errorf("%w %q: this rlrec reads %q and %q and writes %q", ErrSchemaVersion, v,
			schema.SchemaVersion2, schema.SchemaVersion, schema.SchemaVersion)
	}
	return ParseLayout(kv[layoutKeyLayout])
}
