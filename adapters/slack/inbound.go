package slack

import (
	"context"
	"encoding/json"
	"runtime/debug"
	"strings"
	"time"

	"github.com/slack-go/slack/slackevents"

	"github.com/parleybot/parley/adapters/slack/eventset"
	"github.com/parleybot/parley/adapters/slack/mrkdwn"
	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/internal/backoff"
)

// inbound is the adapter's receiving side: it takes events from the
// Events API or Socket Mode and slash commands, drops the ones seen
// before, and hands messages to the core.
type inbound struct {
	*state
	*users
	// seen remembers the events handed to the core (Slack redelivers).
	seen *eventset.Set
}

// handleCallback hands the message in an event_callback to the core. It
// reports whether Slack may forget the event: true once the core has it or
// when Parley has no use for it; false when the core could not take it
// within the ack budget, so that Slack sends it again (Socket Mode
// redelivers an unacked envelope; the Events API retries a failed POST).
// retry is Slack's retry count, for the logs.
func (in *inbound) handleCallback(ctx context.Context, raw []byte, retry int) bool {
	var cb slackevents.EventsAPICallbackEvent
	if err := json.Unmarshal(raw, &cb); err != nil || cb.InnerEvent == nil {
		in.log.Warn("skipping a slack event that cannot be decoded", "err", err)
		return true
	}
	if cb.Type != string(slackevents.CallbackEvent) {
		in.log.Debug("ignoring a slack payload that is not an event callback", "type", cb.Type)
		return true
	}
	var head struct {
		Type    string `json:"type"`
		SubType string `json:"subtype"`
	}
	if err := json.Unmarshal(*cb.InnerEvent, &head); err != nil {
		in.log.Debug("ignoring a slack event whose type cannot be read", "err", err)
		return true
	}
	switch {
	case head.Type == string(slackevents.ReactionAdded) || head.Type == string(slackevents.ReactionRemoved):
		return in.handleDoing(ctx, cb.EventID, *cb.InnerEvent, retry, true)
	case head.Type == string(slackevents.Message) && (head.SubType == wire.SubtypeChanged || head.SubType == wire.SubtypeDeleted):
		return in.handleDoing(ctx, cb.EventID, *cb.InnerEvent, retry, false)
	case head.Type != string(slackevents.Message):
		in.log.Debug("ignoring a slack event that is not a message", "type", head.Type)
		return true
	}
	var ev slackevents.MessageEvent
	if err := json.Unmarshal(*cb.InnerEvent, &ev); err != nil {
		in.log.Warn("skipping a slack message event that cannot be decoded", "event_id", cb.EventID, "err", err)
		return true
	}
	// slack-go keeps a message's files on ev.Message, without the
	// per-file subtype that marks a voice clip: they are read again here.
	var withFiles struct {
		Files []wire.File `json:"files"`
	}
	if err := json.Unmarshal(*cb.InnerEvent, &withFiles); err != nil {
		in.log.Warn("skipping a slack message event whose files cannot be decoded", "event_id", cb.EventID, "err", err)
		return true
	}
	if !in.wanted(&ev, len(withFiles.Files) > 0) {
		return true
	}
	files, skipped := wire.Attachments(withFiles.Files)
	for _, f := range skipped {
		in.log.Debug("skipping a slack file that cannot be fetched", "file_id", f.ID, "mode", f.Mode)
	}
	if len(files) == 0 && strings.TrimSpace(ev.Text) == "" && len(withFiles.Files) > 0 {
		// Only files Parley cannot fetch (deleted, hidden by the free
		// plan's limit, external links) and no text: nothing to answer.
		in.log.Debug("ignoring a slack file share without a file to fetch", "channel", ev.Channel)
		return true
	}
	key := cb.EventID
	if key == "" {
		key = ev.Channel + "/" + ev.TimeStamp
	}
	return in.deliver(ctx, key, retry, ev.Channel, func(ctx context.Context, now time.Time) core.InboundMessage {
		return core.InboundMessage{
			Platform:          Platform,
			ChannelThreadID:   ev.Channel,
			ChannelUserID:     ev.User,
			DisplayName:       in.displayName(ctx, ev.User),
			Text:              mrkdwn.ToText(ev.Text),
			PlatformMessageID: ev.TimeStamp,
			SentAt:            wire.ParseTS(ev.TimeStamp, now),
			Direct:            true,
			Attachments:       files,
		}
	})
}

// wanted reports whether a message event is a user's DM to the bot: a
// plain message, or a file share (subtype file_share, or files on a plain
// message) when hasFiles.
func (in *inbound) wanted(ev *slackevents.MessageEvent, hasFiles bool) bool {
	botUser, _ := in.ownIDs()
	why := ""
	switch {
	case ev.ChannelType != "im":
		why = "not a direct message"
	case ev.SubType == "file_share" && !hasFiles:
		why = "a file share without files"
	case ev.SubType != "" && ev.SubType != "file_share":
		// Edits, deletions, joins, bot_message…
		why = "subtype " + ev.SubType
	case ev.BotID != "":
		why = "sent by a bot"
	case ev.User == "" || ev.Channel == "":
		why = "no user or channel"
	case ev.User == botUser:
		why = "the bot's own message"
	default:
		return true
	}
	in.log.Debug("ignoring a slack message", "why", why, "channel", ev.Channel)
	return false
}

// deliver hands the DM build makes (within the ack budget) to the core,
// once per key (the event id), as handOver does; build is called once.
func (in *inbound) deliver(ctx context.Context, key string, retry int, channel string, build func(context.Context, time.Time) core.InboundMessage) bool {
	var msg *core.InboundMessage
	return in.handOver(ctx, key, retry, channel, func(ctx context.Context, h core.Host, now time.Time) error {
		if msg == nil {
			m := build(ctx, now)
			msg = &m
		}
		return h.HandleInbound(ctx, *msg)
	})
}

// handOver calls hand (a DM, an edit or a reaction for the core) once per
// key (the event id), within the ack budget. A core that cannot take it
// (its database briefly locked or down) gets more tries while the ack
// budget lasts; after that the event is left to Slack's redelivery.
func (in *inbound) handOver(ctx context.Context, key string, retry int, channel string, hand func(context.Context, core.Host, time.Time) error) bool {
	now := in.clock.Now()
	switch in.seen.Begin(key, now) {
	case eventset.Done:
		in.log.Debug("ignoring a slack event already handled", "event_id", key, "retry", retry)
		return true
	case eventset.InFlight:
		// Another delivery of it is being handled; Slack asks again later.
		return false
	}
	h, runCtx, ok := in.enter()
	if !ok {
		in.seen.Forget(key)
		return false
	}
	defer in.wg.Done()
	handled := false
	defer func() {
		if handled {
			return
		}
		// Not acked: Slack's redelivery must be handled afresh.
		in.seen.Forget(key)
		if r := recover(); r != nil {
			in.log.Error("panic while handing a slack event to the core", "event_id", key, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	// The budget is on the adapter's clock, as now is: a context deadline
	// is wall time, which a test's clock is not.
	deadline := now.Add(in.ackBudget)
	ctx, cancel := context.WithTimeout(ctx, deadline.Sub(in.clock.Now()))
	defer cancel()
	defer context.AfterFunc(runCtx, cancel)()

	for attempt := 1; ; attempt++ {
		err := hand(ctx, h, now)
		if err == nil {
			in.seen.Finish(key, in.clock.Now())
			handled = true
			return true
		}
		wait := inboundBackoff().Delay(attempt - 1)
		if ctx.Err() != nil || in.clock.Now().Add(wait).After(deadline) || !in.sleep(ctx, wait) {
			in.log.Warn("handing a slack event to the core failed; leaving it to slack's redelivery",
				"event_id", key, "channel", channel, "attempts", attempt, "err", err)
			return false
		}
	}
}

// inboundBackoff spaces the tries to hand one event to the core within
// the ack budget: 100ms, doubling.
func inboundBackoff() backoff.Policy { return backoff.Policy{Initial: 100 * time.Millisecond} }

// enter registers an event being handled, unless the adapter is stopping.
func (st *state) enter() (core.Host, context.Context, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.started || st.stopped || st.runCtx == nil || st.runCtx.Err() != nil {
		return nil, nil, false
	}
	st.wg.Add(1)
	return st.handler, st.runCtx, true
}
