package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/parleybot/parley/core"

	lru "github.com/hashicorp/golang-lru/v2"
)

// stack returns the layers above the turn's messages (L0–L4). A record's
// stack is built at its first turn and kept, so that every turn of the
// record sees the same instructions, facts and summaries (and a model's
// prompt cache stays warm); only L5, the messages, moves on. The system
// prompt is rendered per turn with the turn's notes (systemPrompt): a
// cached copy beside the layers would cost every active conversation
// another few kilobytes.
func (p *prompter) stack(ctx context.Context, t *core.Turn) ([]core.PromptLayer, error) {
	if t.Record.Prompt != "" {
		if c, ok := p.records.get(t.Record.ID); ok && c.layers != nil && c.rec.Prompt == t.Record.Prompt {
			return c.layers, nil
		}
		layers, err := decodeLayers(t.Record.Prompt)
		if err != nil {
			return nil, err
		}
		p.records.put(t.Record, layers)
		return layers, nil
	}
	layers, err := core.StackLayers(ctx, p.cfg.Plugins, t)
	if err != nil {
		return nil, err
	}
	if t.Record.ID == 0 {
		return layers, nil
	}
	enc, err := json.Marshal(layers)
	if err != nil {
		return nil, fmt.Errorf("encoding the prompt stack: %w", err)
	}
	kept, err := p.cfg.Store.FreezePrompt(ctx, t.Record.ID, string(enc))
	if errors.Is(err, core.ErrStoreUnavailable) {
		// The record's next turn freezes it; this one need not fail for
		// a full disk.
		p.log.Warn("the store cannot keep the session's prompt stack now; the turn goes on with it unkept",
			"record", t.Record.ID, "err", err)
		return layers, nil
	}
	if err != nil {
		return nil, err
	}
	if kept != string(enc) {
		// Another process built this record's first turn at the same moment.
		if layers, err = decodeLayers(kept); err != nil {
			return nil, err
		}
	}
	t.Record.Prompt = kept
	p.records.put(t.Record, layers)
	return layers, nil
}

func decodeLayers(s string) ([]core.PromptLayer, error) {
	var layers []core.PromptLayer
	if err := json.Unmarshal([]byte(s), &layers); err != nil {
		return nil, fmt.Errorf("decoding the session record's prompt stack: %w", err)
	}
	return layers, nil
}

// window is L5: the messages of the turn's session record, newest last,
// at most WindowMessages of them and about WindowTokens, dropping the
// oldest first. The newest message is always kept.
func (p *prompter) window(t *core.Turn) []core.Message {
	msgs := t.History
	if t.Record.ID != 0 {
		i := len(msgs)
		for i > 0 && msgs[i-1].SessionRecordID != nil && *msgs[i-1].SessionRecordID == t.Record.ID {
			i--
		}
		msgs = msgs[i:]
	}
	if n := p.cfg.Session.WindowMessages; len(msgs) > n {
		msgs = msgs[len(msgs)-n:]
	}
	budget := p.cfg.Session.WindowTokens
	i := len(msgs)
	for i > 0 {
		cost := core.EstimateTokens(msgs[i-1].Content)
		if i < len(msgs) && cost > budget {
			break
		}
		budget -= cost
		i--
	}
	return msgs[i:]
}

// sessionRecord loads a turn's record. A record whose stack is frozen is
// kept in memory: what a turn reads of it (start, stack) never changes,
// and on SQLite a read after a write costs more than the whole turn's SQL.
func (p *prompter) sessionRecord(ctx context.Context, id int64) (core.SessionRecord, error) {
	if c, ok := p.records.get(id); ok {
		return c.rec, nil
	}
	r, err := p.cfg.Store.SessionRecord(ctx, id)
	if err != nil {
		return core.SessionRecord{}, err
	}
	return r, nil
}

// recordCache holds session records whose stack is frozen, by id, with
// the stack decoded; the least recently used goes first.
type recordCache struct {
	m *lru.Cache[int64, cachedRecord]
}

type cachedRecord struct {
	rec    core.SessionRecord
	layers []core.PromptLayer
}

func newRecordCache(size int) *recordCache {
	// New fails only on a size below one.
	m, _ := lru.New[int64, cachedRecord](max(size, 1))
	return &recordCache{m: m}
}

func (c *recordCache) get(id int64) (cachedRecord, bool) {
	return c.m.Get(id)
}

// put keeps r if its stack is frozen; a full cache lets the least
// recently used record go (records of active conversations come back at
// their next turn).
func (c *recordCache) put(r core.SessionRecord, layers []core.PromptLayer) {
	if r.Prompt == "" || r.ID == 0 {
		return
	}
	c.m.Add(r.ID, cachedRecord{rec: r, layers: layers})
}
