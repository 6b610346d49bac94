package outbox

import (
	"context"
	"testing"

	"github.com/parleybot/parley/core"
	"github.com/stretchr/testify/require"
)

// plainAdapter renders no markup and shows no images: it records what it
// was asked to send.
type plainAdapter struct {
	rich bool
	sent []core.OutboundMessage
}

func (a *plainAdapter) Name() string            { return "plain" }
func (a *plainAdapter) Platform() core.Platform { return "web" }
func (a *plainAdapter) Capabilities() core.Capabilities {
	return core.Capabilities{MaxMessageLength: 100, RichText: a.rich}
}
func (a *plainAdapter) Start(context.Context, core.Host) error { return nil }
func (a *plainAdapter) Stop(context.Context) error             { return nil }
func (a *plainAdapter) Send(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.sent = append(a.sent, m)
	return core.SendResult{PlatformMessageIDs: []string{"1"}}, nil
}

// imageAdapter also shows images.
type imageAdapter struct {
	plainAdapter
	images []core.OutboundMessage
}

func (a *imageAdapter) SendImage(_ context.Context, m core.OutboundMessage) (core.SendResult, error) {
	a.images = append(a.images, m)
	return core.SendResult{PlatformMessageIDs: []string{"2"}}, nil
}

func TestRenderFallsBackToWhatTheAdapterCanShow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := &plainAdapter{}
	_, err := render(ctx, a, core.OutboundMessage{Text: "**Build** passed, see [the log](https://ci.test/1)", Format: core.FormatRichText})
	require.NoError(t, err)
	_, err = render(ctx, a, core.OutboundMessage{Text: "A cat", ImageURL: "https://img.test/cat.png"})
	require.NoError(t, err)
	_, err = render(ctx, a, core.OutboundMessage{ImageURL: "https://img.test/dog.png"})
	require.NoError(t, err)
	require.Equal(t, []core.OutboundMessage{
		{Text: "Build passed, see the log (https://ci.test/1)"},
		{Text: "A cat\nhttps://img.test/cat.png"},
		{Text: "https://img.test/dog.png"},
	}, a.sent)

	rich := &imageAdapter{plainAdapter: plainAdapter{rich: true}}
	_, err = render(ctx, rich, core.OutboundMessage{Text: "**hi**", Format: core.FormatRichText})
	require.NoError(t, err)
	_, err = render(ctx, rich, core.OutboundMessage{Text: "*A cat*", Format: core.FormatRichText, ImageURL: "https://img.test/cat.png"})
	require.NoError(t, err)
	require.Equal(t, []core.OutboundMessage{{Text: "**hi**", Format: core.FormatRichText}}, rich.sent, "rendered by the adapter itself")
	require.Equal(t, []core.OutboundMessage{{Text: "*A cat*", Format: core.FormatRichText, ImageURL: "https://img.test/cat.png"}}, rich.images)
}

func TestFilesNotShown(t *testing.T) {
	t.Parallel()
	files := []core.OutboundFile{
		{Kind: core.AttachImage, Name: "cat.png", Data: make([]byte, 2048)},
		{Kind: core.AttachVoice, Name: "reply.ogg", Data: []byte("ogg")},
	}
	require.Equal(t, "Here you go.\n[image \"cat.png\" (2 KB) cannot be shown here]\n[voice \"reply.ogg\" (3 bytes) cannot be shown here]",
		filesNotShown("Here you go.\n", files))
	require.Equal(t, "[image \"cat.png\" (2 KB) cannot be shown here]", filesNotShown("", files[:1]))
}
