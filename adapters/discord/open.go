package discord

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
)

// opener opens DM channels, for OpenConversation and OpenDM.
type opener struct{ *state }

var _ core.ConversationOpener = (*Adapter)(nil)

// codeInvalidRecipient is Discord's "Invalid Recipient(s)", for a DM the
// bot may not open (with itself, with some system accounts).
const codeInvalidRecipient = 50033

// OpenConversation opens (or finds: Discord keeps one per user) the DM
// channel with req.ChannelUserID. Its id is the conversation's thread, as
// for the user's own DMs, and the display name is the recipient's. An id
// Discord knows no user by is an error wrapping core.ErrUnreachable. A
// req.ChannelThreadID that is not that DM channel is refused with a plain
// error: the request contradicts itself, the user may well be reachable.
// ChannelUserID is required, since a DM is opened from a user.
//
// Discord opens a DM channel even with a user who blocked the bot or
// shares no server with it; a Send there then fails with a
// *core.PermanentError.
func (op *opener) OpenConversation(ctx context.Context, req core.OpenRequest) (core.OpenedConversation, error) {
	if err := ctx.Err(); err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening discord conversation: %w", err)
	}
	if _, err := op.live(); err != nil {
		return core.OpenedConversation{}, fmt.Errorf("opening discord conversation: %w", err)
	}
	userID := req.ChannelUserID
	switch {
	case userID == "":
		return core.OpenedConversation{}, fmt.Errorf("opening discord conversation: channel_user_id is required (a DM is opened with a user): %w", core.ErrBadAddress)
	case !isSnowflake(userID):
		return core.OpenedConversation{}, fmt.Errorf("opening discord conversation: %q is not a discord user id: %w", userID, core.ErrUnreachable)
	}
	what := "opening discord conversation with user " + userID
	ch, err := op.dmChannel(ctx, userID)
	if err != nil {
		if reason := unreachableReason(err); reason != "" {
			return core.OpenedConversation{}, fmt.Errorf("%s: %s: %w", what, reason, core.ErrUnreachable)
		}
		return core.OpenedConversation{}, fmt.Errorf("%s: %w", what, err)
	}
	if req.ChannelThreadID != "" && req.ChannelThreadID != ch.ID {
		return core.OpenedConversation{}, fmt.Errorf("%s: channel_thread_id %q is not the DM channel with this user (that is %s): %w", what, req.ChannelThreadID, ch.ID, core.ErrBadAddress)
	}
	return core.OpenedConversation{
		ChannelThreadID: ch.ID,
		ChannelUserID:   userID,
		DisplayName:     recipientName(ch, userID),
	}, nil
}

// unreachableReason says why Discord will not open a DM with the user, ""
// when the failure is not about the user.
func unreachableReason(err error) string {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Message == nil {
		return ""
	}
	switch re.Message.Code {
	case codeUnknownUser:
		return "discord has no user with this id"
	case codeCannotSendToUser:
		return "discord does not let the bot write to this user (they blocked it, closed their DMs or share no server with it)"
	case codeInvalidRecipient:
		return "discord does not allow a DM with this user"
	}
	return ""
}

// recipientName is the DM partner's global name, else their username.
func recipientName(ch *discordgo.Channel, userID string) string {
	for _, u := range ch.Recipients {
		if u == nil || u.ID != userID {
			continue
		}
		if name := strings.TrimSpace(u.GlobalName); name != "" {
			return name
		}
		return u.Username
	}
	return ""
}

// dmChannel opens (or gets) the DM channel with userID: POST
// /users/@me/channels. Discord answers a repeat with the same channel, so
// a 429 is waited out and a 5xx or lost answer retried as for a message,
// within the send timeout. Its errors are explained by requestError, which
// keeps Discord's error in the chain for unreachableReason.
func (op *opener) dmChannel(ctx context.Context, userID string) (*discordgo.Channel, error) {
	const what = "opening discord DM"
	s, err := op.live()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if !isSnowflake(userID) {
		return nil, &core.PermanentError{Reason: fmt.Sprintf("user id %q is not a discord user id", userID)}
	}
	ctx, cancel := context.WithTimeout(ctx, op.sendTimeout)
	defer cancel()
	bucket := discordgo.EndpointUserChannels("")
	ch, err := retrying(ctx, op.state, s, bucket, "", what, []any{"user_id", userID}, func(ctx context.Context) (*discordgo.Channel, error) {
		return s.UserChannelCreate(userID, discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
	})
	if err != nil {
		return nil, err
	}
	if ch == nil || ch.ID == "" {
		return nil, errors.New("opening discord DM: no channel in the answer")
	}
	return ch, nil
}
