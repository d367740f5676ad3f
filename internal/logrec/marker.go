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
	// Uploads are the multipart uploads in flight of the files that
	// object storage made durable in pieces before the marker (a ROOT in
	// a bucket): recovery completes them when the objects are missing.
	Uploads []Upload
}

// Upload is a multipart upload in flight: the file it publishes, the
// service's upload id, and its pieces, enough to complete it after a
// crash. It is also the object store's own value of an upload
// (internal/store: PendingUpload, CompleteUpload, AbortUpload), which
// imports this package: one type, no conversion between the two.
type Upload struct {
	// File is the object's path relative to ROOT, one of Files.
	File string
	// ID is the service's upload id.
	ID string
	// Pieces are its uploaded pieces, in order.
	Pieces []Piece
}

// Piece is one uploaded piece of an Upload.
type Piece struct {
	Number int32
	ETag   string
	Size   int64
}

// Marker field numbers. Part of the on-disk format: do not change them.
const (
	markerSession protowire.Number = 1 // bytes
	markerRecord  protowire.Number = 2 // bytes
	markerWrite   protowire.Number = 3 // varint
	markerEnv     protowire.Number = 4 // bytes
	markerFile    protowire.Number = 5 // bytes, repeated
	markerUpload  protowire.Number = 6 // bytes: Upload message, repeated

	uploadFile  protowire.Number = 1 // bytes
	uploadID    protowire.Number = 2 // bytes
	uploadPiece protowire.Number = 3 // bytes: Piece message, repeated

	pieceNumber protowire.Number = 1 // varint
	pieceETag   protowire.Number = 2 // bytes
	pieceSize   protowire.Number = 3 // varint

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

// appendUploads appends the marker's uploads (none for a ROOT on disk,
// whose markers stay byte for byte what they were).
func appendUploads(dst []byte, ups []Upload) []byte {
	for _, u := range ups {
		var b []byte
		b = protowire.AppendTag(b, uploadFile, protowire.BytesType)
		b = protowire.AppendString(b, u.File)
		b = protowire.AppendTag(b, uploadID, protowire.BytesType)
		b = protowire.AppendString(b, u.ID)
		for _, pc := range u.Pieces {
			var p []byte
			p = protowire.AppendTag(p, pieceNumber, protowire.VarintType)
			p = protowire.AppendVarint(p, uint64(pc.Number))
			p = protowire.AppendTag(p, pieceETag, protowire.BytesType)
			p = protowire.AppendString(p, pc.ETag)
			p = protowire.AppendTag(p, pieceSize, protowire.VarintType)
			p = protowire.AppendVarint(p, uint64(pc.Size))
			b = protowire.AppendTag(b, uploadPiece, protowire.BytesType)
			b = protowire.AppendBytes(b, p)
		}
		dst = protowire.AppendTag(dst, markerUpload, protowire.BytesType)
		dst = protowire.AppendBytes(dst, b)
	}
	return dst
}

// parseUpload decodes an Upload message.
func parseUpload(b []byte) (Upload, error) {
	var u Upload
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < uploadFile || num > uploadPiece {
			return u, fmt.Errorf("%w: upload: unexpected field %d", ErrMarker, num)
		}
		b = b[n:]
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return u, fmt.Errorf("%w: upload field %d: %v", ErrMarker, num, protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case uploadFile:
			u.File = string(v)
		case uploadID:
			u.ID = string(v)
		case uploadPiece:
			pc, err := parsePiece(v)
			if err != nil {
				return u, err
			}
			u.Pieces = append(u.Pieces, pc)
		}
	}
	return u, nil
}

// parsePiece decodes a Piece message.
func parsePiece(b []byte) (Piece, error) {
	var pc Piece
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return pc, fmt.Errorf("%w: piece: %v", ErrMarker, protowire.ParseError(n))
		}
		b = b[n:]
		switch {
		case (num == pieceNumber || num == pieceSize) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return pc, fmt.Errorf("%w: piece field %d: %v", ErrMarker, num, protowire.ParseError(n))
			}
			b = b[n:]
			if num == pieceNumber {
				if v == 0 || v > 10000 {
					return pc, fmt.Errorf("%w: piece number %d", ErrMarker, v)
				}
				pc.Number = int32(v)
			} else {
				pc.Size = int64(v)
			}
		case num == pieceETag && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(b)
			if n < 0 {
				return pc, fmt.Errorf("%w: piece etag: %v", ErrMarker, protowire.ParseError(n))
			}
			pc.ETag, b = v, b[n:]
		default:
			return pc, fmt.Errorf("%w: piece: unexpected field %d", ErrMarker, num)
		}
	}
	return pc, nil
}

// AppendEpisodeDone appends a TypeEpisodeDone record, type byte first:
// the files of episode m.Record of m.Recording are durable.
func AppendEpisodeDone(dst []byte, m Marker) []byte {
	dst = append(dst, byte(TypeEpisodeDone))
	dst = appendRecording(dst, m.Recording)
	dst = protowire.AppendTag(dst, markerRecord, protowire.BytesType)
	dst = protowire.AppendString(dst, m.Record)
	return appendUploads(appendFiles(dst, m.Files), m.Uploads)
}

// AppendUploadBegun appends a TypeUploadBegun record, type byte first:
// multipart uploads of m.Files (of m.Recording) are about to begin.
func AppendUploadBegun(dst []byte, m Marker) []byte {
	dst = append(dst, byte(TypeUploadBegun))
	dst = appendRecording(dst, m.Recording)
	return appendFiles(dst, m.Files)
}

// AppendMarker appends the marker record of type typ (TypeEpisodeDone,
// TypeSessionDone, TypeSessionWrite or TypeUploadBegun) of m.
func AppendMarker(dst []byte, typ Type, m Marker) []byte {
	switch typ {
	case TypeEpisodeDone:
		return AppendEpisodeDone(dst, m)
	case TypeUploadBegun:
		return AppendUploadBegun(dst, m)
	}
	return AppendSessionMarker(dst, typ, m)
}

// AppendSessionMarker appends a marker record of type typ
// (TypeSessionDone or TypeSessionWrite), type byte first, naming write
// m.Write of m.Recording.
func AppendSessionMarker(dst []byte, typ Type, m Marker) []byte {
	dst = append(dst, byte(typ))
	dst = appendRecording(dst, m.Recording)
	dst = protowire.AppendTag(dst, markerWrite, protowire.VarintType)
	dst = protowire.AppendVarint(dst, uint64(m.Write))
	return appendUploads(appendFiles(dst, m.Files), m.Uploads)
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
		if num == markerUpload && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return m, fmt.Errorf("%w: upload: %v", ErrMarker, protowire.ParseError(n))
			}
			b = b[n:]
			u, err := parseUpload(v)
			if err != nil {
				return m, err
			}
			m.Uploads = append(m.Uploads, u)
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
