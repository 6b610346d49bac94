package discord

import (
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/cdn"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core"
)

// An attachment's URL that Discord's CDN no longer serves (a day later)
// is refreshed once through POST /attachments/refresh-urls, and the file
// is fetched from the new URL.
func TestFetchRefreshesAnExpiredAttachmentURL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "cat.png", ContentType: "image/png", Data: pngOf(t, 4, 4)})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]

	b.srv.ExpireAttachmentURLs()
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err, "refreshed and fetched")
	require.Equal(t, pngOf(t, 4, 4), got)
	require.Equal(t, 1, b.srv.Calls("attachments.refresh"))
	require.Len(t, b.srv.Downloads(), 2, "the expired URL's 404, then the fresh one")
	b.requireNoTokenToCDN(t)
	require.NotContains(t, b.logs.String(), "hm=", "no signature parameters in logs")
}

// A URL past its ex by the adapter's clock is refreshed before any
// download: no 404 on the way.
func TestFetchRefreshesAPastURLFirst(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.SetAttachmentURLLifetime(-time.Minute)
	b.srv.SendFiles(ada, "", discordtest.File{Filename: "old.txt", ContentType: "text/plain", Data: []byte("from yesterday")})
	a := b.core.Wait(t, 1, waitFor)[0].Attachments[0]
	u, err := url.Parse(a.Ref)
	require.NoError(t, err)
	require.True(t, cdn.Expired(u, time.Now()), "the fake's URL is past its ex")

	b.srv.SetAttachmentURLLifetime(time.Hour)
	got, err := b.fetch(a, 1<<20)
	require.NoError(t, err)
	require.Equal(t, []byte("from yesterday"), got)
	require.Equal(t, 1, b.srv.Calls("attachments.refresh"))
	require.Len(t, b.srv.Downloads(), 1, "only the fresh URL was downloaded")
}

// A file Discord no longer has: the refresh gives nothing, and the error
// says both.
func TestFetchOfAFileGoneForGood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.fetch(discordAttachment(b.srv.URL()+"/attachments/1/2/gone.txt?ex=ffffffff&is=0&hm=00&"), 1<<20)
	require.ErrorContains(t, err, "HTTP 404")
	require.ErrorContains(t, err, "discord refreshed nothing (the file may be deleted)")
	require.NotContains(t, err.Error(), "hm=")
}

// Stickers' URLs neither expire nor refresh.
func TestStickerURLsAreNotRefreshed(t *testing.T) {
	t.Parallel()
	u, err := url.Parse("https://cdn.discordapp.com/stickers/123.png?ex=0")
	require.NoError(t, err)
	require.False(t, cdn.Expired(u, time.Now()))
}

// discordAttachment is a document attachment at ref.
func discordAttachment(ref string) core.Attachment {
	return core.Attachment{Kind: core.AttachDocument, Ref: ref}
}
