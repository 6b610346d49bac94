package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleybot/parley/adapters/telegram/reactions"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/parleybot/parley/core"
)

// Streaming settings (adapters.telegram.streaming).
const (
	// StreamingAuto grows a reply as a live draft, or by edits where the
	// Bot API server refuses drafts.
	StreamingAuto = "auto"
	// StreamingEdits grows a reply as a message edited as it grows.
	StreamingEdits = "edits"
	// StreamingOff sends whole replies only.
	StreamingOff = "off"
)

// Stream modes, as StreamCapabilities names them.
const (
	modeDrafts = "drafts"
	modeEdits  = "edits"
)

// minEditInterval is the least time between two edits of one reply: the
// Bot FAQ asks bots to send no more than one message a second in a chat
// (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this),
// and an edit is answered 429 under the same flood control. Telegram
// documents no limit of its own for drafts (sendMessageDraft, Bot API
// 9.5): a draft's updates are animated, made to come often; they still
// take the chat's send_rate slots (TryTake), which keep them to that pace.
const minEditInterval = time.Second

// draftRefresh is how long a draft left unchanged (the model paused: a
// slow tool, long reasoning) waits before it is sent again: Telegram
// shows a draft for 30 s after its last update.
const draftRefresh = 20 * time.Second

// streamer makes replies grow (core.Streamer) and edits and deletes the
// bot's messages (core.MessageEditor). What it decides holds for the bot:
// whether the server takes drafts, and until when a 429 holds partials
// back.
type streamer struct {
	*state
	send *sender

	smu sync.Mutex
	// decided: auto mode's choice between drafts and edits is made (and
	// logged); noDrafts: the server refused sendMessageDraft.
	decided, noDrafts bool
	// floodUntil is when the last 429 on a partial ends: until then every
	// chat's partials are skipped.
	floodUntil time.Time
	// lastDraft is the last draft id given out (0: none yet).
	lastDraft int64
	// reacted is the bot's last reaction on each message ("chat:message"):
	// Unreact takes back only its own emoji.
	reacted reactions.Memory
}

// mode is how replies grow now: modeDrafts, modeEdits or "" (off).
func (s *streamer) mode() string {
	switch s.cfg.Streaming {
	case StreamingOff:
		return ""
	case StreamingEdits:
		return modeEdits
	}
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.noDrafts {
		return modeEdits
	}
	return modeDrafts
}

// StreamCapabilities says how replies grow: "drafts" (auto, until the
// server refuses them), "edits", or "" with streaming off. Edits go at
// most one a second per chat (minEditInterval); drafts have no documented
// limit beyond the chat's send_rate.
func (s *streamer) StreamCapabilities() core.StreamCapabilities {
	switch m := s.mode(); m {
	case modeEdits:
		return core.StreamCapabilities{Mode: m, MinInterval: minEditInterval}
	case modeDrafts:
		return core.StreamCapabilities{Mode: m, Refresh: draftRefresh}
	default:
		return core.StreamCapabilities{Mode: m}
	}
}

// Stream prepares a reply growing in msg's chat: a draft in a private chat
// (auto), else a message grown by edits. With streaming off it returns an
// error, and the core sends whole replies.
func (s *streamer) Stream(_ context.Context, msg core.OutboundMessage) (core.Stream, error) {
	mode := s.mode()
	if mode == "" {
		return nil, errors.New("telegram adapter: streaming is off (adapters.telegram.streaming)")
	}
	b, err := s.live()
	if err != nil {
		return nil, fmt.Errorf("streaming a telegram reply: %w", err)
	}
	chatID, err := parseChatID(msg.ChannelThreadID)
	if err != nil {
		return nil, err
	}
	msg.Text = ""
	return &replyStream{
		s: s, b: b, chatID: chatID, chat: strconv.FormatInt(chatID, 10), msg: msg,
		// Telegram shows drafts in private chats only (positive ids).
		drafts: mode == modeDrafts && chatID > 0,
	}, nil
}

// newDraftID gives out a draft id unique in the bot's life: non-zero,
// within 31 bits, starting from the clock so that a restarted process is
// unlikely to reuse a live draft's id.
func (s *streamer) newDraftID() int64 {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.lastDraft == 0 {
		s.lastDraft = (s.clock.Now().UnixNano() >> 20) & 0x7fffffff
	}
	s.lastDraft = (s.lastDraft + 1) & 0x7fffffff
	if s.lastDraft == 0 {
		s.lastDraft = 1
	}
	return s.lastDraft
}

// draftsWork records, once, that the server takes drafts.
func (s *streamer) draftsWork() {
	s.smu.Lock()
	first := !s.decided && !s.noDrafts
	s.decided = true
	s.smu.Unlock()
	if first {
		s.log.Info("telegram replies grow as live drafts", "streaming", s.cfg.Streaming, "mode", modeDrafts,
			"why", "the Bot API server takes sendMessageDraft")
	}
}

// refuseDrafts switches the bot to edits for good, logging it once.
func (s *streamer) refuseDrafts(err error) {
	s.smu.Lock()
	first := !s.noDrafts
	s.decided, s.noDrafts = true, true
	s.smu.Unlock()
	if first {
		s.log.Info("telegram replies grow by editing a message", "streaming", s.cfg.Streaming, "mode", modeEdits,
			"why", "the Bot API server refused sendMessageDraft (older than Bot API 9.5?)", "err", s.scrub(err))
	}
}

// draftsRefused reports whether err is a server that does not know
// sendMessageDraft: 404 "Not Found", or 400 "method not found".
func draftsRefused(err error) bool {
	return errors.Is(err, bot.ErrorNotFound) ||
		(errors.Is(err, bot.ErrorBadRequest) && strings.Contains(strings.ToLower(err.Error()), "method not found"))
}

// notModified reports whether err is Telegram refusing an edit that would
// change nothing: the message already shows that text.
func notModified(err error) bool {
	return err != nil && strings.Contains(err.Error(), "message is not modified")
}

// flood holds every chat's partials back for retryAfter seconds (at
// least one), after a 429 on a partial.
func (s *streamer) flood(retryAfter int) {
	until := s.clock.Now().Add(time.Duration(max(retryAfter, 1)) * time.Second)
	s.smu.Lock()
	defer s.smu.Unlock()
	if until.After(s.floodUntil) {
		s.floodUntil = until
	}
}

// flooded reports whether partials are held back now.
func (s *streamer) flooded() bool {
	now := s.clock.Now()
	s.smu.Lock()
	defer s.smu.Unlock()
	return now.Before(s.floodUntil)
}

// parseMode is the parse mode of text rendered formatted or not.
func parseMode(formatted bool) models.ParseMode {
	if formatted {
		return models.ParseModeMarkdown
	}
	return ""
}
