// Package history keeps the recent messages of active conversations in
// memory, for turns, written through by everything that stores a message.
package history

import (
	"context"
	"sync"
	"time"

	"github.com/parleybot/parley/core"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache keeps the recent window of the most active conversations so
// that a turn does not read its history back from the database: reading is
// costly on SQLite, where every write empties the readers' page caches. The
// cache is written through by this process (the messages it stores) and
// checked against the conversation's LastSeq, so messages another process
// stored are read, and only those. That is sound because stored messages
// are append-only and seq only grows. The least recently used
// conversation goes first; mu guards the entries as well as the LRU, since
// reading and updating an entry are one step. Peek reads an entry, Get
// makes it the most recently used: only where it is used or updated, as
// the hand-written list did.
type Cache struct {
	mu      sync.Mutex
	limit   int
	entries *simplelru.LRU[int64, *historyEntry]
}

type historyEntry struct {
	// created tells a conversation from a later one that reused its id.
	created time.Time
	window  []core.Message
}

// Reader reads what the cache does not hold.
type Reader interface {
	// MessagesAfter returns up to limit of the newest messages with a seq
	// above afterSeq, oldest first.
	MessagesAfter(ctx context.Context, conversationID, afterSeq int64, limit int) ([]core.Message, error)
}

// New returns a cache of the newest limit messages of at most
// maxConversations conversations.
func New(limit, maxConversations int) *Cache {
	// NewLRU fails only on a size below one.
	entries, _ := simplelru.NewLRU[int64, *historyEntry](max(maxConversations, 1), nil)
	return &Cache{limit: limit, entries: entries}
}

// Window returns the conversation's newest limit messages, oldest first. The
// slice is shared: callers must not modify it.
func (h *Cache) Window(ctx context.Context, st Reader, conv core.Conversation) ([]core.Message, error) {
	cached := h.get(conv)
	var after int64
	if n := len(cached); n > 0 {
		after = cached[n-1].Seq
	}
	if after == conv.LastSeq {
		return cached, nil
	}
	fresh, err := st.MessagesAfter(ctx, conv.ID, after, h.limit)
	if err != nil {
		return nil, err
	}
	win := h.join(cached, fresh)
	h.put(conv, win)
	return win, nil
}

// Appended records messages this process just stored (with their seqs), so
// the next turn of the conversation need not read them back. Messages that
// do not directly follow the cached window are left for Window to read.
func (h *Cache) Appended(conv core.Conversation, msgs ...core.Message) {
	if len(msgs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries.Peek(conv.ID)
	if !ok {
		if msgs[0].Seq != 1 {
			return
		}
		// A brand-new conversation: its whole history is msgs.
		h.entries.Add(conv.ID, &historyEntry{created: conv.CreatedAt, window: h.join(nil, msgs)})
		return
	}
	last := int64(0)
	if n := len(e.window); n > 0 {
		last = e.window[n-1].Seq
	}
	if !e.created.Equal(conv.CreatedAt) || msgs[0].Seq != last+1 {
		return
	}
	e.window = h.join(e.window, msgs)
	h.entries.Get(conv.ID) // the most recently used
}

// join appends fresh to cached and keeps the newest limit, in a new slice:
// turns hold on to the windows they were given.
func (h *Cache) join(cached, fresh []core.Message) []core.Message {
	drop := max(0, len(cached)+len(fresh)-h.limit)
	win := make([]core.Message, 0, len(cached)+len(fresh)-drop)
	if drop < len(cached) {
		win = append(win, cached[drop:]...)
		drop = 0
	} else {
		drop -= len(cached)
	}
	win = append(win, fresh[drop:]...)
	for i := range win {
		// The window keeps no file's bytes: the store keeps them until
		// the message is sent, and a turn never reads them.
		win[i].Files = nil
	}
	return win
}

func (h *Cache) get(conv core.Conversation) []core.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries.Peek(conv.ID)
	if !ok || !e.created.Equal(conv.CreatedAt) {
		return nil
	}
	h.entries.Get(conv.ID) // the most recently used
	return e.window
}

func (h *Cache) put(conv core.Conversation, win []core.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e, ok := h.entries.Peek(conv.ID); ok {
		if n := len(e.window); e.created.Equal(conv.CreatedAt) && n > 0 && len(win) > 0 && e.window[n-1].Seq > win[len(win)-1].Seq {
			return // a concurrent writer stored a newer window
		}
		e.created, e.window = conv.CreatedAt, win
		h.entries.Get(conv.ID) // the most recently used
		return
	}
	h.entries.Add(conv.ID, &historyEntry{created: conv.CreatedAt, window: win})
}

// Replaced puts a stored message's new text (a voice note's transcript)
// into the conversation's cached window, in a new slice: turns hold on to
// the windows they were given.
func (h *Cache) Replaced(convID int64, m core.Message) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entries.Peek(convID)
	if !ok {
		return
	}
	for i := range e.window {
		if e.window[i].ID == m.ID {
			win := append([]core.Message(nil), e.window...)
			win[i] = m
			win[i].Files = nil
			e.window = win
			return
		}
	}
}
