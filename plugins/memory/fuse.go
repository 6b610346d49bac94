package memory

import (
	"context"
	"slices"
	"time"

	"github.com/parleybot/parley/core"
)

const (
	// fusedCandidates is how many messages each of the words' and the
	// meaning's rankings gives to the fusion.
	fusedCandidates = 30
	// rrfK damps the weight of a rank in reciprocal-rank fusion: 60 is
	// the value of the paper that introduced it, and of most systems
	// since; a message both searches rank high comes first.
	rrfK = 60
	// historyMinScore is the least cosine similarity a message found by
	// meaning alone needs: below it, what is found is not related.
	historyMinScore = 0.3
)

func historyDescription(meaning bool) string {
	if meaning {
		return "Search everything you and this person said before, by words and by meaning (any language): \"my sister's wedding\" finds \"Ana is getting married\". Returns up to 10 messages, most related first, with their dates and record ids."
	}
	return "Search everything you and this person said before for a word or phrase (any language). Returns up to 10 messages, newest first, with their record ids."
}

// found is one message retrieve_history returns.
type found struct {
	ID       int64
	RecordID *int64
	At       time.Time
	From     string
	Text     string
	score    float64
}

// fuse ranks the messages the words found (newest first) together with
// those the meaning finds, by reciprocal-rank fusion, and keeps the
// first historyResults. Without embeddings, or when they fail, it is
// the words' ranking alone.
func (p *Plugin) fuse(ctx context.Context, conv int64, query string, byWords []core.Message) []found {
	byID := map[int64]*found{}
	var all []*found
	add := func(f found, rank int) {
		if f.From == "" {
			return
		}
		g, ok := byID[f.ID]
		if !ok {
			g = &f
			byID[f.ID], all = g, append(all, g)
		}
		g.score += 1 / float64(rrfK+rank+1)
	}
	for i, m := range byWords {
		add(found{ID: m.ID, RecordID: m.SessionRecordID, At: m.CreatedAt, From: speaker(m), Text: m.Content}, i)
	}
	if p.meaning != nil {
		near, err := p.meaning.search(ctx, conv, query, fusedCandidates, historyMinScore)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("memory: retrieve_history searched by words only: the search by meaning failed", "err", err)
		}
		rank := 0
		for _, r := range near {
			if r.MessageID == 0 || r.Source == core.SourceCommand {
				continue
			}
			add(found{ID: r.MessageID, RecordID: r.RecordID, At: r.At, From: speaker(core.Message{Role: r.Role}), Text: r.Text}, rank)
			rank++
		}
	}
	// Stable: equal scores keep the words' order, newest first.
	slices.SortStableFunc(all, func(a, b *found) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	out := make([]found, 0, min(len(all), historyResults))
	for _, f := range all[:min(len(all), historyResults)] {
		out = append(out, *f)
	}
	return out
}
