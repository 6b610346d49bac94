package slack

import (
	"context"
	"fmt"

	"github.com/parleybot/parley/adapters/slack/wire"
	"github.com/parleybot/parley/core"
)

var _ core.ConversationOpener = (*Adapter)(nil)

// OpenConversation opens (or finds: Slack keeps one per user) the DM with
// req.ChannelUserID through OpenDM, as Send does for a user id, and names
// the user from users.info (cached; "" when it fails). The DM's id (D…) is
// the conversation's thread, as for the user's own DMs. A user Slack will
// not open a DM with (unknown, deactivated, invisible to the bot, a bot)
// is an error wrapping core.ErrUnreachable. A req.ChannelThreadID that is
// not that DM is refused with a plain error: the request contradicts
// itself, the user may well be reachable. ChannelUserID is required, since
// a DM is opened with a user.
func (u *users) OpenConversation(ctx context.Context, req core.OpenRequest) (core.OpenedConversation, error) {
	if err := ctx.Err(); err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening slack conversation: %w", err)
	}
	if _, err := u.live(); err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening slack conversation: %w", err)
	}
	userID := req.ChannelUserID
	switch {
	case userID == "":
		return core.OpenedConversation{}, fmt.Errorf("opening slack conversation: channel_user_id is required (a DM is opened with a user): %w", core.ErrBadAddress)
	case !isUserID(userID):
		return core.OpenedConversation{}, fmt.Errorf("opening slack conversation: %q is not a slack user id (U… or W…): %w", userID, core.ErrUnreachable)
	}
	what := "opening slack conversation with user " + userID
	ch, err := u.OpenDM(ctx, userID)
	if err != nil {
		if reason := unreachableReason(errorCode(err)); reason != "" {
			return core.OpenedConversation{}, fmt.Errorf("%s: %s: %w", what, reason, core.ErrUnreachable)
		}
		return core.OpenedConversation{}, fmt.Errorf("%s: %w", what, err)
	}
	if req.ChannelThreadID != "" && req.ChannelThreadID != ch {
		return core.OpenedConversation{}, fmt.Errorf("%s: channel_thread_id %q is not the DM with this user (that is %s): %w", what, req.ChannelThreadID, ch, core.ErrBadAddress)
	}
	return core.OpenedConversation{
		ChannelThreadID: ch,
		ChannelUserID:   userID,
		DisplayName:     u.displayName(ctx, userID),
	}, nil
}

// unreachableReason explains the conversations.open errors that are about
// the user, "" for the others.
func unreachableReason(code string) string {
	switch code {
	case "user_not_found":
		return "slack has no user with this id in the workspace"
	case "user_disabled", "cannot_dm_bot":
		return wire.PermanentReason(code)
	case "user_not_visible":
		return "the bot is not allowed to see this user (a guest or another organisation's user?)"
	}
	return ""
}
