package vectors

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// recallNoise is the length of a vector's offset from its cluster's
// centre, relative to the centre's: members are at cosine 0.8 to their
// centre and 0.64 to each other, a tight topic. At 0.5 (0.89 and 0.8,
// near paraphrases) the int8 rounding alone holds recall near 0.98: the
// 10th and 11th are then often less than 0.0005 apart.
const recallNoise = 0.75

// TestSearchRecallClustered measures Search on 50,000 vectors in 500
// clusters against a float64 brute force over the original vectors: the
// sign pass and the int8 rounding together. Against the exact int8 scan it
// measures the sign pass alone.
func TestSearchRecallClustered(t *testing.T) {
	t.Parallel()
	const n, dims, k = 50000, 256, 10
	c := newClusters(20, 500, dims, recallNoise)
	vs := c.draw(n)
	qs := c.draw(queries)
	x := indexOf(t, vs)
	got := make([][]Hit, queries)
	for i, q := range qs {
		hits, err := x.Search(q, k, -1)
		require.NoError(t, err)
		got[i] = hits
	}
	ref := newBrute(vs)
	toBrute, toExact := make([]float64, queries), make([]float64, queries)
	var wg sync.WaitGroup
	for w := range 4 { // brute force is the slow part, most of all under -race
		wg.Go(func() {
			for i := w; i < queries; i += 4 {
				toBrute[i] = recall(got[i], ref.top(qs[i], k))
				toExact[i] = recall(got[i], x.exact(qs[i], k))
			}
		})
	}
	wg.Wait()
	brute, exact := mean(toBrute), mean(toExact)
	t.Logf("recall@10 over %d queries: %.4f against float brute force, %.4f against the exact int8 scan", queries, brute, exact)
	require.GreaterOrEqual(t, brute, 0.98)
	require.GreaterOrEqual(t, exact, 0.995)
}

// TestSignPassWithoutStructure is the sign pass's worst case: vectors with
// no clusters, whose top 10 are only weakly similar to the query (cosine
// about 0.25), so their Hamming distances hide among everyone's. It pins
// the recall measured when candidateShare was chosen.
func TestSignPassWithoutStructure(t *testing.T) {
	t.Parallel()
	const n, dims, k = 50000, 256, 10
	r := rng(21)
	x := NewIndex(dims)
	for i := range n {
		require.NoError(t, x.Add(int64(i+1), Encode(gaussian(r, dims))))
	}
	toExact := make([]float64, queries/4)
	for i := range toExact {
		q := gaussian(r, dims)
		hits, err := x.Search(q, k, -1)
		require.NoError(t, err)
		toExact[i] = recall(hits, x.exact(q, k))
	}
	got := mean(toExact)
	t.Logf("recall@10 over %d queries against the exact int8 scan: %.4f", len(toExact), got)
	require.GreaterOrEqual(t, got, 0.85)
}

// exact is the top k of a scan of every stored vector.
func (x *Index) exact(q []float32, k int) []Hit {
	qc := make([]int32, x.dims)
	qs, _ := quantise(q, qc)
	x.mu.RLock()
	defer x.mu.RUnlock()
	t := top{k: k, min: -2}
	for i := range x.ids {
		t.offer(x.score(i, qc, qs), x.ids[i])
	}
	return t.sorted()
}

func mean(fs []float64) float64 {
	var s float64
	for _, f := range fs {
		s += f
	}
	return s / float64(len(fs))
}
