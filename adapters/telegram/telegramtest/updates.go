package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-telegram/bot/models"
)

// maxPollTimeout bounds a getUpdates timeout, as a safety net for tests.
const maxPollTimeout = 10 * time.Minute

// updateFeed makes users write to the bot and hands their updates out
// with getUpdates.
type updateFeed struct{ *state }

// SendPrivate makes from write text to the bot in their private chat and
// returns the update it queued.
func (s *updateFeed) SendPrivate(from User, text string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(privateChat(from))
	msg := s.newMessage(chat, from.model(), text)
	return s.enqueue(models.Update{Message: &msg})
}

// SendGroup makes from write text in the group chatID (negative ids are
// customary) and returns the update it queued.
func (s *updateFeed) SendGroup(chatID int64, from User, text string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(models.Chat{ID: chatID, Type: models.ChatTypeGroup, Title: fmt.Sprintf("Group %d", chatID)})
	msg := s.newMessage(chat, from.model(), text)
	return s.enqueue(models.Update{Message: &msg})
}

// SendChannelPost posts text in the channel chatID and returns the
// channel_post update it queued.
func (s *updateFeed) SendChannelPost(chatID int64, text string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(models.Chat{ID: chatID, Type: models.ChatTypeChannel, Title: fmt.Sprintf("Channel %d", chatID)})
	msg := s.newMessage(chat, nil, text)
	msg.SenderChat = &chat.chat
	return s.enqueue(models.Update{ChannelPost: &msg})
}

// SendOwn queues a message in the private chat chatID whose sender is the
// bot itself (is_bot true, id BotID), as a bot sees its own messages echoed
// by some clients; a bot should ignore it.
func (s *updateFeed) SendOwn(chatID int64, text string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(models.Chat{ID: chatID, Type: models.ChatTypePrivate})
	bot := s.bot
	msg := s.newMessage(chat, &bot, text)
	return s.enqueue(models.Update{Message: &msg})
}

// EditPrivate makes from edit their message messageID to text and returns
// the edited_message update it queued.
func (s *updateFeed) EditPrivate(from User, messageID int, text string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(privateChat(from))
	now := int(s.now().Unix())
	msg := models.Message{
		ID:       messageID,
		From:     from.model(),
		Date:     now,
		EditDate: now,
		Chat:     chat.chat,
		Text:     text,
	}
	return s.enqueue(models.Update{EditedMessage: &msg})
}

// InjectRaw queues update exactly as given, whatever it is: an unknown
// update type, a malformed document. If it is a JSON object with an
// update_id, that id is its place in the sequence (and later updates get
// higher ids); otherwise it takes the next id internally and, since no
// client can confirm it, is delivered by one getUpdates and then dropped.
// Chats named in a readable message become known.
func (s *updateFeed) InjectRaw(update json.RawMessage) {
	raw := bytes.Clone(update)
	var head struct {
		UpdateID *int64 `json:"update_id"`
	}
	var upd models.Update
	s.mu.Lock()
	defer s.mu.Unlock()
	q := queuedUpdate{raw: raw}
	if json.Unmarshal(raw, &head) == nil && head.UpdateID != nil {
		q.id = *head.UpdateID
		if q.id >= s.nextUpdateID {
			s.nextUpdateID = q.id + 1
		}
	} else {
		q.id = s.nextUpdateID
		s.nextUpdateID++
		q.once = true
	}
	if json.Unmarshal(raw, &upd) == nil {
		for _, m := range []*models.Message{upd.Message, upd.EditedMessage, upd.ChannelPost, upd.EditedChannelPost} {
			if m != nil && m.Chat.ID != 0 {
				s.touchChat(m.Chat)
			}
		}
	}
	s.push(q)
}

// Pending returns how many updates wait for getUpdates or the webhook.
func (s *updateFeed) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) + len(s.whQueue)
}

func (u User) model() *models.User {
	return &models.User{ID: u.ID, FirstName: u.FirstName, LastName: u.LastName, Username: u.Username}
}

func privateChat(u User) models.Chat {
	return models.Chat{ID: u.ID, Type: models.ChatTypePrivate, FirstName: u.FirstName, LastName: u.LastName, Username: u.Username}
}

// touchChat records a chat, keeping its message counter, and refreshes what
// is known about it. Callers hold s.mu.
func (s *state) touchChat(c models.Chat) *chatState {
	cs, ok := s.chats[c.ID]
	if !ok {
		cs = &chatState{chat: c}
		s.chats[c.ID] = cs
		return cs
	}
	if c.FirstName != "" || c.Title != "" || c.Username != "" {
		cs.chat = c
	}
	return cs
}

// newMessage makes the next message of a chat. Callers hold s.mu.
func (s *state) newMessage(cs *chatState, from *models.User, text string) models.Message {
	cs.lastMsgID++
	return models.Message{
		ID:   cs.lastMsgID,
		From: from,
		Date: int(s.now().Unix()),
		Chat: cs.chat,
		Text: text,
	}
}

// enqueue numbers an update and queues it. Callers hold s.mu.
func (s *state) enqueue(u models.Update) models.Update {
	u.ID = s.nextUpdateID
	s.nextUpdateID++
	raw, err := json.Marshal(u)
	if err != nil {
		panic(fmt.Sprintf("telegramtest: encoding update: %v", err)) // models.Update always encodes
	}
	s.pushKind(queuedUpdate{id: u.ID, raw: raw}, updateKind(u))
	return u
}

// push queues an update for the webhook if one is set, else for getUpdates.
// Callers hold s.mu.
func (s *state) push(q queuedUpdate) {
	if s.webhookURL != "" {
		s.whQueue = append(s.whQueue, q)
		s.wakeDelivery()
	} else {
		s.pending = append(s.pending, q)
	}
	s.notify()
}

// getUpdates answers long polls: it confirms updates below offset, then
// returns up to limit pending updates, holding the request up to timeout
// seconds while there are none.
func (s *updateFeed) getUpdates(ctx context.Context, p params) (any, *Fault) {
	offset, _, f := p.int("offset")
	if f != nil {
		return nil, f
	}
	limit, hasLimit, f := p.int("limit")
	if f != nil {
		return nil, f
	}
	if !hasLimit || limit < 1 || limit > 100 {
		limit = 100
	}
	timeoutSec, _, f := p.int("timeout")
	if f != nil {
		return nil, f
	}
	timeout := min(time.Duration(max(timeoutSec, 0))*time.Second, maxPollTimeout)

	s.mu.Lock()
	if s.webhookURL != "" {
		s.mu.Unlock()
		return nil, &Fault{Code: http.StatusConflict, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
	}
	if f := s.setAllowed(p); f != nil {
		s.mu.Unlock()
		return nil, f
	}
	s.confirm(offset)
	// A newer poll ends an older one that is still held, as on Telegram.
	s.pollGen++
	gen := s.pollGen
	s.notify()
	s.mu.Unlock()

	var expired <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		expired = timer.C
	}
	timedOut := timeout == 0
	for {
		s.mu.Lock()
		switch {
		case s.webhookURL != "":
			s.mu.Unlock()
			return nil, &Fault{Code: http.StatusConflict, Description: "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"}
		case gen != s.pollGen:
			s.mu.Unlock()
			return nil, &Fault{Code: http.StatusConflict, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
		}
		if len(s.pending) > 0 || timedOut {
			res := s.takeBatch(int(limit))
			s.mu.Unlock()
			return res, nil
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-expired:
			timedOut = true
		case <-ctx.Done():
			return nil, errClientGone
		case <-s.done:
			return rawResult("[]"), nil
		}
	}
}

// confirm drops the updates an offset confirms: below it if positive, all
// but the last -offset if negative. Callers hold s.mu.
func (s *updateFeed) confirm(offset int64) {
	switch {
	case offset > 0:
		kept := s.pending[:0]
		for _, q := range s.pending {
			if q.id >= offset {
				kept = append(kept, q)
			}
		}
		s.pending = kept
	case offset < 0 && int64(len(s.pending)) > -offset:
		s.pending = s.pending[int64(len(s.pending))+offset:]
	}
}

// takeBatch encodes up to limit pending updates as a JSON array; raw
// updates are copied byte for byte. Callers hold s.mu.
func (s *updateFeed) takeBatch(limit int) rawResult {
	n := min(limit, len(s.pending))
	var b bytes.Buffer
	b.WriteByte('[')
	kept := make([]queuedUpdate, 0, len(s.pending))
	for i, q := range s.pending {
		if i < n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(q.raw)
			if q.once {
				continue
			}
		}
		kept = append(kept, q)
	}
	b.WriteByte(']')
	s.pending = kept
	return b.Bytes()
}

// ReactPrivate makes from change their reactions to message messageID in
// their private chat with the bot, from old to now (emoji), and returns
// the message_reaction update it queued: Telegram sends the whole set
// before and after, never a single reaction. Only a bot that asked for
// message_reaction in allowed_updates gets it.
func (s *updateFeed) ReactPrivate(from User, messageID int, old, now []string) models.Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	chat := s.touchChat(privateChat(from))
	types := func(emoji []string) []models.ReactionType {
		out := []models.ReactionType{}
		for _, e := range emoji {
			out = append(out, models.ReactionType{Type: models.ReactionTypeTypeEmoji,
				ReactionTypeEmoji: &models.ReactionTypeEmoji{Type: models.ReactionTypeTypeEmoji, Emoji: e}})
		}
		return out
	}
	return s.enqueue(models.Update{MessageReaction: &models.MessageReactionUpdated{Chat: chat.chat, MessageID: messageID,
		User: from.model(), Date: int(s.now().Unix()), OldReaction: types(old), NewReaction: types(now)}})
}
