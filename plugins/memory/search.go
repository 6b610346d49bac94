package memory

import (
	"context"
	"fmt"

	"github.com/parleybot/parley/internal/vectors"
)

// index is the conversation's search index of the model: loaded once,
// then caught up with the vectors kept since (by any process). nil when
// the conversation has no vectors yet.
func (m *meaning) index(ctx context.Context, conversationID int64) (*vectors.Index, error) {
	select {
	case m.loads <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-m.loads }()
	key := indexKey{conversationID: conversationID, model: m.model}
	x, cached := m.cache.Get(key)
	var after int64
	if cached {
		after = x.MaxID()
	}
	rows, err := m.vs.vectorsAfter(ctx, conversationID, m.model, after)
	if err != nil || len(rows) == 0 {
		return x, err
	}
	if !cached {
		dims, err := vectors.Dims(rows[0].Vec)
		if err != nil {
			return nil, fmt.Errorf("memory: vector %d: %w", rows[0].ID, err)
		}
		x = vectors.NewIndex(dims)
	}
	for _, r := range rows {
		if err := x.Add(r.ID, r.Vec); err != nil {
			return nil, fmt.Errorf("memory: vector %d of conversation %d: %w", r.ID, conversationID, err)
		}
	}
	if cached {
		m.cache.Resized(key)
	} else {
		m.cache.Put(key, x)
	}
	return x, nil
}

// search finds the conversation's messages and summaries nearest in
// meaning to text: up to k with a cosine similarity of at least min,
// nearest first.
func (m *meaning) search(ctx context.Context, conversationID int64, text string, k int, min float32) ([]recalled, error) {
	vecs, err := m.emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, fmt.Errorf("memory: embedding the query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("memory: embedding the query: %d vectors for one text", len(vecs))
	}
	var (
		x    *vectors.Index
		hits []vectors.Hit
	)
	if pv := m.vs.pv; pv != nil {
		hits, err = pv.search(ctx, m.vs.db, conversationID, m.model, vecs[0], k, min)
	} else if x, err = m.index(ctx, conversationID); x != nil {
		hits, err = x.Search(vecs[0], k, min)
	}
	if err != nil {
		return nil, fmt.Errorf("memory: searching by meaning: %w", err)
	}
	ids := make([]int64, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	found, err := m.vs.resolve(ctx, conversationID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]recalled, 0, len(hits))
	for _, h := range hits {
		r, ok := found[h.ID]
		if !ok || r.Text == "" {
			// Deleted since the index loaded it (or a deleted message's
			// emptied text): it is never found again.
			if x != nil {
				x.Remove(h.ID)
			}
			continue
		}
		r.Score = h.Score
		out = append(out, r)
	}
	return out, nil
}
