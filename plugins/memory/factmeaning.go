package memory

import (
	"context"
	"math"

	"github.com/parleybot/parley/core"
)

// sameFactScore is the least cosine similarity at which a new fact is the
// same as a known one said otherwise ("lives in Lyon", "moved to Lyon"):
// the newer wording replaces the older. Two different facts about one
// thing ("likes tea", "likes coffee") stay below it.
const sameFactScore = 0.85

// sameAs maps each new fact to the key of the known fact it restates,
// by meaning; facts with none are absent. Without embeddings, or when
// they fail (the new facts are then added as they are), it is empty.
func (e *engine) sameAs(ctx context.Context, known []core.Fact, fresh []string) map[int]string {
	m := e.p.meaning
	if m == nil || len(known) == 0 || len(fresh) == 0 {
		return nil
	}
	texts := make([]string, 0, len(known)+len(fresh))
	for _, f := range known {
		texts = append(texts, f.Content)
	}
	texts = append(texts, fresh...)
	vecs, err := m.emb.Embed(ctx, texts)
	if err != nil || len(vecs) != len(texts) {
		if ctx.Err() == nil {
			e.log.Warn("memory: new facts added without looking for known ones said otherwise: embedding them failed", "err", err)
		}
		return nil
	}
	out := map[int]string{}
	for i := range fresh {
		v := vecs[len(known)+i]
		best, key := float32(sameFactScore), ""
		for j, f := range known {
			if s := cosine(v, vecs[j]); s >= best {
				best, key = s, f.Key
			}
		}
		if key != "" {
			out[i] = key
		}
	}
	return out
}

// cosine is the cosine similarity of a and b (0 when either is zero or
// their lengths differ).
func cosine(a, b []float32) float32 {
	if len(a) != len(b) {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return float32(dot / (math.Sqrt(na) * math.Sqrt(nb)))
}
