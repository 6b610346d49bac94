package vectors

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Index is one conversation's vectors of one model, all of one length, in
// memory, for search. Safe for concurrent use (searches concurrent with
// each other; Add/Remove exclusive).
//
// Vector i lives at slot i of parallel slices: its int8 components in one
// slab, its inverse length, its sign code and its id. One slab instead of
// a slice per vector keeps a search a walk forward through memory and
// costs no allocation per vector.
type Index struct {
	mu     sync.RWMutex
	dims   int
	words  int       // uint64s per sign code
	codes  []int8    // dims per vector
	scales []float32 // 1/|code| per vector (see invNorm)
	signs  []uint64  // words per vector
	ids    []int64   // one per vector
	slot   map[int64]int
	maxID  int64

	// bytes is Bytes' answer, kept up to date under mu so that a cache can
	// read it without waiting behind a long Add.
	bytes atomic.Int64
	// scratch holds searches' distance buffers (*[]uint16).
	scratch sync.Pool
}

// Memory accounting beyond the slices' capacities: a Go map spends about
// 16 bytes of key and value, a control byte and unused slots per entry.
const (
	mapEntryBytes = 32
	indexBytes    = 256
)

// NewIndex returns an empty index of vectors of dims dimensions. It panics
// when dims is negative or more than MaxDims: Dims never reports such a
// length, so the caller has a bug.
func NewIndex(dims int) *Index {
	if dims < 0 || dims > MaxDims {
		panic(fmt.Sprintf("vectors: NewIndex(%d): dimensions must be 0 to %d", dims, MaxDims))
	}
	x := &Index{dims: dims, words: (dims + 63) / 64, slot: make(map[int64]int)}
	x.bytes.Store(indexBytes)
	return x
}

// Dims is the length of the index's vectors.
func (x *Index) Dims() int { return x.dims }

// Add puts the encoded vector b under id, replacing id's vector if
// present. A vector of another length is an error.
func (x *Index) Add(id int64, b []byte) error {
	n, err := Dims(b)
	if err != nil {
		return err
	}
	if n != x.dims {
		return fmt.Errorf("vectors: vector of %d dimensions, the index holds %d", n, x.dims)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	i, ok := x.slot[id]
	if !ok {
		i = len(x.ids)
		x.slot[id] = i
		x.ids = append(x.ids, id)
		x.scales = append(x.scales, 0)
		x.codes = append(x.codes, make([]int8, x.dims)...)
		x.signs = append(x.signs, make([]uint64, x.words)...)
	}
	code := x.codes[i*x.dims : (i+1)*x.dims]
	for j, c := range b[headerLen:] {
		code[j] = int8(c)
	}
	x.scales[i] = invNorm(code)
	signs(x.signs[i*x.words:(i+1)*x.words], code)
	x.maxID = max(x.maxID, id)
	x.account()
	return nil
}

// Remove drops id's vector, if present. The last vector moves into its
// slot, so removal costs one vector's copy, not a shift of the slab.
func (x *Index) Remove(id int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	i, ok := x.slot[id]
	if !ok {
		return
	}
	delete(x.slot, id)
	last := len(x.ids) - 1
	if i != last {
		moved := x.ids[last]
		x.ids[i] = moved
		x.scales[i] = x.scales[last]
		copy(x.codes[i*x.dims:(i+1)*x.dims], x.codes[last*x.dims:])
		copy(x.signs[i*x.words:(i+1)*x.words], x.signs[last*x.words:])
		x.slot[moved] = i
	}
	x.ids = x.ids[:last]
	x.scales = x.scales[:last]
	x.codes = x.codes[:last*x.dims]
	x.signs = x.signs[:last*x.words]
	if cap(x.ids) > 64 && len(x.ids) < cap(x.ids)/4 {
		x.shrink()
	}
	x.account()
}

// shrink reallocates the slices at twice their length, and the map, which
// never shrinks by itself, so an index that lost most of its vectors
// gives the memory back to a cache bounded by bytes.
func (x *Index) shrink() {
	x.slot = make(map[int64]int, len(x.ids))
	for i, id := range x.ids {
		x.slot[id] = i
	}
	x.ids = append(make([]int64, 0, 2*len(x.ids)), x.ids...)
	x.scales = append(make([]float32, 0, 2*len(x.scales)), x.scales...)
	x.codes = append(make([]int8, 0, 2*len(x.codes)), x.codes...)
	x.signs = append(make([]uint64, 0, 2*len(x.signs)), x.signs...)
}

// account recomputes Bytes' answer; the caller holds mu for writing.
func (x *Index) account() {
	n := cap(x.codes) + 4*cap(x.scales) + 8*cap(x.signs) + 8*cap(x.ids) +
		mapEntryBytes*len(x.slot) + indexBytes
	x.bytes.Store(int64(n))
}

// Len is the number of vectors held.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.ids)
}

// Bytes is the memory the index holds, for a cache bounded by bytes.
func (x *Index) Bytes() int { return int(x.bytes.Load()) }

// MaxID is the largest id ever added (0 when none): the caller loads only
// rows after it to catch up.
func (x *Index) MaxID() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.maxID
}
