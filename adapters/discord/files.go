package discord

import (
	"context"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/parleybot/parley/adapters/discord/upload"
	"github.com/parleybot/parley/core"
)

var _ core.FileSender = (*Adapter)(nil)

// SendFiles sends msg.Files as attachments with msg.Text as their caption
// (package upload), each request on Send's route, pacing and retries.
func (sd *sender) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	const what = "sending discord files"
	s, err := sd.sendable(ctx, msg, what)
	if err != nil {
		return core.SendResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, sd.sendTimeout)
	defer cancel()
	ch, endpoint := msg.ChannelThreadID, discordgo.EndpointChannelMessages(msg.ChannelThreadID)
	post := func(ctx context.Context, contentType string, body []byte) ([]byte, error) {
		return retrying(ctx, sd.state, s, endpoint, ch, what, []any{"channel_id", ch}, func(ctx context.Context) ([]byte, error) {
			return s.RequestRaw(http.MethodPost, endpoint, contentType, body, endpoint, 0,
				discordgo.WithContext(ctx), discordgo.WithRetryOnRatelimit(false))
		})
	}
	return upload.Sender{Post: post, Text: sd.Send, Log: sd.log}.Send(ctx, msg)
}
