package vectors

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// decoded is the vectors as the index holds them, for a brute force that
// sees what the index sees.
func decoded(t *testing.T, vs [][]float32) [][]float32 {
	out := make([][]float32, len(vs))
	for i, v := range vs {
		d, err := Decode(Encode(v))
		require.NoError(t, err)
		out[i] = d
	}
	return out
}

func TestSearchSmallMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := rng(10)
	vs := make([][]float32, 300)
	for i := range vs {
		vs[i] = gaussian(r, 256)
	}
	x := indexOf(t, vs)
	stored := decoded(t, vs)
	for range 20 {
		q := gaussian(r, 256)
		got, err := x.Search(q, 10, -1)
		require.NoError(t, err)
		// Against the stored vectors the order is exact ...
		want := bruteForce(stored, q, 10)
		require.Equal(t, ids(want), ids(got))
		for i := range got {
			require.InDelta(t, want[i].Score, got[i].Score, 1e-4)
		}
		// ... and against the originals each rank is within the rounding.
		orig := bruteForce(vs, q, 10)
		for i := range got {
			require.InDelta(t, orig[i].Score, got[i].Score, 0.003)
		}
	}
}

// TestSearchOrdersGradedNeighbours ranks vectors made at known, well
// separated cosines to the query, so any misordering is a bug and not
// rounding.
func TestSearchOrdersGradedNeighbours(t *testing.T) {
	t.Parallel()
	r := rng(11)
	q := unit(gaussian(r, 128))
	x := NewIndex(128)
	var want []int64
	for i := range 40 {
		// cos = 0.98 - 0.02·i, with the rest orthogonal to q.
		c := 0.98 - 0.02*float32(i)
		o := orthogonal(gaussian(r, 128), q)
		v := make([]float32, 128)
		for j := range v {
			v[j] = c*q[j] + sqrt32(1-c*c)*o[j]
		}
		id := int64(1000 - 7*i) // ids not in score order
		require.NoError(t, x.Add(id, Encode(v)))
		want = append(want, id)
	}
	got, err := x.Search(q, 40, -1)
	require.NoError(t, err)
	require.Equal(t, want, ids(got))
	require.InDelta(t, 0.98, got[0].Score, 0.003)
	require.InDelta(t, 0.2, got[39].Score, 0.003)
}

func TestSearchMinAndK(t *testing.T) {
	t.Parallel()
	q := []float32{1, 0, 0}
	x := NewIndex(3)
	for id, v := range map[int64][]float32{1: {1, 0, 0}, 2: {1, 1, 0}, 3: {0, 1, 0}, 4: {-1, 0, 0}} {
		require.NoError(t, x.Add(id, Encode(v)))
	}
	all, err := x.Search(q, 10, -1)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2, 3, 4}, ids(all))
	require.InDeltaSlice(t, []float32{1, 0.7071, 0, -1}, scores(all), 0.001)

	got, err := x.Search(q, 10, 0.5)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(got))
	got, err = x.Search(q, 10, all[1].Score)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(got), "a score equal to min is kept")
	got, err = x.Search(q, 10, 1.01)
	require.NoError(t, err)
	require.Empty(t, got)

	got, err = x.Search(q, 2, -1)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, ids(got))
	got, err = x.Search(q, 0, -1)
	require.NoError(t, err)
	require.Empty(t, got)
}

func TestSearchTiesPutTheLargerIDFirst(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10, exactLimit + 500} { // both the exact scan and the sign pass
		x := NewIndex(4)
		for id := range int64(n) {
			v := []float32{1, 1, 0, 0}
			if id%3 == 0 {
				v = []float32{1, 1, 0, 0.5}
			}
			require.NoError(t, x.Add(id+1, Encode(v)))
		}
		got, err := x.Search([]float32{1, 1, 0, 0}, 5, -1)
		require.NoError(t, err)
		last := int64(n)
		for last%3 == 1 { // ids 1, 4, 7 … hold the other vector
			last--
		}
		var want []int64
		for id := last; len(want) < 5; id-- {
			if id%3 != 1 {
				want = append(want, id)
			}
		}
		require.Equal(t, want, ids(got), "n=%d", n)
	}
}
