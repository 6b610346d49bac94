package intake

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
)

// Pairings keeps who was let in under bot.dm_policy: pairing; the store's
// Directory implements it.
type Pairings interface {
	Paired(ctx context.Context, platform core.Platform, userID string) (bool, error)
	RequestPairing(ctx context.Context, platform core.Platform, userID, threadID, displayName string, now time.Time) (access.Request, bool, error)
}

// door lets users in: by the gate, or by an owner's approval under
// pairing, which it remembers for a minute (a user let in costs a query a
// minute, not one a message; an erasure, which takes the approval, is
// honoured within the minute by every replica).
type door struct {
	e *Engine
	// paired holds when each user let in under pairing
	// ("platform:user_id") was last seen approved; full whether the log
	// said that no more codes are given.
	paired sync.Map
	full   atomic.Bool
}

// pairedFor is how long a user seen approved is let in without a query.
const pairedFor = time.Minute

// remembered reports whether key was seen approved within pairedFor.
func (d *door) remembered(key string) bool {
	at, ok := d.paired.Load(key)
	return ok && d.e.cfg.Clock.Now().Sub(at.(time.Time)) < pairedFor
}

// admitted says whether msg's sender may talk to the bot. A stranger under
// pairing is not: their message is kept (it starts no turn and reaches no
// model) and they get a code to pass to the owner, once an hour.
func (d *door) admitted(ctx context.Context, log *slog.Logger, msg core.InboundMessage, text string, meta map[string]any) (bool, error) {
	e := d.e
	switch e.cfg.Gate.Decide(string(msg.Platform), msg.ChannelUserID) {
	case access.Admit:
		return true, nil
	case access.Ignore:
		log.Debug("ignoring a user not in bot.allow_users", "user", msg.ChannelUserID)
		return false, nil
	}
	key := string(msg.Platform) + ":" + msg.ChannelUserID
	if d.remembered(key) {
		return true, nil
	}
	ok, err := e.cfg.Pairings.Paired(ctx, msg.Platform, msg.ChannelUserID)
	if err != nil {
		return false, fmt.Errorf("checking whether the user was let in: %w", err)
	}
	if !ok {
		ok, err = d.stranger(ctx, log, msg, text, meta)
	}
	if ok {
		d.paired.Store(key, e.cfg.Clock.Now())
	}
	return ok, err
}

// known reports whether the user may act on the bot's messages (a tap, a
// reaction): let in by the gate, or approved under pairing.
func (d *door) known(ctx context.Context, platform core.Platform, userID string) bool {
	e := d.e
	switch e.cfg.Gate.Decide(string(platform), userID) {
	case access.Admit:
		return true
	case access.Ignore:
		return false
	}
	key := string(platform) + ":" + userID
	if d.remembered(key) {
		return true
	}
	ok, err := e.cfg.Pairings.Paired(ctx, platform, userID)
	if err != nil {
		e.log.Warn("a tap or reaction ignored: whether its user was let in cannot be read", "user", userID, "err", err)
		return false
	}
	if ok {
		d.paired.Store(key, e.cfg.Clock.Now())
	}
	return ok
}

// stranger keeps a message of a user not let in yet, and gives them a
// code when they have none; ok is true when an owner approved them
// meanwhile. Past access.MaxPendingCodes waiting on the platform a
// stranger is ignored, message and all, and the log says so once.
func (d *door) stranger(ctx context.Context, log *slog.Logger, msg core.InboundMessage, text string, meta map[string]any) (ok bool, err error) {
	e := d.e
	now := e.cfg.Clock.Now().UTC()
	p, issued, err := e.cfg.Pairings.RequestPairing(ctx, msg.Platform, msg.ChannelUserID, msg.ChannelThreadID,
		core.StorableText(msg.DisplayName), now)
	if errors.Is(err, access.ErrFull) {
		if d.full.CompareAndSwap(false, true) {
			log.Warn("pairing: the owner has not answered the codes already given; strangers are ignored until they do or the codes expire",
				"waiting", access.MaxPendingCodes, "user", msg.ChannelUserID)
		}
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("giving a pairing code: %w", err)
	}
	if p.Status == access.Approved {
		return true, nil
	}
	if issued {
		d.full.Store(false)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	meta[access.UnpairedKey] = true
	res, stored, err := e.record(ctx, log, msg, core.InboundRecord{Text: text, Metadata: meta, Now: now})
	if err != nil || !stored || !issued {
		return false, err
	}
	log.Info("pairing: a stranger got a code; `parley pairing approve CODE` lets them in", "code", p.Code, "user", msg.ChannelUserID)
	notice := &core.Message{
		ConversationID:  res.Conversation.ID,
		Role:            core.RoleAssistant,
		Content:         fmt.Sprintf(pairingNotice, p.Code),
		Source:          core.SourceSystem,
		SessionRecordID: res.Conversation.CurrentRecordID,
		Metadata:        map[string]any{access.NoticeKey: true},
	}
	if err := e.cfg.Outbox.Notice(ctx, res.Conversation, notice, core.FormatRichText, "pairing-"+p.Code, "a pairing code"); err != nil {
		return false, fmt.Errorf("sending a pairing code: %w", err)
	}
	return false, nil
}

// pairingNotice is what a stranger is told, with their code.
const pairingNotice = "Hi! I only talk with people my owner has let in. " +
	"To ask them, send them this code: **%s**\n\nIt is valid for an hour. Once they approve it, just write to me again."

// Welcome tells a user an owner let in (by /approve or the console) that
// they are, in the conversation where they got their code.
func (e *Engine) Welcome(ctx context.Context, p access.Request) {
	e.door.paired.Store(p.Platform+":"+p.UserID, e.cfg.Clock.Now())
	conv, err := e.cfg.Store.ConversationByThread(ctx, core.Platform(p.Platform), p.ThreadID)
	if err != nil {
		e.log.Warn("pairing: the user let in cannot be told so", "user", p.UserID, "err", err)
		return
	}
	msg := &core.Message{
		ConversationID:  conv.ID,
		Role:            core.RoleAssistant,
		Content:         "Good news: you're in! Write to me whenever you like.",
		Source:          core.SourceSystem,
		SessionRecordID: conv.CurrentRecordID,
		Metadata:        map[string]any{access.NoticeKey: true},
	}
	if err := e.cfg.Outbox.Notice(ctx, conv, msg, core.FormatRichText, "pairing-welcome-"+p.Code, "a welcome"); err != nil {
		e.log.Warn("pairing: the user let in cannot be told so", "user", p.UserID, "err", err)
	}
}
