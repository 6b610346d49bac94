package app

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// Through parley run on Discord: a photo from earlier in the session is
// shown to the model again after a restart, a day later by the CDN's
// reckoning (its URL expired): the adapter gets a fresh URL from Discord
// instead of describing the photo.
func TestDiscordPhotoFromEarlierIsStillSeenAfterItsURLExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	cfg := b.writeConfig(t, discordConfig(fake))
	r := b.start(t, cfg)
	fake.WaitReady(t, waitFor)
	b.model.Enqueue(llmtest.Text("What a lovely cat!"))
	channel, _ := fake.SendFiles(lin, "my cat", discordtest.File{Filename: "cat.png", ContentType: "image/png", Data: breadPNG(t)})
	fake.WaitShows(t, channel, waitFor, "What a lovely cat!")
	first := b.model.Requests()[0].ImageURLs()
	require.Len(t, first, 1)
	r.stop(t)

	fake.ExpireAttachmentURLs()
	b.start(t, cfg)
	fake.WaitReady(t, waitFor)
	b.model.Enqueue(llmtest.Text("It was ginger."))
	fake.SendDM(lin, "what colour was it again?")
	fake.WaitShows(t, channel, waitFor, "What a lovely cat!", "It was ginger.")
	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, first, reqs[1].ImageURLs(), "the same photo, fetched again from a fresh URL")
	require.Equal(t, 1, fake.Calls("attachments.refresh"))
	for _, m := range reqs[1].Messages() {
		require.NotContains(t, m.Content, "could not be downloaded")
	}
}
