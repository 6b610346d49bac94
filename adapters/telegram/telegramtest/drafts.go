package telegramtest

import (
	"context"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
)

// DraftLifetime is how long Telegram shows a draft that no later draft or
// message replaced: the Bot API calls a draft "a temporary 30-second
// preview".
const DraftLifetime = 30 * time.Second

// Draft is one sendMessageDraft call the fake accepted: a preview the user
// sees while the bot writes, never a message of the chat.
type Draft struct {
	ChatID          int64
	DraftID         int64
	MessageThreadID int
	// Text is the text parameter as the bot sent it; Plain is what the
	// user reads (MarkdownV2 parsed), Entities its styles.
	Text      string
	Plain     string
	ParseMode string
	Entities  []models.MessageEntity
	At        time.Time
}

// draftBook holds what the bot drafted: each private chat's drafts, in
// order, and how many of them a message of the bot has ended.
type draftBook struct {
	drafts map[int64][]Draft
	ended  map[int64]int
}

// draftAPI takes sendMessageDraft (Bot API 9.5) and shows its history.
type draftAPI struct{ *state }

// sendMessageDraft validates like Telegram: a private chat the bot knows,
// a non-zero draft_id, 1-4096 characters of text after entity parsing.
// Descriptions of the refusals not seen in the wild are the fake's own.
func (s *draftAPI) sendMessageDraft(_ context.Context, p params) (any, *Fault) {
	draftID, ok, f := p.int("draft_id")
	switch {
	case f != nil:
		return nil, f
	case !ok || draftID == 0:
		f := badRequest("draft_id must be non-zero")
		return nil, &f
	}
	thread, _, f := p.int("message_thread_id")
	if f != nil {
		return nil, f
	}
	text, parseMode := p["text"], p["parse_mode"]
	plain, ents, f := messageText(text, parseMode)
	if f != nil {
		return nil, f
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, f := s.chatTarget(p)
	if f != nil {
		return nil, f
	}
	if cs.chat.Type != models.ChatTypePrivate {
		// What Telegram answers a draft to a group (seen in bots' issues).
		f := badRequest("TEXTDRAFT_PEER_INVALID")
		return nil, &f
	}
	id := cs.chat.ID
	s.book.drafts[id] = append(s.book.drafts[id], Draft{
		ChatID: id, DraftID: draftID, MessageThreadID: int(thread),
		Text: text, Plain: plain, ParseMode: parseMode, Entities: ents, At: s.now(),
	})
	s.notify()
	return true, nil
}

// Drafts returns the drafts the bot sent to chatID, in order: the history
// of what the user saw grow before a message arrived.
func (s *draftAPI) Drafts(chatID int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Draft(nil), s.book.drafts[chatID]...)
}

// ShownDraft returns the draft the user sees in chatID now: the latest
// one, unless a message of the bot arrived after it or DraftLifetime
// passed on the server's clock (it expired).
func (s *draftAPI) ShownDraft(chatID int64) (Draft, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ds := s.book.drafts[chatID]
	if len(ds) == 0 {
		return Draft{}, false
	}
	d := ds[len(ds)-1]
	if s.book.ended[chatID] >= len(ds) || !s.now().Before(d.At.Add(DraftLifetime)) {
		return Draft{}, false
	}
	return d, true
}

// WaitDrafts waits until the bot has sent at least n drafts to chatID and
// returns them; after timeout it fails the test (call it from the test
// goroutine).
func (s *draftAPI) WaitDrafts(t testing.TB, chatID int64, n int, timeout time.Duration) []Draft {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		got := len(s.book.drafts[chatID])
		changed := s.changed
		s.mu.Unlock()
		if got >= n {
			return s.Drafts(chatID)
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("telegramtest: waited %v for %d drafts to chat %d, got %d", timeout, n, chatID, got)
			return nil
		case <-s.done:
			t.Fatalf("telegramtest: server closed while waiting for %d drafts to chat %d", n, chatID)
			return nil
		}
	}
}
