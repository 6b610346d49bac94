package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/parleybot/parley/adapters/telegram/buttons"
	"github.com/parleybot/parley/core"
)

// Finish shows msg, the finished reply, as Send would: split into the
// same parts, rendered, retried as Send retries. A reply that grew as a
// draft alone is sent with Send (the message replaces the draft). Parts
// finished while growing stay as they are when Send would have sent the
// same text, and are edited to it otherwise; the message growing by
// edits is edited to its part; the parts after go as Send sends them; a
// grown message the finished reply does not need is deleted. msg.Choices
// go on the last part as Send puts them: an edit to it carries them, and
// a grown last part already showing its text gets them by
// editMessageReplyMarkup.
func (st *replyStream) Finish(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return core.SendResult{}, errors.New("telegram stream: finish after the reply ended")
	}
	st.ended = true
	if len(st.done) == 0 && st.growID == 0 {
		return st.s.send.Send(ctx, msg)
	}
	parts, formatted := st.s.send.textParts(msg)
	if len(parts) == 0 {
		return core.SendResult{PlatformMessageIDs: st.grown()}, &core.PermanentError{Reason: "empty text"}
	}
	grown := st.done
	if st.growID != 0 {
		g := grownPart{id: st.growID}
		if !st.plain {
			// Already showing its final text: no edit needed.
			g.text = st.shown
		}
		grown = append(grown, g)
	}
	kb := buttons.Layout(msg.Choices)
	ids := make([]string, 0, len(parts))
	k := 0
	for ; k < len(parts) && k < len(grown); k++ {
		g, p := grown[k], parts[k]
		var partKB *buttons.Keyboard
		if k == len(parts)-1 {
			partKB = kb
		}
		if g.text != p.Text {
			more, err := st.s.editFinal(ctx, st.b, st.chatID, g.id, p, formatted, partKB)
			if err != nil {
				return core.SendResult{PlatformMessageIDs: append(ids, st.idsFrom(grown[k:])...)}, partErr(err, k, len(parts))
			}
			ids = append(ids, more...)
			continue
		}
		if partKB != nil {
			if err := st.s.send.setKeyboard(ctx, st.b, st.chatID, g.id, partKB); err != nil {
				return core.SendResult{PlatformMessageIDs: append(ids, st.idsFrom(grown[k:])...)}, partErr(err, k, len(parts))
			}
		}
		ids = append(ids, strconv.Itoa(g.id))
	}
	var errs []error
	for _, g := range grown[k:] {
		if err := st.s.deleteMessage(ctx, st.b, st.chatID, g.id); err != nil {
			errs = append(errs, fmt.Errorf("deleting a grown message the finished reply does not need: %w", err))
		}
	}
	more, err := st.s.send.sendParts(ctx, st.b, st.chatID, parts, k, formatted, kb)
	ids = append(ids, more...)
	return core.SendResult{PlatformMessageIDs: ids}, errors.Join(append([]error{err}, errs...)...)
}

// idsFrom lists the ids of grown parts.
func (st *replyStream) idsFrom(gs []grownPart) []string {
	ids := make([]string, len(gs))
	for i, g := range gs {
		ids[i] = strconv.Itoa(g.id)
	}
	return ids
}

// partErr names part i of n in err, as Send does for a reply in parts.
func partErr(err error, i, n int) error {
	if n > 1 {
		return fmt.Errorf("part %d of %d: %w", i+1, n, err)
	}
	return err
}

// Abandon takes back what grew: the messages it created are deleted (one
// already gone is no error). A draft cannot be taken back: the Bot API
// has no call that withdraws one (sendMessageDraft with an empty text
// shows a "Thinking…" placeholder where servers accept it, which would
// say the opposite), so it is left to expire; Telegram shows a draft for
// 30 seconds unless a message replaces it.
func (st *replyStream) Abandon(ctx context.Context) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return nil
	}
	st.ended = true
	var errs []error
	for _, id := range st.grown() {
		n, _ := strconv.Atoi(id)
		if err := st.s.deleteMessage(ctx, st.b, st.chatID, n); err != nil {
			errs = append(errs, err)
		}
	}
	st.done, st.growID = nil, 0
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("taking back a telegram reply: %w", err)
	}
	return nil
}
