package core

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// historyCache keeps the recent window of the most active conversations so
// that a turn reads only the messages stored since its conversation's last
// turn instead of the whole window (reading fifty rows was a third of a
// turn's cost). It is safe across processes because stored messages are
// append-only and seq only grows: whatever another process appended has a
// higher seq and is read on the next turn.
type historyCache struct {
	mu      sync.Mutex
	limit   int
	max     int
	entries map[int64]*list.Element
	lru     *list.List
}

type historyEntry struct {
	convID int64
	// created tells a conversation from a later one that reused its id.
	created time.Time
	window  []Message
}

func newHistoryCache(limit, maxConversations int) *historyCache {
	return &historyCache{limit: limit, max: maxConversations, entries: map[int64]*list.Element{}, lru: list.New()}
}

// window returns the conversation's newest limit messages, oldest first.
func (h *historyCache) window(ctx context.Context, st Store, conv Conversation) ([]Message, error) {
	h.mu.Lock()
	var cached []Message
	if el, ok := h.entries[conv.ID]; ok {
		e := el.Value.(*historyEntry)
		if e.created.Equal(conv.CreatedAt) {
			cached = e.window
			h.lru.MoveToFront(el)
		}
	}
	h.mu.Unlock()

	var after int64
	if n := len(cached); n > 0 {
		after = cached[n-1].Seq
	}
	fresh, err := st.MessagesAfter(ctx, conv.ID, after, h.limit)
	if err != nil {
		return nil, err
	}
	// A new slice every time: turns hold on to the windows they were given.
	keep := max(0, len(cached)+len(fresh)-h.limit)
	win := make([]Message, 0, len(cached)+len(fresh)-keep)
	if keep < len(cached) {
		win = append(win, cached[keep:]...)
		keep = 0
	} else {
		keep -= len(cached)
	}
	win = append(win, fresh[keep:]...)
	h.put(conv, win)
	return win, nil
}

func (h *historyCache) put(conv Conversation, win []Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if el, ok := h.entries[conv.ID]; ok {
		e := el.Value.(*historyEntry)
		if n := len(e.window); e.created.Equal(conv.CreatedAt) && n > 0 && len(win) > 0 && e.window[n-1].Seq > win[len(win)-1].Seq {
			return // a concurrent reader stored a newer window
		}
		e.created, e.window = conv.CreatedAt, win
		h.lru.MoveToFront(el)
		return
	}
	h.entries[conv.ID] = h.lru.PushFront(&historyEntry{convID: conv.ID, created: conv.CreatedAt, window: win})
	for h.lru.Len() > h.max {
		last := h.lru.Back()
		h.lru.Remove(last)
		delete(h.entries, last.Value.(*historyEntry).convID)
	}
}
