package slack

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/slack/blocks"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

// InteractivityPath is where Slack posts interactions (taps on the bot's
// buttons) in events mode: the app's Interactivity Request URL.
const InteractivityPath = "/webhooks/slack/interactivity"

const (
	// tapHandleTimeout bounds the tapping user's name lookup and the
	// core's HandleTap, so that the ack still goes within Slack's 3 s.
	tapHandleTimeout = 2 * time.Second
	// tapAnswerTimeout bounds the notice and the edit that closes a
	// question, made after the ack.
	tapAnswerTimeout = 15 * time.Second
)

// noticeTapFailed is what the user is shown when the core could not take
// a tap.
const noticeTapFailed = "Could not take that now, try again."

// takeTap handles one interaction payload: a tap on one of the bot's
// buttons in a DM goes to the core's HandleTap, then ack (the envelope's
// ack, or the POST's 200) is called, within Slack's 3 s, and the core's
// answer is shown after it in the background: the notice with
// chat.postEphemeral, a choice made by closing the question with
// chat.update. Other interactions, taps outside DMs and malformed ones
// are acked and otherwise ignored. It reports false, without acking, when
// the adapter is stopping, so that Slack tries again.
func (in *inbound) takeTap(ctx context.Context, raw []byte, ack func()) bool {
	h, runCtx, ok := in.enter()
	if !ok {
		return false
	}
	defer in.wg.Done()
	acked := false
	defer func() {
		if r := recover(); r != nil {
			in.log.Error("panic while handling a slack button tap", "panic", r, "stack", string(debug.Stack()))
		}
		if !acked {
			ack()
		}
	}()
	var p wire.TapPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		in.log.Warn("skipping a slack interaction that cannot be decoded", "err", err)
		return true
	}
	channel := p.Container.ChannelID
	if channel == "" {
		channel = p.Channel.ID
	}
	log := in.log.With("channel", channel, "message_ts", p.Container.MessageTS)
	switch {
	case p.Type != string(slack.InteractionTypeBlockActions):
		log.Debug("ignoring a slack interaction that is not a button tap", "type", p.Type)
		return true
	case !strings.HasPrefix(channel, "D"):
		// Group DMs and channels: the bot answers in its DMs only.
		log.Debug("ignoring a slack button tap outside a direct message")
		return true
	case p.User.ID == "" || p.Container.MessageTS == "" || len(p.Actions) == 0 || p.Actions[0].Value == "":
		log.Warn("skipping a malformed slack button tap: no user, message or button")
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, tapHandleTimeout)
	defer context.AfterFunc(runCtx, cancel)()
	msg := in.tapMessage(ctx, p)
	answer, err := h.HandleTap(ctx, msg)
	cancel()
	acked = true
	ack()
	if err != nil {
		log.Error("the core could not take a slack button tap", "err", err)
		answer = core.TapAnswer{Notice: noticeTapFailed}
	}
	if answer.Notice == "" && answer.Chosen == "" {
		return true // the ack was all the answer
	}
	in.wg.Add(1) // within enter's count, so Stop waits for it
	go func() {
		defer in.wg.Done()
		ctx, cancel := context.WithTimeout(runCtx, tapAnswerTimeout)
		defer cancel()
		in.answerTap(ctx, channel, p, answer, log)
	}()
	return true
}

// tapMessage is the core's view of a tap in a DM.
func (in *inbound) tapMessage(ctx context.Context, p wire.TapPayload) core.InboundMessage {
	act := p.Actions[0]
	id := p.TriggerID
	if id == "" {
		id = act.ActionTS
	}
	channel := p.Container.ChannelID
	if channel == "" {
		channel = p.Channel.ID
	}
	return core.InboundMessage{
		Platform:        Platform,
		ChannelThreadID: channel,
		ChannelUserID:   p.User.ID,
		DisplayName:     in.displayName(ctx, p.User.ID),
		Text:            act.Text.Text,
		SentAt:          wire.ParseTS(act.ActionTS, in.clock.Now()),
		Direct:          true,
		Tap:             &core.Tap{Data: act.Value, MessageID: p.Container.MessageTS, ID: id},
	}
}

// answerTap shows the core's answer to a tap: its notice to the tapping
// user alone (chat.postEphemeral), and, when it made a choice, the
// question closed (chat.update: its buttons replaced with a context
// block "✓ <label>", its text kept). Failures are logged: the tap is
// taken either way.
func (in *inbound) answerTap(ctx context.Context, channel string, p wire.TapPayload, answer core.TapAnswer, log *slog.Logger) {
	api, err := in.live()
	if err != nil {
		return
	}
	if answer.Notice != "" {
		err := in.call(ctx, "showing a slack tap's notice", channel, false, func(ctx context.Context) error {
			_, err := api.PostEphemeralContext(ctx, channel, p.User.ID, slack.MsgOptionText(answer.Notice, true))
			return err
		})
		if err != nil {
			log.Warn("showing the notice of a slack button tap failed", "err", err)
		}
	}
	if answer.Chosen == "" {
		return
	}
	blocks := blocks.Closed(p.Message.Text, p.Message.Blocks, answer.Chosen)
	err = in.call(ctx, "closing a slack question", channel, false, func(ctx context.Context) error {
		// The text is as Slack stores it, escaped already.
		return updateCall(ctx, api, channel, p.Container.MessageTS, []slack.MsgOption{slack.MsgOptionText(p.Message.Text, false), slack.MsgOptionBlocks(blocks...)})
	})
	if err != nil {
		log.Warn("closing the buttons of an answered slack question failed", "err", err)
	}
}

// serveInteractivity checks the request's signature, as serveEvents
// does, and hands its payload to takeTap, answering 200 once the core
// has the tap (within Slack's 3 s), 401 for a bad signature, 503 while
// the adapter is not running.
func (in *inbound) serveInteractivity(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "interaction too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "reading the interaction failed", http.StatusBadRequest)
		return
	}
	if err := in.verify(r.Header, body); err != nil {
		in.log.Warn("rejecting a slack interactivity request with a bad signature", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		in.log.Warn("skipping a slack interactivity request without a payload", "err", err)
		http.Error(w, "no payload", http.StatusBadRequest)
		return
	}
	// The request's context ends when Slack stops waiting; the handling
	// is bounded by tapHandleTimeout and Stop instead.
	if !in.takeTap(context.WithoutCancel(r.Context()), []byte(form.Get("payload")), func() { w.WriteHeader(http.StatusOK) }) {
		http.Error(w, "slack adapter is not running", http.StatusServiceUnavailable)
	}
}
