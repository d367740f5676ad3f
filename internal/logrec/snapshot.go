package logrec

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

//go:generate protoc --proto_path=../.. --go_out=../.. --go_opt=module=github.com/rlrec/rlrec internal/logrec/snapshot.proto

// AppendSnapshot appends a TypeSnapshot record of s, type byte first.
func AppendSnapshot(dst []byte, s *Snapshot) ([]byte, error) {
	dst = append(dst, byte(TypeSnapshot))
	dst, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(dst, s)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	return dst, nil
}

// ParseSnapshot decodes the body of a TypeSnapshot record (after its type
// byte). What it returns holds copies of b's bytes.
func ParseSnapshot(b []byte) (*Snapshot, error) {
	s := &Snapshot{}
	if err := proto.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSnapshot, err)
	}
	return s, nil
}

// SnapshotAsOf reads the as_of of a snapshot record's body, its first
// field, without decoding the rest (a snapshot may be large, and
// recovery's marker pass needs only this).
func SnapshotAsOf(b []byte) (uint64, error) {
	num, typ, n := protowire.ConsumeTag(b)
	if n < 0 || num != 1 || typ != protowire.VarintType {
		return 0, fmt.Errorf("%w: it does not start with as_of", ErrSnapshot)
	}
	v, m := protowire.ConsumeVarint(b[n:])
	if m < 0 {
		return 0, fmt.Errorf("%w: as_of: %v", ErrSnapshot, protowire.ParseError(m))
	}
	return v, nil
}
