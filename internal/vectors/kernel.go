package vectors

import (
	"errors"
	"math"
	"math/bits"
)

// dot is the integer dot product of a query and a stored vector of one
// length. Re-slicing by eight lets the compiler drop bounds checks and
// address both with fixed offsets; two accumulators let the adds overlap.
// The query is int32, not int16: its loads then need no sign extension,
// which measured 17% faster, and 7% faster than a float32 query.
func dot(a []int32, b []int8) int32 {
	var s0, s1 int32
	for len(a) >= 8 && len(b) >= 8 {
		s0 += a[0]*int32(b[0]) + a[1]*int32(b[1]) + a[2]*int32(b[2]) + a[3]*int32(b[3])
		s1 += a[4]*int32(b[4]) + a[5]*int32(b[5]) + a[6]*int32(b[6]) + a[7]*int32(b[7])
		a, b = a[8:], b[8:]
	}
	for i := range min(len(a), len(b)) {
		s0 += a[i] * int32(b[i])
	}
	return s0 + s1
}

// hamming counts the differing bits of two sign codes of one length.
func hamming(a, b []uint64) int {
	b = b[:len(a)]
	n := 0
	for i, w := range a {
		n += bits.OnesCount64(w ^ b[i])
	}
	return n
}

// signs packs the sign bit of each component (set for negative) into
// words: two vectors' Hamming distance then tracks the angle between them.
func signs[T int8 | int32](dst []uint64, code []T) {
	clear(dst)
	for i, c := range code {
		if c < 0 {
			dst[i/64] |= 1 << (i % 64)
		}
	}
}

// errNoDirection is a query whose cosine with anything is undefined.
var errNoDirection = errors.New("vectors: query is zero or not finite")

// quantise turns a query into integer components of up to 16 bits, its
// largest at the most that keeps dot within an int32, and returns 1/|qc|.
// That many bits make the query's rounding negligible beside the stored
// vectors' eight: an int8 query lost half a point of recall@10, and a
// float32 query is no more accurate but slower in dot.
func quantise(q []float32, qc []int32) (float32, error) {
	maxAbs, _, ok := direction(q)
	if !ok {
		return 0, errNoDirection
	}
	top := float64(min(math.MaxInt16, math.MaxInt32/(127*max(len(q), 1))))
	inv := top / maxAbs
	var sum int64
	for i, f := range q {
		c := int32(math.Round(float64(f) * inv))
		qc[i] = c
		sum += int64(c) * int64(c)
	}
	return float32(1 / math.Sqrt(float64(sum))), nil
}

// invNorm is 1/|code|, 0 for the zero vector. The index scores with it in
// place of the stored scale: dividing by the quantised vector's own length
// makes the score the exact cosine of what is stored, and a vector's score
// against itself 1.
func invNorm(code []int8) float32 {
	var sum int32
	for _, c := range code {
		sum += int32(c) * int32(c)
	}
	if sum == 0 {
		return 0
	}
	return float32(1 / math.Sqrt(float64(sum)))
}
