package recorder

import (
	"errors"
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"google.golang.org/protobuf/encoding/protowire"
)

// Records of the recorder's log. Each log record starts with one byte that
// says what follows:
//
//	recEvent        an rlrec.events.v1.Event protobuf message: one hook
//	                event as it was handed over, with its recording time
//	recEpisodeDone  a marker: the files of one episode are durable
//	recSessionDone  a marker: the k-th write of one session's files
//	                (session row, logs, telemetry) is durable
//	recSessionWrite the k-th write of one session's files was handed to
//	                the writer (logged right after the event that caused
//	                it, so that recovery numbers late writes as they were)
//	recSnapshot     the whole assembly state as of a log position (see
//	                snapshot.go for its body)
//	recSealed       every write handed to the writer before the snapshot
//	                as of position as_of is durable: recovery may restore
//	                that snapshot and skip the events up to as_of
//	recInvalid      a message of an ingested stream that was well-formed
//	                but no valid event: what names its recording, its
//	                recording time and why it was refused (see
//	                appendInvalid); counted as a problem of that recording
//
// A marker's body is protobuf wire data: field 1 the session id (bytes),
// field 4 the env id (bytes; with field 1 it names the recording), field 2
// the episode record id (episodes) or field 3 the write number k (varint:
// the k-th write of the recording's session files), and field 5, repeated,
// the files of the write (their final paths relative to ROOT, "/"
// separators); a seal's is field 1 as_of (varint). Markers let recovery skip work already done; they
// carry no data of their own. These values are part of the on-disk format:
// do not change them.
const (
	recEvent        byte = 1
	recEpisodeDone  byte = 2
	recSessionDone  byte = 3
	recSessionWrite byte = 4
	recSnapshot     byte = 5
	recSealed       byte = 6
	recInvalid      byte = 7
)

var errBadMarker = errors.New("malformed marker record")

func appendRecording(dst []byte, rec hive.Recording) []byte {
	dst = protowire.AppendTag(dst, 1, protowire.BytesType)
	dst = protowire.AppendString(dst, rec.SessionID)
	dst = protowire.AppendTag(dst, 4, protowire.BytesType)
	return protowire.AppendString(dst, rec.EnvID)
}

func appendFiles(dst []byte, files []string) []byte {
	for _, f := range files {
		dst = protowire.AppendTag(dst, 5, protowire.BytesType)
		dst = protowire.AppendString(dst, f)
	}
	return dst
}

func appendEpisodeMarker(dst []byte, rec hive.Recording, record string, files []string) []byte {
	dst = append(dst, recEpisodeDone)
	dst = appendRecording(dst, rec)
	dst = protowire.AppendTag(dst, 2, protowire.BytesType)
	dst = protowire.AppendString(dst, record)
	return appendFiles(dst, files)
}

func appendSessionMarker(dst []byte, typ byte, rec hive.Recording, write int, files []string) []byte {
	dst = append(dst, typ)
	dst = appendRecording(dst, rec)
	dst = protowire.AppendTag(dst, 3, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(write))
	return appendFiles(dst, files)
}

func appendSealed(dst []byte, asOf uint64) []byte {
	dst = append(dst, recSealed)
	dst = protowire.AppendTag(dst, 1, protowire.VarintType)
	return protowire.AppendVarint(dst, asOf)
}

func parseSealed(b []byte) (asOf uint64, err error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.VarintType {
		return 0, fmt.Errorf("%w: not a seal", errBadMarker)
	}
	asOf, m := protowire.ConsumeVarint(b[n:])
	if m < 0 || n+m != len(b) {
		return 0, fmt.Errorf("%w: not a seal", errBadMarker)
	}
	return asOf, nil
}

// marker is a decoded marker record.
type marker struct {
	rec    hive.Recording
	record string
	write  int
	files  []string
}

func parseMarker(b []byte) (marker, error) {
	var m marker
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
			}
			m.rec.SessionID, b = v, b[n:]
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
			}
			m.record, b = v, b[n:]
		case num == 5 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
			}
			m.files, b = append(m.files, v), b[n:]
		case num == 4 && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
			}
			m.rec.EnvID, b = v, b[n:]
		case num == 3 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, fmt.Errorf("%w: %v", errBadMarker, protowire.ParseError(n))
			}
			m.write, b = int(v), b[n:]
		default:
			return m, fmt.Errorf("%w: unexpected field %d", errBadMarker, num)
		}
	}
	return m, nil
}
