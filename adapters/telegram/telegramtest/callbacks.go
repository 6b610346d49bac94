package telegramtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
)

// CallbackExpiry is how long after a tap Telegram takes its answer
// (answerCallbackQuery); later, and for a query answered already, it
// answers 400 "query is too old and response timeout expired or query
// ID is invalid". The fake measures it on its clock (WithNow).
const CallbackExpiry = 15 * time.Second

const queryTooOld = "query is too old and response timeout expired or query ID is invalid"

// CallbackAnswer is one answerCallbackQuery call the fake accepted, with
// the tap it answered.
type CallbackAnswer struct {
	QueryID   string
	ChatID    int64
	UserID    int64
	MessageID int
	// Data is the tapped button's callback_data.
	Data string
	// Text is the notice the user is shown ("" for none), ShowAlert
	// whether as an alert rather than a toast.
	Text      string
	ShowAlert bool
	At        time.Time
}

// callbackQuery is a tap the fake delivered.
type callbackQuery struct {
	chatID    int64
	userID    int64
	messageID int
	data      string
	at        time.Time
	answered  bool
}

// callbackBook holds the taps and their answers.
type callbackBook struct {
	queries map[string]*callbackQuery
	order   []string
	answers []CallbackAnswer
	next    int64
}

// callbackAPI makes users tap the bot's buttons and takes
// answerCallbackQuery.
type callbackAPI struct{ *state }

// Tap makes from tap the button with callback_data data on the bot's
// message messageID in their private chat, and returns the callback_query
// update it queued: as on Telegram, its message is the bot's message as
// it is now, reply_markup included, and its id is the query to answer.
// A button the message does not show now cannot be tapped: that is an
// error (a forged tap is InjectRaw's).
func (s *callbackAPI) Tap(from User, messageID int, data string) (models.Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tapLocked(s.touchChat(privateChat(from)), from, messageID, data, true)
}

// TapGroup is Tap on a message of the bot's in the group chatID.
func (s *callbackAPI) TapGroup(chatID int64, from User, messageID int, data string) (models.Update, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.chats[chatID]
	if cs == nil {
		return models.Update{}, fmt.Errorf("telegramtest: tap in chat %d, which the fake does not know", chatID)
	}
	return s.tapLocked(cs, from, messageID, data, true)
}

// tapLocked queues the callback_query; shown requires a button with data
// on the message. Callers hold s.mu.
func (s *callbackAPI) tapLocked(cs *chatState, from User, messageID int, data string, shown bool) (models.Update, error) {
	k := msgKey{cs.chat.ID, messageID}
	m, ok := s.msgs.current[k]
	if !ok || s.msgs.deleted[k] {
		return models.Update{}, fmt.Errorf("telegramtest: tap on message %d of chat %d, which the bot did not send or deleted", messageID, cs.chat.ID)
	}
	if shown && !hasButton(m.Buttons, data) {
		return models.Update{}, fmt.Errorf("telegramtest: message %d of chat %d shows no button with data %q: %+v", messageID, cs.chat.ID, data, m.Buttons)
	}
	s.cb.next++
	// Telegram's query ids are long decimal strings.
	qid := strconv.FormatInt(4_382_047_205_386_500_000+s.cb.next, 10)
	s.cb.queries[qid] = &callbackQuery{chatID: cs.chat.ID, userID: from.ID, messageID: messageID, data: data, at: s.now()}
	s.cb.order = append(s.cb.order, qid)
	id := s.nextUpdateID
	s.nextUpdateID++
	raw, err := json.Marshal(map[string]any{
		"update_id": id,
		"callback_query": map[string]any{
			"id":            qid,
			"from":          from.model(),
			"message":       json.RawMessage(s.messageModel(k, m)),
			"chat_instance": strconv.FormatInt(cs.chat.ID*7919+13, 10),
			"data":          data,
		},
	})
	if err != nil {
		panic("telegramtest: encoding a callback query: " + err.Error()) // maps of JSON values always encode
	}
	var upd models.Update
	if err := json.Unmarshal(raw, &upd); err != nil {
		return models.Update{}, fmt.Errorf("telegramtest: decoding the callback query it made: %w", err)
	}
	s.pushKind(queuedUpdate{id: id, raw: raw}, models.AllowedUpdateCallbackQuery)
	return upd, nil
}

func hasButton(rows [][]Button, data string) bool {
	for _, r := range rows {
		for _, b := range r {
			if b.Data != "" && b.Data == data {
				return true
			}
		}
	}
	return false
}

// answerCallbackQuery takes the answer to a tap: once, within
// CallbackExpiry of it.
func (s *callbackAPI) answerCallbackQuery(_ context.Context, p params) (any, *Fault) {
	id := p["callback_query_id"]
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.cb.queries[id]
	now := s.now()
	if q == nil || q.answered || now.Sub(q.at) > CallbackExpiry {
		f := badRequest(queryTooOld)
		return nil, &f
	}
	q.answered = true
	s.cb.answers = append(s.cb.answers, CallbackAnswer{
		QueryID: id, ChatID: q.chatID, UserID: q.userID, MessageID: q.messageID, Data: q.data,
		Text: p["text"], ShowAlert: p.bool("show_alert"), At: now,
	})
	s.notify()
	return true, nil
}

// CallbackAnswers returns the answers the bot gave to taps, in order.
func (s *callbackAPI) CallbackAnswers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallbackAnswer(nil), s.cb.answers...)
}

// WaitCallbackAnswers waits until the bot has answered at least n taps
// and returns the answers; after timeout it fails the test (call it from
// the test goroutine).
func (s *callbackAPI) WaitCallbackAnswers(t testing.TB, n int, timeout time.Duration) []CallbackAnswer {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		got, changed := len(s.cb.answers), s.changed
		s.mu.Unlock()
		if got >= n {
			return s.CallbackAnswers()
		}
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("telegramtest: waited %v for %d callback query answers, got %+v", timeout, n, s.CallbackAnswers())
			return nil
		case <-s.done:
			t.Fatalf("telegramtest: server closed while waiting for %d callback query answers", n)
			return nil
		}
	}
}

// Unanswered returns the ids of the taps the bot has not answered, in
// order (the user still sees a spinner on each, until it expires).
func (s *callbackAPI) Unanswered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range s.cb.order {
		if !s.cb.queries[id].answered {
			out = append(out, id)
		}
	}
	return out
}
