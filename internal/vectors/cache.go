package vectors

import (
	"container/list"
	"sync"
)

// Cache keeps indexes by key, least recently used evicted first, the sum
// of their Bytes() at most maxBytes (an index larger than that alone is
// not kept). Safe for concurrent use.
//
// It counts each index at the size it had when last put or resized, so
// that what eviction subtracts is exactly what was added. An index is
// measured outside the cache's lock: Bytes never waits on the index, and
// a long Add never holds up other keys' lookups.
type Cache[K comparable] struct {
	mu       sync.Mutex
	maxBytes int
	bytes    int
	order    *list.List // of *entry[K], most recently used at the front
	entries  map[K]*list.Element
}

type entry[K comparable] struct {
	key   K
	index *Index
	bytes int
}

// NewCache returns an empty cache holding at most maxBytes of indexes.
func NewCache[K comparable](maxBytes int) *Cache[K] {
	return &Cache[K]{maxBytes: maxBytes, order: list.New(), entries: make(map[K]*list.Element)}
}

// Get returns key's index and marks it most recently used.
func (c *Cache[K]) Get(key K) (*Index, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry[K]).index, true
}

// Put keeps x under key, most recently used, replacing key's index if
// any, and evicts others to stay within maxBytes. An x larger than
// maxBytes is not kept, and key then holds nothing.
func (c *Cache[K]) Put(key K, x *Index) {
	size := x.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
	if size > c.maxBytes {
		return
	}
	c.entries[key] = c.order.PushFront(&entry[K]{key: key, index: x, bytes: size})
	c.bytes += size
	c.evict()
}

// Resized tells the cache an index it holds grew or shrank (after Add), so
// it can evict to stay within maxBytes.
func (c *Cache[K]) Resized(key K) {
	c.mu.Lock()
	el, ok := c.entries[key]
	c.mu.Unlock()
	if !ok {
		return
	}
	e := el.Value.(*entry[K])
	size := e.index.Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	// The key may have been removed or put anew while unlocked: then the
	// new owner of the key accounts for itself.
	if c.entries[key] != el {
		return
	}
	if size > c.maxBytes {
		c.remove(key)
		return
	}
	c.bytes += size - e.bytes
	e.bytes = size
	c.evict()
}

// Remove drops key's index, if held.
func (c *Cache[K]) Remove(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remove(key)
}

// RemoveIf removes every key for which drop reports true (e.g. all of one
// conversation's keys when its data is erased).
func (c *Cache[K]) RemoveIf(drop func(K) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.entries {
		if drop(key) {
			c.remove(key)
		}
	}
}

// Len is the number of indexes held.
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Bytes is the sum of the held indexes' sizes as last measured.
func (c *Cache[K]) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// remove drops key; the caller holds mu.
func (c *Cache[K]) remove(key K) {
	el, ok := c.entries[key]
	if !ok {
		return
	}
	c.bytes -= el.Value.(*entry[K]).bytes
	c.order.Remove(el)
	delete(c.entries, key)
}

// evict drops least recently used indexes until the sum fits; the caller
// holds mu.
func (c *Cache[K]) evict() {
	for c.bytes > c.maxBytes {
		c.remove(c.order.Back().Value.(*entry[K]).key)
	}
}
