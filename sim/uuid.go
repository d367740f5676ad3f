package sim

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
)

// newUUIDv7 builds a UUIDv7 (RFC 9562 §5.7) from t and rng: the 48-bit Unix
// millisecond timestamp big-endian, version 7, 12 random bits, the RFC 4122
// variant, 62 random bits. Unlike uuid.NewV7 it is a pure function of its
// inputs, which keeps runs reproducible.
func newUUIDv7(t time.Time, rng *rand.Rand) string {
	var b [16]byte
	ms := uint64(t.UnixMilli())
	binary.BigEndian.PutUint64(b[8:], rng.Uint64())
	binary.BigEndian.PutUint16(b[6:], uint16(rng.Uint32()))
	b[0] = byte(ms >> 40)
	b[1] = byte(ms >> 32)
	b[2] = byte(ms >> 24)
	b[3] = byte(ms >> 16)
	b[4] = byte(ms >> 8)
	b[5] = byte(ms)
	b[6] = b[6]&0x0f | 0x70 // version 7
	b[8] = b[8]&0x3f | 0x80 // variant 10
	return uuid.UUID(b).String()
}
