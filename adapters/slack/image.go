package slack

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/core"
)

var _ core.ImageSender = (*Adapter)(nil)

// Slack's limits on the blocks SendImage posts.
const (
	maxSectionText = 3000
	maxAltText     = 2000
)

// SendImage posts msg.ImageURL as an image block (Slack fetches the URL)
// under a section holding msg.Text in mrkdwn (rendered with markup.Slack
// for rich text, escaped otherwise). The message's text, which Slack shows
// in notifications, is the caption as plain text; it is also the image's
// alt text ("Image" without a caption). A caption over a section's 3,000
// characters is not cut: the image goes alone and the text follows as
// messages of its own (through Send). Should Slack refuse a rich
// caption's mrkdwn, the image is posted again with the caption as plain
// text. Retries and errors are as for Send.
// The result holds the image message's ts, then those of the text after
// it.
func (s *sender) SendImage(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	if err := ctx.Err(); err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack image: %w", err)
	}
	api, err := s.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending slack image: %w", err)
	}
	if strings.TrimSpace(msg.ImageURL) == "" {
		return core.SendResult{}, &core.PermanentError{Reason: "no image URL"}
	}
	ctx, cancel := context.WithTimeout(ctx, s.sendTimeout)
	defer cancel()
	channel, err := s.channelOf(ctx, msg)
	if err != nil {
		return core.SendResult{}, err
	}

	caption, plain := escapeMrkdwn(msg.Text), msg.Text
	if msg.Format == core.FormatRichText {
		caption, plain = markup.Slack(msg.Text), markup.Plain(msg.Text)
	}
	alt := strings.TrimSpace(plain)
	if alt == "" {
		alt = "Image"
	}
	alt = truncate(alt, maxAltText)
	image := slack.NewImageBlock(msg.ImageURL, alt, "", nil)
	p := post{opts: []slack.MsgOption{slack.MsgOptionText(alt, true), slack.MsgOptionBlocks(image)}}
	apart := false
	switch {
	case strings.TrimSpace(caption) == "":
	case utf8.RuneCountInString(caption) <= maxSectionText:
		section := slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, caption, false, false), nil, nil)
		p.opts[1] = slack.MsgOptionBlocks(section, image)
		if msg.Format == core.FormatRichText && strings.TrimSpace(plain) != "" {
			// Should Slack refuse the caption's mrkdwn, it goes as plain text.
			asText := slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, truncate(plain, maxSectionText), false, false), nil, nil)
			p.instead = [][]slack.MsgOption{{slack.MsgOptionText(alt, true), slack.MsgOptionBlocks(asText, image)}}
		}
	default:
		apart = true
	}
	res, err := s.post(ctx, api, channel, []post{p})
	if err != nil || !apart {
		return res, err
	}
	text := msg
	text.ChannelThreadID, text.ImageURL = channel, ""
	more, err := s.Send(ctx, text)
	res.PlatformMessageIDs = append(res.PlatformMessageIDs, more.PlatformMessageIDs...)
	if err != nil {
		return res, fmt.Errorf("sending the caption after the slack image: %w", err)
	}
	return res, nil
}

// escapeMrkdwn escapes the three characters Slack requires.
func escapeMrkdwn(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// truncate cuts s to at most n runes, ending it with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}
