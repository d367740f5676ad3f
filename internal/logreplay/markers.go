package logreplay

import (
	"fmt"
	"log/slog"

	"github.com/rlrec/rlrec/internal/logrec"
	"github.com/rlrec/rlrec/internal/vfs"
	"github.com/rlrec/rlrec/internal/wal"
)

// Markers reads the markers of the log in dir (logrec.TypeEpisodeDone,
// TypeSessionDone, TypeSessionWrite, TypeUploadBegun) into a logrec.Published, and returns
// the last snapshot record that a seal follows (nil if none), with its
// type byte. Malformed markers, snapshots and seals are logged and
// skipped. Markers are small and few; events, most of the log, are
// checked but not decompressed.
func Markers(fsys vfs.FS, dir string, log *slog.Logger) (*logrec.Published, []byte, error) {
	done := logrec.NewPublished()
	rd, err := wal.NewReader(fsys, dir)
	if err != nil {
		return nil, nil, err
	}
	defer rd.Close()
	rd.Filter(func(first byte) bool { return !logrec.Type(first).IsEvent() })
	var snap, sealed []byte
	var snapAsOf uint64
	for rd.Next() {
		rec := rd.Record()
		switch logrec.Of(rec) {
		case logrec.TypeSnapshot:
			asOf, err := logrec.SnapshotAsOf(rec[1:])
			if err != nil {
				log.Error("skipping a malformed snapshot record", "pos", rd.Pos(), "err", err)
				continue
			}
			snap, snapAsOf = append(snap[:0], rec...), asOf
			continue
		case logrec.TypeSealed:
			asOf, err := logrec.ParseSealed(rec[1:])
			if err != nil {
				log.Error("skipping a malformed seal record", "pos", rd.Pos(), "err", err)
			} else if snap != nil && asOf == snapAsOf {
				sealed = append(sealed[:0], snap...)
			}
			continue
		}
		switch logrec.Of(rec) {
		case logrec.TypeEpisodeDone, logrec.TypeSessionDone, logrec.TypeSessionWrite, logrec.TypeUploadBegun:
		default:
			continue
		}
		if err := done.Add(rec); err != nil {
			log.Error("skipping a malformed marker record", "pos", rd.Pos(), "err", err)
		}
	}
	if err := rd.Err(); err != nil {
		return nil, nil, fmt.Errorf("read log: %w", err)
	}
	return done, sealed, nil
}
