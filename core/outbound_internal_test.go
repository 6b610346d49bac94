package core

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// plainAdapter renders no markup and shows no images: it records what it
// was asked to send.
type plainAdapter struct {
	rich bool
	sent []OutboundMessage
}

func (a *plainAdapter) Name() string       { return "plain" }
func (a *plainAdapter) Platform() Platform { return "web" }
func (a *plainAdapter) Capabilities() Capabilities {
	return Capabilities{MaxMessageLength: 100, RichText: a.rich}
}
func (a *plainAdapter) Start(context.Context, Host) error { return nil }
func (a *plainAdapter) Stop(context.Context) error        { return nil }
func (a *plainAdapter) Send(_ context.Context, m OutboundMessage) (SendResult, error) {
	a.sent = append(a.sent, m)
	return SendResult{PlatformMessageIDs: []string{"1"}}, nil
}

// imageAdapter also shows images.
type imageAdapter struct {
	plainAdapter
	images []OutboundMessage
}

func (a *imageAdapter) SendImage(_ context.Context, m OutboundMessage) (SendResult, error) {
	a.images = append(a.images, m)
	return SendResult{PlatformMessageIDs: []string{"2"}}, nil
}

func TestSendOutboundFallsBackToWhatTheAdapterCanShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &plainAdapter{}
	_, err := sendOutbound(ctx, a, OutboundMessage{Text: "**Build** passed, see [the log](https://ci.test/1)", Format: FormatRichText})
	require.NoError(t, err)
	_, err = sendOutbound(ctx, a, OutboundMessage{Text: "A cat", ImageURL: "https://img.test/cat.png"})
	require.NoError(t, err)
	_, err = sendOutbound(ctx, a, OutboundMessage{ImageURL: "https://img.test/dog.png"})
	require.NoError(t, err)
	require.Equal(t, []OutboundMessage{
		{Text: "Build passed, see the log (https://ci.test/1)"},
		{Text: "A cat\nhttps://img.test/cat.png"},
		{Text: "https://img.test/dog.png"},
	}, a.sent)

	rich := &imageAdapter{plainAdapter: plainAdapter{rich: true}}
	_, err = sendOutbound(ctx, rich, OutboundMessage{Text: "**hi**", Format: FormatRichText})
	require.NoError(t, err)
	_, err = sendOutbound(ctx, rich, OutboundMessage{Text: "*A cat*", Format: FormatRichText, ImageURL: "https://img.test/cat.png"})
	require.NoError(t, err)
	require.Equal(t, []OutboundMessage{{Text: "**hi**", Format: FormatRichText}}, rich.sent, "rendered by the adapter itself")
	require.Equal(t, []OutboundMessage{{Text: "*A cat*", Format: FormatRichText, ImageURL: "https://img.test/cat.png"}}, rich.images)
}
