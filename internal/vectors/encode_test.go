package vectors

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()
	r := rng(1)
	for _, dims := range []int{1, 3, 64, 256, 1536} {
		for range 50 {
			v := gaussian(r, dims)
			b := Encode(v)
			require.Len(t, b, headerLen+dims)
			require.Equal(t, byte(1), b[0])
			got, err := Decode(b)
			require.NoError(t, err)
			require.Len(t, got, dims)
			require.Greater(t, cosine(v, got), 0.999, "dims %d", dims)
			n, err := Dims(b)
			require.NoError(t, err)
			require.Equal(t, dims, n)
		}
	}
}

func TestEncodeNormalisesAndScales(t *testing.T) {
	t.Parallel()
	v := []float32{3, -4, 0}
	b := Encode(v)
	// Unit vector (0.6, -0.8, 0): the scale is 0.8/127 and -0.8 is -127.
	require.InDelta(t, 0.8/127, math.Float32frombits(binary.LittleEndian.Uint32(b[1:5])), 1e-9)
	require.Equal(t, []int8{95, -127, 0}, []int8{int8(b[5]), int8(b[6]), int8(b[7])}, "0.6/0.8·127 = 95.25")
	got, err := Decode(b)
	require.NoError(t, err)
	require.InDeltaSlice(t, []float32{0.6, -0.8, 0}, got, 0.004)

	scaled := Encode([]float32{300, -400, 0})
	require.Equal(t, b, scaled, "the length of the input does not matter")
}

func TestEncodeWithoutDirection(t *testing.T) {
	t.Parallel()
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	for _, v := range [][]float32{{0, 0, 0}, {1, nan, 2}, {1, inf, 2}, {-inf, 0, 0}, {}} {
		b := Encode(v)
		require.Equal(t, append([]byte{1, 0, 0, 0, 0}, make([]byte, len(v))...), b, "%v", v)
		got, err := Decode(b)
		require.NoError(t, err, "what Encode writes decodes")
		require.Equal(t, make([]float32, len(v)), got)
	}
}

func TestEncodeExtremes(t *testing.T) {
	t.Parallel()
	big := float32(math.MaxFloat32)
	tiny := float32(math.SmallestNonzeroFloat32)
	for _, v := range [][]float32{{big, big, -big}, {tiny, 0, -tiny}, {tiny}, {-big}} {
		got, err := Decode(Encode(v))
		require.NoError(t, err)
		require.Greater(t, cosine(v, got), 0.999, "%v", v)
	}
}

// blob builds a blob by hand: version, scale and components.
func blob(version byte, scale float32, comps ...int8) []byte {
	b := make([]byte, headerLen, headerLen+len(comps))
	b[0] = version
	binary.LittleEndian.PutUint32(b[1:], math.Float32bits(scale))
	for _, c := range comps {
		b = append(b, byte(c))
	}
	return b
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		blob []byte
		want string
	}{
		{"empty", nil, "blob of 0 bytes is shorter than the 5-byte header"},
		{"short", []byte{1, 0, 0, 0}, "blob of 4 bytes is shorter"},
		{"version 0", blob(0, 0.005, 1, 2), "version 0, want 1"},
		{"version 2", blob(2, 0.005, 1, 2), "version 2, want 1"},
		{"NaN scale", blob(1, float32(math.NaN()), 1), "scale is NaN"},
		{"infinite scale", blob(1, float32(math.Inf(1)), 1), "scale is infinite"},
		{"minus infinite scale", blob(1, float32(math.Inf(-1)), 1), "scale is infinite"},
		{"negative scale", blob(1, -0.005, 1), "scale -0.005 is negative"},
		{"scale above 1/127", blob(1, 0.008, 1), "scale 0.008 is above 1/127"},
		{"huge scale", blob(1, math.MaxFloat32, 127), "is above 1/127"},
		{"-128", blob(1, 0.005, 5, -128), "component 1 is -128"},
		{"too long", append(blob(1, 0.005), make([]byte, MaxDims+1)...), "32769 dimensions, more than the 32768 allowed"},
	} {
		_, err := Decode(tc.blob)
		require.ErrorContains(t, err, tc.want, tc.name)
		_, err = Dims(tc.blob)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.Error(t, NewIndex(1).Add(1, tc.blob), tc.name)
	}
	n, err := Dims(append(blob(1, 0.005), make([]byte, MaxDims)...))
	require.NoError(t, err)
	require.Equal(t, MaxDims, n)
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(Encode([]float32{1, -2, 3}))
	f.Add(blob(1, float32(math.NaN()), 1))
	f.Add(blob(1, 0.005, -128))
	f.Add(blob(7, 0.005, 1, 2, 3, 4))
	f.Add(blob(1, 1.0/127, 127, -127))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any blob: an error or a vector of the blob's length.
		if got, err := Decode(b); err == nil {
			require.Len(t, got, len(b)-headerLen)
			for _, f := range got {
				require.False(t, math.IsNaN(float64(f)) || math.IsInf(float64(f), 0))
			}
		}
		// The same bytes read as float32s, NaN and infinities included,
		// survive a round trip at their length.
		v := make([]float32, min(len(b)/4, MaxDims))
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		got, err := Decode(Encode(v))
		require.NoError(t, err)
		require.Len(t, got, len(v))
	})
}
