package discord

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/core"
)

// Discord's JSON error codes of interaction callbacks.
const (
	codeUnknownInteraction = 10062 // answered after its 3 s, or never known
	codeAlreadyAcked       = 40060 // a second callback (a replayed event)
)

const (
	// tapHandleTimeout bounds the core's HandleTap, so that the
	// acknowledgement still goes within Discord's 3 s.
	tapHandleTimeout = 2 * time.Second
	// tapAckTimeout bounds the acknowledgement itself.
	tapAckTimeout = 3 * time.Second
	// tapCloseTimeout bounds the edit that closes a question's buttons
	// when the acknowledgement could not.
	tapCloseTimeout = 15 * time.Second
)

// tapBucket is discordgo's rate-limit bucket of interaction callbacks.
var tapBucket = discordgo.EndpointInteractionResponse("-", "-")

// noticeTapFailed is what the user is shown when the core could not take
// a tap.
const noticeTapFailed = "Could not take that now, try again."

// tapResponse is POST /interactions/{id}/{token}/callback. discordgo's
// InteractionResponseData always sends content, which on an
// UPDATE_MESSAGE would blank the question's text.
type tapResponse struct {
	Type discordgo.InteractionResponseType `json:"type"`
	Data *tapResponseData                  `json:"data,omitempty"`
}

type tapResponseData struct {
	Content         string                            `json:"content,omitempty"`
	Flags           discordgo.MessageFlags            `json:"flags,omitempty"`
	Components      []discordgo.MessageComponent      `json:"components,omitempty"`
	AllowedMentions *discordgo.MessageAllowedMentions `json:"allowed_mentions,omitempty"`
}

// onInteractionCreate takes a tap on one of the bot's buttons (an
// INTERACTION_CREATE of type MESSAGE_COMPONENT) in a DM: the core's
// HandleTap records it, and the interaction is acknowledged with the
// core's answer within Discord's 3 s. It runs on the gateway's reading
// goroutine like DMs, so a tap and the messages around it reach the core
// in order. Taps outside DMs are acknowledged and otherwise ignored; other
// interactions (the bot registers no commands) are ignored.
func (g *gateway) onInteractionCreate(s *discordgo.Session, ev *discordgo.InteractionCreate) {
	h, ctx, ok := g.enter()
	if !ok {
		return
	}
	defer g.wg.Done()
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("panic while handling a discord button tap", "panic", r, "stack", string(debug.Stack()))
		}
	}()
	if ev == nil || ev.Interaction == nil {
		g.log.Warn("skipping a malformed discord interaction event: no interaction")
		return
	}
	in := ev.Interaction
	log := g.log.With("interaction_id", in.ID, "channel_id", in.ChannelID)
	data, isComponent := in.Data.(discordgo.MessageComponentInteractionData)
	switch {
	case in.Type != discordgo.InteractionMessageComponent || !isComponent:
		log.Debug("ignoring a discord interaction that is not a button tap", "type", int(in.Type))
		return
	case !isSnowflake(in.ID) || in.Token == "":
		log.Warn("skipping a malformed discord interaction: no id or token")
		return
	case in.GuildID != "":
		log.Debug("ignoring a discord button tap in a server", "guild_id", in.GuildID)
		g.ack(ctx, s, in, tapResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, log)
		return
	case in.User == nil || !isSnowflake(in.User.ID) || !isSnowflake(in.ChannelID) ||
		in.Message == nil || !isSnowflake(in.Message.ID) || data.CustomID == "":
		log.Warn("skipping a malformed discord button tap: no user, channel, message or button")
		g.ack(ctx, s, in, tapResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, log)
		return
	}
	msg := g.tapMessage(in, data)
	tapCtx, cancel := context.WithTimeout(ctx, tapHandleTimeout)
	answer, err := h.HandleTap(tapCtx, msg)
	cancel()
	if err != nil {
		log.Error("the core could not take a discord button tap", "message_id", in.Message.ID, "err", err)
		g.ack(ctx, s, in, notice(noticeTapFailed), log)
		return
	}
	switch {
	case answer.Chosen != "" && answer.Notice == "":
		// One call acknowledges the tap and closes the question.
		closed := closedComponents(in.Message.Components, data.CustomID, answer.Chosen)
		if !g.ack(ctx, s, in, tapResponse{Type: discordgo.InteractionResponseUpdateMessage, Data: &tapResponseData{Components: closed}}, log) {
			g.closeLater(ctx, s, in, closed, log)
		}
	case answer.Chosen != "":
		g.ack(ctx, s, in, notice(answer.Notice), log)
		g.closeLater(ctx, s, in, closedComponents(in.Message.Components, data.CustomID, answer.Chosen), log)
	case answer.Notice != "":
		g.ack(ctx, s, in, notice(answer.Notice), log)
	default:
		g.ack(ctx, s, in, tapResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}, log)
	}
}

// tapMessage is the core's view of a tap in a DM.
func (g *gateway) tapMessage(in *discordgo.Interaction, data discordgo.MessageComponentInteractionData) core.InboundMessage {
	// An interaction id is a snowflake: it holds the tap's time.
	sentAt, err := discordgo.SnowflakeTimestamp(in.ID)
	if err != nil {
		sentAt = g.clock.Now()
	}
	name := in.User.GlobalName
	if strings.TrimSpace(name) == "" {
		name = in.User.Username
	}
	return core.InboundMessage{
		Platform:        Platform,
		ChannelThreadID: in.ChannelID,
		ChannelUserID:   in.User.ID,
		DisplayName:     name,
		Text:            buttonLabelOf(in.Message.Components, data.CustomID),
		SentAt:          sentAt.UTC(),
		Direct:          true,
		Tap:             &core.Tap{Data: data.CustomID, MessageID: in.Message.ID, ID: in.ID},
	}
}

// notice is a reply only the tapping user sees (ephemeral).
func notice(text string) tapResponse {
	return tapResponse{Type: discordgo.InteractionResponseChannelMessageWithSource, Data: &tapResponseData{
		Content: text, Flags: discordgo.MessageFlagsEphemeral, AllowedMentions: noPings(),
	}}
}

// ack makes the interaction's one callback and reports whether Discord
// took it. It is not retried: a retry would come after Discord's 3 s.
// Failures are logged; the interaction's token never is.
func (g *gateway) ack(ctx context.Context, s *discordgo.Session, in *discordgo.Interaction, resp tapResponse, log *slog.Logger) bool {
	ctx, cancel := context.WithTimeout(ctx, tapAckTimeout)
	defer cancel()
	endpoint := discordgo.EndpointInteractionResponse(in.ID, in.Token)
	// One bucket for every callback: discordgo keeps a bucket per id for
	// ever, and a bucket per interaction would grow without end.
	_, err := s.RequestWithBucketID(http.MethodPost, endpoint, resp, tapBucket,
		discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false), discordgo.WithRestRetries(0))
	if err == nil {
		return true
	}
	var re *discordgo.RESTError
	code := 0
	if errors.As(err, &re) && re.Message != nil {
		code = re.Message.Code
	}
	err = scrubToken(g.scrub(err), in.Token)
	switch code {
	case codeUnknownInteraction:
		log.Warn("a discord button tap was acknowledged too late (after Discord's 3 s); the user saw it fail", "type", int(resp.Type), "err", err)
	case codeAlreadyAcked:
		// The gateway replayed the tap (a RESUME): it was answered before.
		log.Info("a discord button tap was acknowledged already", "type", int(resp.Type))
	default:
		log.Warn("acknowledging a discord button tap failed", "type", int(resp.Type), "err", err)
	}
	return false
}

// closeLater closes the question's buttons with an edit of the message,
// when the acknowledgement did not: in the background, so that the
// gateway's events do not wait for it.
func (g *gateway) closeLater(ctx context.Context, s *discordgo.Session, in *discordgo.Interaction, closed []discordgo.MessageComponent, log *slog.Logger) {
	g.wg.Add(1) // within enter's count, so Stop waits for it
	go func() {
		defer g.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, tapCloseTimeout)
		defer cancel()
		edit := &discordgo.MessageEdit{Channel: in.ChannelID, ID: in.Message.ID, Components: &closed}
		if _, err := g.editWith(ctx, s, edit); err != nil {
			log.Warn("closing the buttons of an answered discord question failed", "message_id", in.Message.ID, "err", err)
		}
	}()
}

// scrubToken hides an interaction's token in err's text: it is in the
// callback's URL, which a transport error quotes.
func scrubToken(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[interaction token]"))
}
