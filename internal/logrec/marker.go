package logrec

import (
	"fmt"

	"github.com/rlrec/rlrec/internal/hive"
	"google.golang.org/protobuf/encoding/protowire"
)

// Marker is the body of a marker record (TypeEpisodeDone, TypeSessionDone,
// TypeSessionWrite): which write of which recording it names, and the
// files of that write. Markers let recovery skip work already done; they
// carry no data of their own.
type Marker struct {
	// Recording is the recording the write belongs to.
	Recording hive.Recording
	// Record is the episode record id (TypeEpisodeDone only).
	Record string
	// Write is k, the k-th write of the recording's session files
	// (TypeSessionDone and TypeSessionWrite only).
	Write int
	// Files are the write's files: their final paths relative to ROOT,
	// "/" separators.
	Files []string
}

// Marker field numbers. Part of the on-disk format: do not change them.
const (
	markerSession protowire.Number = 1 // bytes
	markerRecord  protowire.Number = 2 // bytes
	markerWrite   protowire.Number = 3 // varint
	markerEnv     protowire.Number = 4 // bytes
	markerFile    protowire.Number = 5 // bytes, repeated

	sealedAsOf protowire.Number = 1 // varint
)

func appendRecording(dst []byte, rec hive.Recording) []byte {
	dst = protowire.AppendTag(dst, markerSession, protowire.BytesType)
	dst = protowire.AppendString(dst, rec.SessionID)
	dst = protowire.AppendTag(dst, markerEnv, protowire.BytesType)
	return protowire.AppendString(dst, rec.EnvID)
}

func appendFiles(dst []byte, files []string) []byte {
	for _, f := range files {
		dst = protowire.AppendTag(dst, markerFile, protowire.BytesType)
		dst = protowire.AppendString(dst, f)
	}
	return dst
}

// AppendEpisodeDone appends a TypeEpisodeDone record, type byte first:
// the files of episode m.Record of m.Recording are durable.
func AppendEpisodeDone(dst []byte, m Marker) []byte {
	dst = append(dst, byte(TypeEpisodeDone))
	dst = appendRecording(dst, m.Recording)
	dst = protowire.AppendTag(dst, markerRecord, protowire.BytesType)
	dst = protowire.AppendString(dst, m.Record)
	return appendFiles(dst, m.Files)
}

// AppendSessionMarker appends a marker record of type typ
// (TypeSessionDone or TypeSessionWrite), type byte first, naming write
// m.Write of m.Recording.
func AppendSessionMarker(dst []byte, typ Type, m Marker) []byte {
	dst = append(dst, byte(typ))
	dst = appendRecording(dst, m.Recording)
	dst = protowire.AppendTag(dst, markerWrite, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(m.Write))
	return appendFiles(dst, m.Files)
}

// ParseMarker decodes the body of a marker record (after its type byte).
// The strings it returns are copies.
func ParseMarker(b []byte) (Marker, error) {
	var m Marker
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return m, fmt.Errorf("%w: %v", ErrMarker, protowire.ParseError(n))
		}
		b = b[n:]
		if num == markerWrite && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return m, fmt.Errorf("%w: write: %v", ErrMarker, protowire.ParseError(n))
			}
			m.Write, b = int(v), b[n:]
			continue
		}
		if typ != protowire.BytesType || num < markerSession || num > markerFile || num == markerWrite {
			return m, fmt.Errorf("%w: unexpected field %d", ErrMarker, num)
		}
		v, n := protowire.ConsumeString(b)
		if n < 0 {
			return m, fmt.Errorf("%w: field %d: %v", ErrMarker, num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case markerSession:
			m.Recording.SessionID = v
		case markerRecord:
			m.Record = v
		case markerEnv:
			m.Recording.EnvID = v
		case markerFile:
			m.Files = append(m.Files, v)
		}
	}
	return m, nil
}

// AppendSealed appends a TypeSealed record, type byte first: the snapshot
// as of position asOf may be relied on.
func AppendSealed(dst []byte, asOf uint64) []byte {
	dst = append(dst, byte(TypeSealed))
	dst = protowire.AppendTag(dst, sealedAsOf, protowire.VarintType)
	return protowire.AppendVarint(dst, asOf)
}

// ParseSealed decodes the body of a TypeSealed record (after its type
// byte).
func ParseSealed(b []byte) (asOf uint64, err error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != sealedAsOf || typ != protowire.VarintType {
		return 0, fmt.Errorf("%w: not a seal", ErrMarker)
	}
	asOf, m := protowire.ConsumeVarint(b[n:])
	if m < 0 || n+m != len(b) {
		return 0, fmt.Errorf("%w: not a seal", ErrMarker)
	}
	return asOf, nil
}
