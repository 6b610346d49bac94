package vectors

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// rng is a deterministic source, so a failure reproduces.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// gaussian is a vector of standard normal components.
func gaussian(r *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// unit scales v to length 1 in place and returns it.
func unit(v []float32) []float32 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	n := float32(math.Sqrt(s))
	for i := range v {
		v[i] /= n
	}
	return v
}

// clusters is a set of unit centres; near draws a point around one of them
// with noise of the given length relative to the centre's.
type clusters struct {
	r       *rand.Rand
	centres [][]float32
	noise   float64
}

func newClusters(seed uint64, count, dims int, noise float64) *clusters {
	c := &clusters{r: rng(seed), noise: noise}
	for range count {
		c.centres = append(c.centres, unit(gaussian(c.r, dims)))
	}
	return c
}

func (c *clusters) near() []float32 {
	centre := c.centres[c.r.IntN(len(c.centres))]
	v := gaussian(c.r, len(centre))
	s := float32(c.noise / math.Sqrt(float64(len(centre))))
	for i := range v {
		v[i] = centre[i] + s*v[i]
	}
	return v
}

func (c *clusters) draw(n int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = c.near()
	}
	return out
}

// cosine in float64, the reference the search is measured against.
func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

// brute is the reference search: float64 cosine over every vector.
type brute struct{ units [][]float32 }

// newBrute keeps unit copies of vs, which are ids 1..n.
func newBrute(vs [][]float32) *brute {
	b := &brute{units: make([][]float32, len(vs))}
	for i, v := range vs {
		b.units[i] = unit(slices.Clone(v))
	}
	return b
}

// top is the k vectors most similar to q, most similar first, ties by
// larger id; kept by insertion, apart from the index's heap.
func (b *brute) top(q []float32, k int) []Hit {
	u := unit(slices.Clone(q))
	best := make([]Hit, 0, k+1)
	scores := make([]float64, 0, k+1)
	for i, v := range b.units {
		var s float64
		for j, f := range v {
			s += float64(f) * float64(u[j])
		}
		at := len(best)
		for at > 0 && scores[at-1] <= s { // later ids are larger: they win ties
			at--
		}
		if at >= k {
			continue
		}
		best = slices.Insert(best, at, Hit{ID: int64(i + 1), Score: float32(s)})
		scores = slices.Insert(scores, at, s)
		best, scores = best[:min(len(best), k)], scores[:min(len(scores), k)]
	}
	return best
}

// bruteForce is newBrute(vs).top(q, k), for small sets.
func bruteForce(vs [][]float32, q []float32, k int) []Hit { return newBrute(vs).top(q, k) }

// indexOf encodes vs under ids 1..n.
func indexOf(t testing.TB, vs [][]float32) *Index {
	t.Helper()
	x := NewIndex(len(vs[0]))
	for i, v := range vs {
		require.NoError(t, x.Add(int64(i+1), Encode(v)))
	}
	return x
}

// recall is the share of want's ids that got holds.
func recall(got, want []Hit) float64 {
	if len(want) == 0 {
		return 1
	}
	found := 0
	for _, w := range want {
		if slices.ContainsFunc(got, func(h Hit) bool { return h.ID == w.ID }) {
			found++
		}
	}
	return float64(found) / float64(len(want))
}

func ids(hits []Hit) []int64 {
	out := make([]int64, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func scores(hits []Hit) []float32 {
	out := make([]float32, len(hits))
	for i, h := range hits {
		out[i] = h.Score
	}
	return out
}

func sqrt32(f float32) float32 { return float32(math.Sqrt(float64(f))) }

// orthogonal is v less its component along the unit u, made unit.
func orthogonal(v, u []float32) []float32 {
	var d float32
	for i := range v {
		d += v[i] * u[i]
	}
	for i := range v {
		v[i] -= d * u[i]
	}
	return unit(v)
}
