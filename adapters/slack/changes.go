package slack

import (
	"context"
	"time"

	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

// handleDoing hands a user's reaction (reaction true), or their edit or
// deletion of a DM, to the core, once per event id as a DM is (without
// one, which Slack always sends, the event is its own key). The core
// keeps a reaction with the bot's message for the next turn, starting
// none, and makes the stored text follow a change. It reports whether
// Slack may forget the event, as handleCallback does.
func (in *inbound) handleDoing(ctx context.Context, eventID string, raw []byte, retry int, reaction bool) bool {
	botUser, _ := in.ownIDs()
	var why, channel string
	var hand func(context.Context, core.Host, time.Time) error
	if reaction {
		r, rWhy := wire.Reaction(raw, Platform, botUser, in.clock.Now())
		why, channel = rWhy, r.ChannelThreadID
		hand = func(ctx context.Context, h core.Host, _ time.Time) error { return h.HandleReaction(ctx, r) }
	} else {
		c, cWhy := wire.Change(raw, Platform, botUser, in.clock.Now())
		why, channel = cWhy, c.ChannelThreadID
		hand = func(ctx context.Context, h core.Host, _ time.Time) error { return h.HandleChange(ctx, c) }
	}
	if why != "" {
		in.log.Debug("ignoring a slack reaction or message change", "why", why, "channel", channel)
		return true
	}
	if eventID == "" {
		eventID = string(raw)
	}
	return in.handOver(ctx, eventID, retry, channel, hand)
}
