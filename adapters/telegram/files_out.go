package telegram

import (
	"context"
	"fmt"

	"github.com/parleybot/parley/adapters/telegram/upload"
	"github.com/parleybot/parley/core"
)

var _ core.FileSender = (*Adapter)(nil)

// SendFiles uploads msg.Files as Telegram shows them (sendPhoto, scaled to
// fit; sendDocument; sendVoice; sendAudio), msg.Text the first one's
// caption or, over 1024 characters, a message after them; upload.Sender
// has the rules. Paced, retried and refused as Send.
func (s *sender) SendFiles(ctx context.Context, msg core.OutboundMessage) (core.SendResult, error) {
	b, err := s.live()
	if err != nil {
		return core.SendResult{}, fmt.Errorf("sending telegram files: %w", err)
	}
	chatID, err := parseChatID(msg.ChannelThreadID)
	if err != nil {
		return core.SendResult{}, err
	}
	up := upload.Sender{Bot: b, Deliver: s.deliver, SendText: s.Send, Formatted: s.formatted(), Log: s.log}
	return up.Send(ctx, chatID, msg)
}
