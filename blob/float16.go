package blob

import "math"

// Float16ToFloat32 converts an IEEE 754 binary16 value (as its bits) to
// float32 exactly: every half value, subnormals included, is representable
// as a float32. Infinities keep their sign; NaNs stay NaN with their sign
// and payload (shifted into the float32 mantissa).
func Float16ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // infinity or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0: // zero or subnormal: mant * 2^-24
		f := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		return f
	}
	// Normal: rebias the exponent from 15 to 127.
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
