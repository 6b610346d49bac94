package vectors

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// withVectors is an index of n 8-dimension vectors.
func withVectors(t *testing.T, n int) *Index {
	t.Helper()
	x := NewIndex(8)
	for i := range n {
		require.NoError(t, x.Add(int64(i+1), Encode([]float32{1, float32(i), 0, 0, 0, 0, 0, 1})))
	}
	return x
}

// keys is what the cache holds, in no order.
func keys[K comparable](c *Cache[K]) []K {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []K
	for k := range c.entries {
		out = append(out, k)
	}
	return out
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	size := NewIndex(8).Bytes()
	c := NewCache[string](3 * size)
	a, b := NewIndex(8), NewIndex(8)
	c.Put("a", a)
	c.Put("b", b)
	c.Put("c", NewIndex(8))
	got, ok := c.Get("a") // a is now the most recently used, b the least
	require.True(t, ok)
	require.Same(t, a, got)
	c.Put("d", NewIndex(8))
	require.ElementsMatch(t, []string{"a", "c", "d"}, keys(c))
	_, ok = c.Get("b")
	require.False(t, ok)
	c.Put("e", NewIndex(8))
	require.ElementsMatch(t, []string{"a", "d", "e"}, keys(c), "c was next")
	require.Equal(t, 3*size, c.Bytes())
	require.Equal(t, 3, c.Len())
}

func TestCacheStaysWithinItsBytes(t *testing.T) {
	t.Parallel()
	big, small := withVectors(t, 100), withVectors(t, 10)
	c := NewCache[int](big.Bytes() + small.Bytes())
	c.Put(1, small)
	c.Put(2, big)
	require.Equal(t, big.Bytes()+small.Bytes(), c.Bytes())
	c.Put(3, withVectors(t, 5))
	require.ElementsMatch(t, []int{2, 3}, keys(c), "the least recently used goes, however small")
	require.LessOrEqual(t, c.Bytes(), big.Bytes()+small.Bytes())

	huge := withVectors(t, 1000)
	c.Put(2, huge)
	require.ElementsMatch(t, []int{3}, keys(c), "too large alone: not kept, and 2's old index is gone")
	_, ok := c.Get(2)
	require.False(t, ok)

	c.Put(3, small) // replacing counts the new size only
	require.Equal(t, small.Bytes(), c.Bytes())
	c.Remove(3)
	c.Remove(3)
	require.Equal(t, 0, c.Bytes())
	require.Equal(t, 0, c.Len())
}

// grow adds n vectors to x under ids from first on.
func grow(t *testing.T, x *Index, first int64, n int) *Index {
	t.Helper()
	for i := range n {
		require.NoError(t, x.Add(first+int64(i), Encode([]float32{1, 1, 1, 1, 1, 1, 1, float32(i)})))
	}
	return x
}

func TestCacheResized(t *testing.T) {
	t.Parallel()
	a, b := withVectors(t, 10), withVectors(t, 10)
	grown := grow(t, withVectors(t, 10), 100, 40).Bytes()
	c := NewCache[string](grown + b.Bytes()/2) // a grown fits, beside b it does not
	c.Put("a", a)
	c.Put("b", b)
	c.Get("a") // b is the least recently used
	before := c.Bytes()

	grow(t, a, 100, 40)
	require.Equal(t, grown, a.Bytes())
	require.Equal(t, before, c.Bytes(), "the cache counts sizes it was told")
	c.Resized("a")
	require.ElementsMatch(t, []string{"a"}, keys(c), "a grew: b is evicted")
	require.Equal(t, a.Bytes(), c.Bytes())

	for i := range 40 {
		a.Remove(int64(100 + i))
	}
	c.Resized("a")
	require.Equal(t, a.Bytes(), c.Bytes(), "shrinking is counted too")

	grow(t, a, 200, 1000)
	c.Resized("a")
	require.Empty(t, keys(c), "larger than the whole cache: dropped")
	require.Equal(t, 0, c.Bytes())
	c.Resized("nobody") // a key not held is ignored
}

func TestCacheRemoveIf(t *testing.T) {
	t.Parallel()
	c := NewCache[string](1 << 20)
	for _, k := range []string{"conv1/model-a", "conv1/model-b", "conv2/model-a", "conv10/model-a"} {
		c.Put(k, NewIndex(4))
	}
	c.RemoveIf(func(k string) bool { return strings.HasPrefix(k, "conv1/") })
	require.ElementsMatch(t, []string{"conv2/model-a", "conv10/model-a"}, keys(c))
	require.Equal(t, 2*NewIndex(4).Bytes(), c.Bytes())
}

func TestCacheConcurrentUse(t *testing.T) {
	t.Parallel()
	c := NewCache[int](10 * NewIndex(8).Bytes())
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				key := (g*7 + i) % 13
				if x, ok := c.Get(key); ok {
					if err := x.Add(int64(i+1), Encode([]float32{1, 2, 3, 4, 5, 6, 7, 8})); err != nil {
						t.Error(err)
					}
					c.Resized(key)
				} else {
					c.Put(key, NewIndex(8))
				}
				if i%50 == 0 {
					c.RemoveIf(func(k int) bool { return k%5 == g })
				}
			}
		})
	}
	wg.Wait()
	sum := 0
	for _, k := range keys(c) {
		x, _ := c.Get(k)
		sum += x.Bytes()
	}
	require.Equal(t, sum, c.Bytes(), "the count matches what is held")
	require.LessOrEqual(t, c.Bytes(), 10*NewIndex(8).Bytes())
}
