package discord

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

var _ core.ImageSender = (*Adapter)(nil)

// maxDescriptionLength is Discord's limit for an embed's description.
const maxDescriptionLength = 4096

// SendImage shows msg.ImageURL in an embed (Discord fetches the URL) with
// msg.Text as the embed's description: rendered with markup.Discord for
// rich text, as written otherwise (an embed shows Discord markdown either
// way). A caption over the description's 4096 characters is not cut: the
// embed goes with the image alone and the text follows as messages of
// their own, split as Send splits. The body is the one
// ChannelMessageSendComplex would post, on the same route and rate-limit
// bucket, but sent like Send's so it carries a nonce (discordgo v0.29's
// MessageSend has none): a resend of the same send is dropped. The result
// holds the embed message's id, then those of the text after it.
func (sd *sender) SendImage(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	s, err := sd.sendable(ctx, msg, "sending discord image")
	if err != nil {
		return core.SendResult{}, err
	}
	if strings.TrimSpace(msg.ImageURL) == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no image URL"}
	}
	embed := &discordgo.MessageEmbed{Type: discordgo.EmbedTypeRich, Image: &discordgo.MessageEmbedImage{URL: msg.ImageURL}}
	bodies := []*messageBody{{Embeds: []*discordgo.MessageEmbed{embed}}}
	caption := msg.Text
	if msg.Format == core.FormatRichText {
		caption = markup.Discord(msg.Text)
	}
	switch {
	case strings.TrimSpace(caption) == "":
	case utf8.RuneCountInString(caption) <= maxDescriptionLength:
		embed.Description = caption
	default:
		bodies = append(bodies, textBodies(msg)...)
	}
	return sd.deliver(ctx, s, msg, bodies)
}
