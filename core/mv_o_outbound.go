package core

import (
	"context"
	"strings"

	"github.com/parleybot/parley/adapters/markup"
)

// sendOutbound sends msg through a, in the best form a can show: rich text
// as plain text to an adapter that cannot render it, an image as its
// caption and URL to one that cannot show images.
func sendOutbound(ctx context.Context, a Adapter, msg OutboundMessage) (SendResult, error) {
	if msg.Format == FormatRichText && !a.Capabilities().RichText {
		msg.Text, msg.Format = markup.Plain(msg.Text), FormatText
	}
	if msg.ImageURL == "" {
		return a.Send(ctx, msg)
	}
	if is, ok := a.(ImageSender); ok {
		return is.SendImage(ctx, msg)
	}
	msg.Text = strings.TrimSpace(msg.Text + "\n" + msg.ImageURL)
	msg.ImageURL = ""
	return a.Send(ctx, msg)
}

// send sends msg through a (sendOutbound) and counts the send by platform
// and result.
func (d *Dispatcher) send(ctx context.Context, a Adapter, msg OutboundMessage) (SendResult, error) {
	res, err := sendOutbound(ctx, a, msg)
	result := "ok"
	switch {
	case IsPermanent(err):
		result = "permanent"
	case err != nil:
		result = "error"
	}
	d.cfg.Metrics.Sent(a.Platform(), result)
	return res, err
}
