package discordtest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
)

// dmWith opens alice's DM channel through c, as the adapter does.
func dmWith(t *testing.T, tb *testBundle, c *client) string {
	t.Helper()
	tb.srv.AddUser(tb.alice)
	ch, err := c.dg.UserChannelCreate(tb.alice.ID)
	require.NoError(t, err)
	return ch.ID
}

func TestBotUploadsFilesAsDiscordStoresThem(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.newClient(t, 0)
	ch := dmWith(t, tb, c)
	m, err := c.dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Content: "your export", Files: []*discordgo.File{
		{Name: "export.json", ContentType: "application/json", Reader: bytes.NewReader([]byte(`{"a":1}`))},
		{Name: "cat.png", Reader: bytes.NewReader([]byte("not really a png"))},
	}})
	require.NoError(t, err)
	require.Len(t, m.Attachments, 2, "the answer lists the attachments")
	require.Equal(t, "export.json", m.Attachments[0].Filename)
	require.Equal(t, "application/json", m.Attachments[0].ContentType)
	require.Equal(t, 7, m.Attachments[0].Size)
	require.Equal(t, "image/png", m.Attachments[1].ContentType, "from the extension when the part names none")
	require.NotEmpty(t, m.Attachments[0].ID)

	sent := tb.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, "your export", sent[0].Content)
	require.Len(t, sent[0].Attachments, 2)
	require.Equal(t, []byte(`{"a":1}`), sent[0].Attachments[0].Data)
	require.Equal(t, m.Attachments[0].URL, sent[0].Attachments[0].URL)
	status, _, body := get(t, sent[0].Attachments[1].URL)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "not really a png", string(body), "the bytes are downloadable")
}

func TestBotUploadOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.newClient(t, 0)
	ch := dmWith(t, tb, c)
	big := make([]byte, discordtest.MaxUpload/2+1)
	_, err := c.dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Files: []*discordgo.File{
		{Name: "a.bin", Reader: bytes.NewReader(big)}, {Name: "b.bin", Reader: bytes.NewReader(big)},
	}})
	requireRESTError(t, err, http.StatusRequestEntityTooLarge, 40005)
	require.Empty(t, tb.srv.Sent(ch))
}

// voiceSend is a voice message's payload_json with the attachment
// metadata discordgo's MessageSend cannot carry.
type voiceSend struct {
	Flags       int              `json:"flags"`
	Attachments []map[string]any `json:"attachments,omitempty"`
}

func postVoice(c *client, ch string, payload voiceSend, files ...*discordgo.File) ([]byte, error) {
	ct, body, err := discordgo.MultipartBodyWithJSON(payload, files)
	if err != nil {
		return nil, err
	}
	ep := discordgo.EndpointChannelMessages(ch)
	return c.dg.RequestRaw(http.MethodPost, ep, ct, body, ep, 0)
}

func TestBotVoiceMessageNeedsOneAudioFileWithMetadata(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.newClient(t, 0)
	ch := dmWith(t, tb, c)
	ogg := func() *discordgo.File {
		return &discordgo.File{Name: "reply.ogg", ContentType: "audio/ogg", Reader: bytes.NewReader([]byte("OggS..."))}
	}
	voice := int(discordgo.MessageFlagsIsVoiceMessage)

	_, err := c.dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Flags: discordgo.MessageFlagsIsVoiceMessage, Files: []*discordgo.File{ogg()}})
	requireRESTError(t, err, http.StatusBadRequest, 50160)
	_, err = postVoice(c, ch, voiceSend{Flags: voice}, ogg(), ogg())
	requireRESTError(t, err, http.StatusBadRequest, 50159)
	_, err = postVoice(c, ch, voiceSend{Flags: voice, Attachments: []map[string]any{{"id": 0, "duration_secs": 1.5, "waveform": "AAAA"}}},
		&discordgo.File{Name: "notes.txt", ContentType: "text/plain", Reader: bytes.NewReader([]byte("x"))})
	requireRESTError(t, err, http.StatusBadRequest, 50159)
	require.Empty(t, tb.srv.Sent(ch))

	raw, err := postVoice(c, ch, voiceSend{Flags: voice, Attachments: []map[string]any{{"id": 0, "duration_secs": 2.5, "waveform": "gICA"}}}, ogg())
	require.NoError(t, err)
	var m discordgo.Message
	require.NoError(t, json.Unmarshal(raw, &m))
	require.Equal(t, discordgo.MessageFlagsIsVoiceMessage, m.Flags&discordgo.MessageFlagsIsVoiceMessage)
	require.Len(t, m.Attachments, 1)
	require.InDelta(t, 2.5, m.Attachments[0].DurationSecs, 1e-9)
	require.Equal(t, "gICA", m.Attachments[0].Waveform)
	sent := tb.srv.Sent(ch)
	require.Len(t, sent, 1)
	require.Equal(t, voice, sent[0].Flags)
	require.InDelta(t, 2.5, sent[0].Attachments[0].DurationSecs, 1e-9)
	require.Equal(t, []byte("OggS..."), sent[0].Attachments[0].Data)
	require.True(t, sent[0].Attachments[0].Voice)
	require.Equal(t, "voice", sent[0].Attachments[0].Shown(), "a voice message shows as a voice note")
}

func TestBotAttachmentsShowAsTheirTypeSays(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.newClient(t, 0)
	ch := dmWith(t, tb, c)
	file := func(name, ct string) *discordgo.File {
		return &discordgo.File{Name: name, ContentType: ct, Reader: bytes.NewReader([]byte("x"))}
	}
	_, err := c.dg.ChannelMessageSendComplex(ch, &discordgo.MessageSend{Files: []*discordgo.File{
		file("a.png", ""), file("b.svg", "image/svg+xml"), file("c.ogg", "audio/ogg"), file("d.mp4", "video/mp4"),
		file("e.txt", "text/plain; charset=utf-8"),
	}})
	require.NoError(t, err)
	sent := tb.srv.Sent(ch)
	require.Len(t, sent, 1)
	var shown []string
	for _, a := range sent[0].Attachments {
		require.False(t, a.Voice, "no voice message without its flag")
		shown = append(shown, a.Shown())
	}
	require.Equal(t, []string{"image", "file", "audio", "video", "file"}, shown,
		"a picture inline, an SVG as a file, audio and video with a player, text as a file; audio without the flag is no voice note")
}
