package vectors

import (
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAddReplacesAnID(t *testing.T) {
	t.Parallel()
	r := rng(2)
	a, b := gaussian(r, 64), gaussian(r, 64)
	x := NewIndex(64)
	require.NoError(t, x.Add(7, Encode(a)))
	require.NoError(t, x.Add(7, Encode(b)))
	require.Equal(t, 1, x.Len())

	hits, err := x.Search(b, 5, -1)
	require.NoError(t, err)
	require.Len(t, hits, 1)
	require.Equal(t, int64(7), hits[0].ID)
	require.InDelta(t, 1, hits[0].Score, 1e-4, "a vector's score against itself (the query has 16 bits)")

	hits, err = x.Search(a, 5, -1)
	require.NoError(t, err)
	require.InDelta(t, cosine(a, b), hits[0].Score, 0.005, "id 7 holds b, not a")
}

func TestRemove(t *testing.T) {
	t.Parallel()
	r := rng(3)
	vs := [][]float32{gaussian(r, 32), gaussian(r, 32), gaussian(r, 32), gaussian(r, 32)}
	x := indexOf(t, vs) // ids 1..4
	x.Remove(2)
	x.Remove(2)
	x.Remove(99)
	require.Equal(t, 3, x.Len())
	require.Equal(t, int64(4), x.MaxID())
	// The last vector moved into the removed slot: each is still itself.
	for _, id := range []int64{1, 3, 4} {
		hits, err := x.Search(vs[id-1], 1, -1)
		require.NoError(t, err)
		require.Equal(t, []Hit{{ID: id, Score: hits[0].Score}}, hits)
		require.InDelta(t, 1, hits[0].Score, 1e-4)
	}
	hits, err := x.Search(vs[1], 10, -1)
	require.NoError(t, err)
	require.ElementsMatch(t, []int64{1, 3, 4}, ids(hits))
	for _, id := range []int64{1, 3, 4} {
		x.Remove(id)
	}
	require.Equal(t, 0, x.Len())
	hits, err = x.Search(vs[0], 10, -1)
	require.NoError(t, err)
	require.Empty(t, hits)
}

func TestMaxID(t *testing.T) {
	t.Parallel()
	x := NewIndex(2)
	require.Equal(t, int64(0), x.MaxID())
	for _, id := range []int64{5, 90, 12} {
		require.NoError(t, x.Add(id, Encode([]float32{1, 2})))
	}
	x.Remove(90)
	require.Equal(t, int64(90), x.MaxID(), "ever added: rows up to 90 were loaded")
}

func TestWrongLengths(t *testing.T) {
	t.Parallel()
	x := NewIndex(3)
	require.ErrorContains(t, x.Add(1, Encode([]float32{1, 2})), "vector of 2 dimensions, the index holds 3")
	require.ErrorContains(t, x.Add(1, []byte{1, 2}), "shorter than the 5-byte header")
	require.Equal(t, 0, x.Len())
	require.Equal(t, int64(0), x.MaxID(), "a refused vector is not counted as loaded")
	_, err := x.Search([]float32{1, 2, 3, 4}, 3, 0)
	require.ErrorContains(t, err, "query of 4 dimensions, the index holds 3")
	_, err = x.Search([]float32{0, 0, 0}, 3, 0)
	require.ErrorContains(t, err, "query is zero or not finite")
	require.Panics(t, func() { NewIndex(-1) })
	require.Panics(t, func() { NewIndex(MaxDims + 1) })
}

func TestBytesFollowsGrowthAndShrinks(t *testing.T) {
	t.Parallel()
	r := rng(4)
	x := NewIndex(256)
	empty := x.Bytes()
	for i := range 2000 {
		require.NoError(t, x.Add(int64(i+1), Encode(gaussian(r, 256))))
	}
	full := x.Bytes()
	perVector := float64(full-empty) / 2000
	require.Greater(t, perVector, 256.0+4+8+32, "at least the slab, scale, id and sign code")
	require.Less(t, perVector, 2*(256.0+4+8+32+mapEntryBytes), "at most doubled capacity")
	for i := range 1900 {
		x.Remove(int64(i + 1))
	}
	require.Less(t, x.Bytes(), full/5, "a mostly emptied index gives its memory back")
	// What is left is intact.
	require.Equal(t, 100, x.Len())
	hits, err := x.Search(gaussian(r, 256), 200, -1)
	require.NoError(t, err)
	require.Len(t, hits, 100)
	for _, h := range hits {
		require.Greater(t, h.ID, int64(1900))
	}
}

// TestBytesMatchesTheHeap checks Bytes against what the runtime sees. Not
// parallel: other tests' allocations would blur the heap figures.
func TestBytesMatchesTheHeap(t *testing.T) {
	r := rng(5)
	blobs := make([][]byte, 20000)
	for i := range blobs {
		blobs[i] = Encode(gaussian(r, 256))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	x := NewIndex(256)
	for i, b := range blobs {
		require.NoError(t, x.Add(int64(i+1), b))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	heap := float64(after.HeapAlloc - before.HeapAlloc)
	t.Logf("Bytes %d, heap %.0f (%.0f and %.0f per vector)", x.Bytes(), heap,
		float64(x.Bytes())/20000, heap/20000)
	require.InEpsilon(t, heap, float64(x.Bytes()), 0.2)
	runtime.KeepAlive(x)
	runtime.KeepAlive(blobs)
}

func TestConcurrentSearchAndAdd(t *testing.T) {
	t.Parallel()
	c := newClusters(6, 20, 64, 0.5)
	x := indexOf(t, c.draw(500))
	queries := c.draw(20)
	extra := c.draw(300)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				hits, err := x.Search(queries[(g+i)%len(queries)], 10, -1)
				if err != nil || len(hits) != 10 {
					t.Errorf("search: %d hits, %v", len(hits), err)
					return
				}
				for j := 1; j < len(hits); j++ {
					if worse(hits[j-1], hits[j]) {
						t.Errorf("hits out of order: %v", hits)
						return
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i, v := range extra {
			if err := x.Add(int64(1000+i), Encode(v)); err != nil {
				t.Error(err)
			}
			if i%3 == 0 {
				x.Remove(int64(1 + i))
			}
			_ = x.Bytes()
		}
	})
	wg.Wait()
	require.Equal(t, 500+300-100, x.Len())
	require.Equal(t, int64(1299), x.MaxID())
}
