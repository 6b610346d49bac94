package slacktest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"
)

func TestPostMessageRecordsBlocks(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)

	ch, _, err := tb.api.PostMessage(tb.alice.ID,
		slack.MsgOptionText("A cat", true),
		slack.MsgOptionBlocks(
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "A *cat* &amp; a mat", false, false), nil, nil),
			slack.NewImageBlock("https://example.com/cat.png", "a cat", "", nil),
			slack.NewDividerBlock(),
		))
	require.NoError(t, err)

	sent := tb.srv.WaitSent(t, ch, 1, wait)
	require.Equal(t, "A cat", sent[0].Text, "the notification fallback")
	require.Len(t, sent[0].Blocks, 3)
	section, image, divider := sent[0].Blocks[0], sent[0].Blocks[1], sent[0].Blocks[2]
	require.Equal(t, "section", section.Type)
	require.Equal(t, "mrkdwn", section.TextType)
	require.Equal(t, "A *cat* &amp; a mat", section.Text)
	require.Equal(t, "image", image.Type)
	require.Equal(t, "https://example.com/cat.png", image.ImageURL)
	require.Equal(t, "a cat", image.AltText)
	require.Equal(t, "divider", divider.Type)
	var raw map[string]any
	require.NoError(t, json.Unmarshal(divider.Raw, &raw))
	require.Equal(t, "divider", raw["type"])
}

func TestPostMessageBlockValidation(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	tb.srv.AddUser(tb.alice)
	post := func(blocks ...slack.Block) error {
		_, _, err := tb.api.PostMessage(tb.alice.ID, slack.MsgOptionBlocks(blocks...))
		return err
	}
	section := func(text string) slack.Block {
		return slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil)
	}

	require.NoError(t, post(section(strings.Repeat("я", 3000))), "3000 characters is the limit")
	requireSlackError(t, post(section(strings.Repeat("я", 3001))), "invalid_blocks")
	requireSlackError(t, post(slack.NewImageBlock("ftp://example.com/a.png", "a", "", nil)), "invalid_blocks")
	requireSlackError(t, post(slack.NewImageBlock("https://example.com/a.png", "", "", nil)), "invalid_blocks")
	requireSlackError(t, post(slack.NewImageBlock("https://example.com/a.png", strings.Repeat("a", 2001), "", nil)), "invalid_blocks")
	many := make([]slack.Block, 51)
	for i := range many {
		many[i] = slack.NewDividerBlock()
	}
	requireSlackError(t, post(many...), "invalid_blocks")

	require.Len(t, tb.srv.Sent(tb.srv.DMChannelOf(tb.alice.ID)), 1, "only the valid one")
}
