package vectors

import (
	"encoding/binary"
	"fmt"
	"math"
)

const (
	// version is the first byte of every encoded vector, so a later format
	// can be told apart from this one.
	version = 1
	// headerLen is the version byte and the float32 scale.
	headerLen = 5
	// MaxDims is the most dimensions a vector may have, far above any
	// model's: a search's Hamming distances then fit in a uint16, and its
	// int32 dot products keep the query at 500 levels or more.
	MaxDims = 1 << 15
	// maxScale is the scale of a vector along one axis. Encode's is never
	// larger: a float32 squared is exact in a float64, so |v| ≥ max |v_i|.
	maxScale = float32(1.0 / 127)
)

// Encode quantises v to int8 with one float32 scale (max |v_i| / 127) and
// returns the stored form: a version byte (1), the scale (float32, little
// endian), then one int8 per dimension. Vectors are normalised to unit
// length first, so a stored vector's dot product is its cosine.
//
// A vector with no direction (all zeros, or a NaN or infinite component)
// is stored as zeros with a zero scale: it has a cosine of 0 with
// everything, and what is stored always decodes.
func Encode(v []float32) []byte {
	out := make([]byte, headerLen+len(v))
	out[0] = version
	maxAbs, norm, ok := direction(v)
	if !ok {
		return out
	}
	binary.LittleEndian.PutUint32(out[1:], math.Float32bits(float32(maxAbs/norm/127)))
	// Rounding v_i·127/max directly, not v_i/|v|/scale, keeps the largest
	// component at exactly ±127 whatever the float32 scale rounds to.
	inv := 127 / maxAbs
	for i, f := range v {
		out[headerLen+i] = byte(int8(min(max(math.Round(float64(f)*inv), -127), 127)))
	}
	return out
}

// direction is v's largest absolute component and its length; ok is
// false when v has no direction (zero, NaN or infinite).
func direction(v []float32) (maxAbs, norm float64, ok bool) {
	var sum float64
	for _, f := range v {
		a := math.Abs(float64(f))
		sum += a * a
		maxAbs = max(maxAbs, a)
	}
	norm = math.Sqrt(sum)
	ok = norm > 0 && !math.IsInf(norm, 0) && !math.IsNaN(maxAbs)
	return maxAbs, norm, ok
}

// Decode reads Encode's form back (approximately v/|v|); a wrong version,
// a short or odd blob, a NaN/Inf scale is an error naming what is wrong.
// Odd means what Encode never writes: a negative scale or one above 1/127
// (a unit vector's components are at most 1), a component of -128, more
// than MaxDims components.
func Decode(b []byte) ([]float32, error) {
	n, err := Dims(b)
	if err != nil {
		return nil, err
	}
	scale := scaleOf(b)
	out := make([]float32, n)
	for i, c := range b[headerLen:] {
		out[i] = scale * float32(int8(c))
	}
	return out, nil
}

// Dims is the dimension count of an encoded vector, or an error as
// Decode's.
func Dims(b []byte) (int, error) {
	if len(b) < headerLen {
		return 0, fmt.Errorf("vectors: blob of %d bytes is shorter than the %d-byte header", len(b), headerLen)
	}
	if b[0] != version {
		return 0, fmt.Errorf("vectors: version %d, want %d", b[0], version)
	}
	scale := scaleOf(b)
	switch {
	case math.IsNaN(float64(scale)):
		return 0, fmt.Errorf("vectors: scale is NaN")
	case math.IsInf(float64(scale), 0):
		return 0, fmt.Errorf("vectors: scale is infinite")
	case scale < 0:
		return 0, fmt.Errorf("vectors: scale %g is negative", scale)
	case scale > maxScale:
		return 0, fmt.Errorf("vectors: scale %g is above 1/127, a unit vector's largest", scale)
	}
	n := len(b) - headerLen
	if n > MaxDims {
		return 0, fmt.Errorf("vectors: %d dimensions, more than the %d allowed", n, MaxDims)
	}
	for i, c := range b[headerLen:] {
		// -128 has no positive counterpart: Encode never writes it.
		if int8(c) == math.MinInt8 {
			return 0, fmt.Errorf("vectors: component %d is -128, outside ±127", i)
		}
	}
	return n, nil
}

// scaleOf reads the scale of a blob whose header is known to be there.
func scaleOf(b []byte) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[1:headerLen]))
}
