package report

// Frame is one shown camera frame.
type Frame struct {
	// Step is the frame's step within its episode (0-based).
	Step int64
	// W and H are the shown size in pixels (after shrinking).
	W, H int
	// PNG is the encoded frame.
	PNG []byte
}

// sampleSteps returns up to k positions in [0, n), evenly spaced, first
// and last included.
func sampleSteps(n int64, k int) []int64 {
	if n <= 0 || k <= 0 {
		return nil
	}
	if n <= int64(k) {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i)
		}
		return out
	}
	if k == 1 {
		return []int64{0}
	}
	out := make([]int64, k)
	for i := range out {
		out[i] = (int64(i)*(n-1) + int64(k-1)/2) / int64(k-1)
	}
	return out
}
