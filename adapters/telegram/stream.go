package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

// replyStream is one reply growing in a chat (core.Stream). The reply is
// cut into parts as Send would cut its text; every part but the last is
// finished (sent, or its grown message edited to it) as soon as the text
// has moved past it, and the last part grows: as a draft (one draft id a
// part) or as a message sent with the first words and edited.
type replyStream struct {
	s      *streamer
	b      *bot.Bot
	chatID int64
	chat   string
	msg    core.OutboundMessage

	mu sync.Mutex
	// drafts: the last part grows as a draft, else by edits.
	drafts bool
	// plain: Telegram refused a partial's markup; partials go as plain
	// text from then on (the finished reply is still sent as Send does).
	plain bool
	// done are the parts finished while growing, in order.
	done []grownPart
	// draftID is the growing part's draft (0: none yet); growID its
	// message in edits mode (0: none yet); shown what it shows.
	draftID int64
	growID  int
	shown   string
	shownAt time.Time
	ended   bool
}

// grownPart is a finished part: its message and the text it was sent with.
type grownPart struct {
	id   int
	text string
}

// Update shows text, the whole visible reply so far. Each call to
// Telegram takes a slot of the chat's pace with TryTake; with none free
// now, or while a 429 on a partial holds partials back, it returns
// core.ErrStreamBusy and shows nothing. A refused or rate-limited partial
// is not retried.
func (st *replyStream) Update(ctx context.Context, text string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return errors.New("telegram stream: update after the reply ended")
	}
	if st.s.flooded() {
		return core.ErrStreamBusy
	}
	msg := st.msg
	msg.Text = text
	parts, formatted := st.s.send.textParts(msg)
	if len(parts) <= len(st.done) {
		// Nothing past the finished parts (a text that shrank): Finish
		// settles it.
		return nil
	}
	progressed := false
	busy := func() error {
		if progressed {
			return nil
		}
		return core.ErrStreamBusy
	}
	// The text has moved past a part: it is finished as Send would send it.
	for len(parts) > len(st.done)+1 {
		if !st.take() {
			return busy()
		}
		if err := st.finishPart(ctx, parts[len(st.done)], formatted); err != nil {
			return err
		}
		progressed = true
	}
	p := parts[len(parts)-1]
	show := p.Text
	if st.plain && formatted {
		show, formatted = p.Plain, false
	}
	if show == st.shown && (!st.drafts || st.s.clock.Now().Sub(st.shownAt) < draftRefresh/2) {
		// The same text again changes nothing (an edit: Telegram answers
		// "message is not modified"), but for a draft about to expire:
		// sent again, it shows for another 30 s (draftRefresh).
		return nil
	}
	if !st.take() {
		return busy()
	}
	return st.show(ctx, show, formatted)
}

// take takes a partial's slot of the chat's pace, if one is free now.
func (st *replyStream) take() bool { return st.s.sendPacer().TryTake(st.chat) }

// show makes the growing part show text: a draft, the first message, or
// an edit of it.
func (st *replyStream) show(ctx context.Context, text string, formatted bool) error {
	if st.drafts && st.s.mode() != modeDrafts {
		// Another reply found drafts refused since this one began.
		st.drafts, st.draftID = false, 0
	}
	var err error
	switch {
	case st.drafts:
		if st.draftID == 0 {
			st.draftID = st.s.newDraftID()
		}
		_, err = st.b.SendMessageDraft(ctx, &bot.SendMessageDraftParams{ChatID: st.chatID,
			DraftID: strconv.FormatInt(st.draftID, 10), Text: text, ParseMode: parseMode(formatted)})
		if err == nil {
			st.s.draftsWork()
		}
	case st.growID == 0:
		var m *models.Message
		m, err = st.b.SendMessage(ctx, &bot.SendMessageParams{ChatID: st.chatID, Text: text, ParseMode: parseMode(formatted)})
		if err == nil {
			st.growID = m.ID
		}
	default:
		_, err = st.b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: st.chatID, MessageID: st.growID,
			Text: text, ParseMode: parseMode(formatted)})
		if notModified(err) {
			err = nil
		}
	}
	if err != nil {
		return st.failed(err)
	}
	st.shown, st.shownAt = text, st.s.clock.Now()
	return nil
}

// finishPart gives a part the text has moved past its final form, once,
// without retrying: the grown message is edited to it, or it is sent (a
// draft's part), and the next part grows afresh. Should it fail, a later
// Update or Finish does it again.
func (st *replyStream) finishPart(ctx context.Context, p markup.Part, formatted bool) error {
	text := p.Text
	if st.plain && formatted {
		// Telegram refused this reply's markup: as Send would, the plain
		// text (Finish tries the markup once more).
		text, formatted = p.Plain, false
	}
	id := st.growID
	var err error
	if id != 0 {
		_, err = st.b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: st.chatID, MessageID: id,
			Text: text, ParseMode: parseMode(formatted)})
		if notModified(err) {
			err = nil
		}
	} else {
		var m *models.Message
		m, err = st.b.SendMessage(ctx, &bot.SendMessageParams{ChatID: st.chatID, Text: text, ParseMode: parseMode(formatted)})
		if err == nil {
			id = m.ID
		}
	}
	if err != nil {
		return st.failed(err)
	}
	st.done = append(st.done, grownPart{id: id, text: text})
	st.growID, st.draftID, st.shown = 0, 0, ""
	return nil
}

// failed explains a partial Telegram did not take and draws the lessons:
// a 429 holds every chat's partials back for retry_after, a server
// without drafts turns the bot to edits, refused markup turns this
// reply's partials to plain text.
func (st *replyStream) failed(err error) error {
	var tooMany *bot.TooManyRequestsError
	switch {
	case errors.As(err, &tooMany):
		st.s.flood(tooMany.RetryAfter)
		return fmt.Errorf("telegram partial reply skipped: rate limited for %ds: %w", max(tooMany.RetryAfter, 1), core.ErrStreamBusy)
	case st.drafts && draftsRefused(err):
		st.s.refuseDrafts(err)
		st.drafts, st.draftID = false, 0
		return fmt.Errorf("telegram partial reply skipped: drafts refused, growing by edits from now on: %w", st.s.scrub(err))
	}
	_, badMarkup := parseEntitiesOffset(err)
	switch {
	case badMarkup:
		st.plain = true
	case st.drafts && errors.Is(err, bot.ErrorBadRequest):
		// The chat takes no drafts (400 TEXTDRAFT_PEER_INVALID): this
		// reply grows by edits instead.
		st.s.log.Debug("telegram refused a draft in this chat; the reply grows by edits", "chat_id", st.chatID, "err", st.s.scrub(err))
		st.drafts, st.draftID = false, 0
	}
	return fmt.Errorf("telegram partial reply skipped: %w", st.s.scrub(err))
}

// Grown lists the messages the reply has created so far: the finished
// parts and the message growing by edits. A draft is no message.
func (st *replyStream) Grown() []string {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.grown()
}

func (st *replyStream) grown() []string {
	var ids []string
	for _, g := range st.done {
		ids = append(ids, strconv.Itoa(g.id))
	}
	if st.growID != 0 {
		ids = append(ids, strconv.Itoa(st.growID))
	}
	return ids
}
