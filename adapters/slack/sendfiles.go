package slack

import (
	"context"

	"github.com/parleybot/parley/adapters/slack/upload"
	"github.com/parleybot/parley/core"
)

var _ core.FileSender = (*Adapter)(nil)

// SendFiles uploads msg.Files with Slack's external upload flow and shares
// them as one message with msg.Text as its comment (package upload: a
// caption too long or with choices follows through Send; every kind is a
// Slack file). Retries and errors are as for Send. The result's ids are
// the file ids (F…), then the ts of a caption sent apart: Slack does not
// answer the ts of the message the files make. Needs the files:write
// scope.
func (s *sender) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	return upload.Send(ctx, upload.Host{Live: s.live, Channel: s.channelOf, Call: s.call, Send: s.Send,
		Timeout: s.sendTimeout, MaxComment: maxMessageLength}, msg)
}
