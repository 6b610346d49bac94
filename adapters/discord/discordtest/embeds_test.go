package discordtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"
)

func TestEmbedsAreRecorded(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "show me")

	m, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{
		Embeds: []*discordgo.MessageEmbed{{
			Title:       "Cat",
			Description: "A **cat**.",
			Image:       &discordgo.MessageEmbedImage{URL: "https://example.com/cat.png"},
			Thumbnail:   &discordgo.MessageEmbedThumbnail{URL: "attachment://t.png"},
		}},
	})
	require.NoError(t, err)
	require.Len(t, m.Embeds, 1, "the answer carries the embed back")
	require.Equal(t, "https://example.com/cat.png", m.Embeds[0].Image.URL)

	sent := tb.srv.WaitSent(t, chID, 1, wait)
	require.Len(t, sent[0].Embeds, 1)
	e := sent[0].Embeds[0]
	require.Equal(t, "Cat", e.Title)
	require.Equal(t, "A **cat**.", e.Description)
	require.Equal(t, "https://example.com/cat.png", e.ImageURL)
	require.Equal(t, "attachment://t.png", e.ThumbnailURL)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(e.Raw, &raw))
	require.Equal(t, "rich", raw["type"])
}

func TestEmbedValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	send := func(embeds ...*discordgo.MessageEmbed) error {
		_, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{Embeds: embeds})
		return err
	}

	_, err := c.dg.ChannelMessageSendComplex(chID, &discordgo.MessageSend{Embeds: []*discordgo.MessageEmbed{{Description: strings.Repeat("д", 4096)}}})
	require.NoError(t, err, "4096 code points is the limit")

	re := requireRESTError(t, send(&discordgo.MessageEmbed{Description: strings.Repeat("д", 4097)}), http.StatusBadRequest, 50035)
	require.JSONEq(t, `{"embeds":{"0":{"description":{"_errors":[{"code":"BASE_TYPE_MAX_LENGTH","message":"Must be 4096 or fewer in length."}]}}}}`,
		formErrors(t, re))
	re = requireRESTError(t, send(&discordgo.MessageEmbed{Image: &discordgo.MessageEmbedImage{URL: "ftp://example.com/a.png"}}), http.StatusBadRequest, 50035)
	require.Contains(t, formErrors(t, re), `"image":{"url"`)
	requireRESTError(t, send(&discordgo.MessageEmbed{Title: strings.Repeat("t", 257)}), http.StatusBadRequest, 50035)
	requireRESTError(t, send(
		&discordgo.MessageEmbed{Description: strings.Repeat("a", 4000)},
		&discordgo.MessageEmbed{Description: strings.Repeat("b", 2001)},
	), http.StatusBadRequest, 50035)
	many := make([]*discordgo.MessageEmbed, 11)
	for i := range many {
		many[i] = &discordgo.MessageEmbed{Title: "x"}
	}
	requireRESTError(t, send(many...), http.StatusBadRequest, 50035)

	require.Len(t, tb.srv.Sent(chID), 1, "only the valid one")
}

// formErrors is the "errors" object of an Invalid Form Body answer.
func formErrors(t *testing.T, re *discordgo.RESTError) string {
	t.Helper()
	var body struct {
		Errors json.RawMessage `json:"errors"`
	}
	require.NoError(t, json.Unmarshal(re.ResponseBody, &body))
	return string(body.Errors)
}
