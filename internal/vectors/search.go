package vectors

import (
	"fmt"
	"slices"
)

// Hit is one vector a search found: its id and its cosine similarity to
// the query.
type Hit struct {
	ID    int64
	Score float32
}

const (
	// exactLimit is the largest index scanned exactly: below it the sign
	// pass would save less than half a millisecond.
	exactLimit = 4096
	// minCandidates is the fewest vectors the sign pass keeps.
	minCandidates = 1024
	// candidateShare is the share of the index, 1/candidateShare, that the
	// sign pass keeps for exact rescoring. Measured against the exact scan
	// (recall@10, 200 queries, 256 dimensions): clustered data as in
	// TestSearchRecallClustered loses nothing down to 512 candidates of
	// 100,000; 10 members to a cluster, 0.99 at 1/16 and 0.995 at 1/8;
	// no structure at all (TestSignPassWithoutStructure), 0.88-0.91 at
	// 1/16 and 0.95-0.96 at 1/8. Rescoring scattered vectors costs about
	// 250 ns each at 256 dimensions, so 1/8 would double the search time.
	candidateShare = 16
)

// Search returns up to k vectors whose cosine similarity to q is at least
// min, most similar first (ties by larger id first). q need not be
// normalised; a q of another length is an error.
//
// Up to exactLimit vectors are all scored exactly. Above it a first pass
// ranks every vector by the Hamming distance of its sign code to the
// query's, and only the nearest share is scored exactly.
func (x *Index) Search(q []float32, k int, min float32) ([]Hit, error) {
	if len(q) != x.dims {
		return nil, fmt.Errorf("vectors: query of %d dimensions, the index holds %d", len(q), x.dims)
	}
	qc := make([]int32, x.dims)
	qs, err := quantise(q, qc)
	if err != nil {
		return nil, err
	}
	if k <= 0 {
		return nil, nil
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := len(x.ids)
	t := newTop(k, n, min)
	if n <= exactLimit {
		for i := range n {
			t.offer(x.score(i, qc, qs), x.ids[i])
		}
	} else {
		x.searchSigns(qc, qs, candidates(n, k), &t)
	}
	return t.sorted(), nil
}

// candidates is how many vectors of n the sign pass keeps for a top k.
func candidates(n, k int) int {
	return min(n, max(minCandidates, n/candidateShare, 32*k))
}

// score is vector i's cosine to the quantised query qc of inverse length
// qs.
func (x *Index) score(i int, qc []int32, qs float32) float32 {
	d := dot(qc, x.codes[i*x.dims:(i+1)*x.dims])
	return float32(d) * qs * x.scales[i]
}

// searchSigns scores exactly the keep vectors whose sign codes are nearest
// the query's. The distances are small integers, so a histogram finds the
// cut-off distance in one pass, with no sort; the caller holds mu.
func (x *Index) searchSigns(qc []int32, qs float32, keep int, t *top) {
	n, w := len(x.ids), x.words
	qsign := make([]uint64, w)
	signs(qsign, qc)
	s := x.getScratch(n)
	defer x.scratch.Put(s)
	dist := (*s)[:n]
	hist := make([]int, x.dims+2)
	for i := range dist {
		d := hamming(qsign, x.signs[i*w:(i+1)*w])
		dist[i] = uint16(d)
		hist[d]++
	}
	// Every vector at the cut is kept too, so that the result does not
	// depend on slot order: equal codes may hold equal vectors, whose tie
	// the larger id must win. Only data with many equal codes pays for it.
	cut, kept := 0, hist[0]
	for kept < keep {
		cut++
		kept += hist[cut]
	}
	for i, d := range dist {
		if int(d) <= cut {
			t.offer(x.score(i, qc, qs), x.ids[i])
		}
	}
}

// getScratch returns a pooled buffer for n distances, so that a search of
// 100,000 vectors does not allocate 200 KB each time.
func (x *Index) getScratch(n int) *[]uint16 {
	if s, ok := x.scratch.Get().(*[]uint16); ok && cap(*s) >= n {
		return s
	}
	s := make([]uint16, n)
	return &s
}

// top keeps the k best hits offered at or above min, as a min-heap on
// (score, id) so the worst kept hit is at the root.
type top struct {
	k    int
	min  float32
	hits []Hit
}

// worse orders hits from least to most similar, a smaller id first among
// equal scores, so that the larger id wins a tie.
func worse(a, b Hit) bool {
	return a.Score < b.Score || (a.Score == b.Score && a.ID < b.ID)
}

// newTop keeps the best k of n offered at or above floor.
func newTop(k, n int, floor float32) top {
	return top{k: k, min: floor, hits: make([]Hit, 0, min(k, n))}
}

func (t *top) offer(score float32, id int64) {
	if score < t.min {
		return
	}
	h := Hit{ID: id, Score: score}
	if len(t.hits) < t.k {
		t.hits = append(t.hits, h)
		t.up(len(t.hits) - 1)
		return
	}
	if !worse(t.hits[0], h) {
		return
	}
	t.hits[0] = h
	t.down(0)
}

func (t *top) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(t.hits[i], t.hits[p]) {
			return
		}
		t.hits[i], t.hits[p] = t.hits[p], t.hits[i]
		i = p
	}
}

func (t *top) down(i int) {
	n := len(t.hits)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && worse(t.hits[c+1], t.hits[c]) {
			c++
		}
		if !worse(t.hits[c], t.hits[i]) {
			return
		}
		t.hits[i], t.hits[c] = t.hits[c], t.hits[i]
		i = c
	}
}

// sorted is the kept hits, most similar first.
func (t *top) sorted() []Hit {
	slices.SortFunc(t.hits, func(a, b Hit) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	return t.hits
}
