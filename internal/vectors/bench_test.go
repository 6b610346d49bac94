package vectors

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// BenchmarkSearch is one query as the caller makes it: the conversation's
// index from the cache, then the top 10. Besides ns/op it reports the 95th
// percentile of the per-query times and the index's bytes per vector.
func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c := newClusters(30, 500, 256, recallNoise)
			x := NewIndex(256)
			for i, v := range c.draw(n) {
				if err := x.Add(int64(i+1), Encode(v)); err != nil {
					b.Fatal(err)
				}
			}
			cache := NewCache[int64](1 << 30)
			cache.Put(42, x)
			queries := c.draw(256)
			var took []time.Duration
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				x, _ := cache.Get(42)
				if _, err := x.Search(queries[len(took)%len(queries)], 10, 0.3); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*95/100].Nanoseconds()), "p95-ns")
			b.ReportMetric(float64(x.Bytes())/float64(n), "bytes/vector")
		})
	}
}

// BenchmarkAdd adds encoded vectors to a growing index.
func BenchmarkAdd(b *testing.B) {
	r := rng(31)
	blobs := make([][]byte, 4096)
	for i := range blobs {
		blobs[i] = Encode(gaussian(r, 256))
	}
	x := NewIndex(256)
	id := int64(0)
	for b.Loop() {
		id++
		if err := x.Add(id, blobs[id%int64(len(blobs))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(x.Bytes())/float64(x.Len()), "bytes/vector")
}

// BenchmarkEncode is what the writer pays per message embedding.
func BenchmarkEncode(b *testing.B) {
	v := gaussian(rng(32), 256)
	for b.Loop() {
		Encode(v)
	}
}

// BenchmarkDot is the exact rescoring of one 256-dimension vector.
func BenchmarkDot(b *testing.B) {
	r := rng(33)
	q := make([]int32, 256)
	quantise(gaussian(r, 256), q)
	code := make([]int8, 256)
	for i := range code {
		code[i] = int8(r.IntN(255) - 127)
	}
	var sum int32
	for b.Loop() {
		sum += dot(q, code)
	}
	_ = sum
}
