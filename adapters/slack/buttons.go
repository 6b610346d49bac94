package slack

import (
	"github.com/slack-go/slack"

	"github.com/parleybot/parley/adapters/slack/blocks"
	"github.com/parleybot/parley/core"
)

// withChoices puts choices on the last of posts, the part a user reads
// last, and on the last of its plain posts, should Slack refuse its
// markup.
func withChoices(posts []post, choices []core.Choice) []post {
	if len(choices) == 0 || len(posts) == 0 {
		return posts
	}
	last := &posts[len(posts)-1]
	bs := blocks.Choices(last.section, slack.MarkdownType, choices)
	if len(bs) == 0 {
		return posts
	}
	last.buttons = true
	last.opts = append(last.opts, slack.MsgOptionBlocks(bs...))
	if n := len(last.instead); n > 0 {
		plain := blocks.Choices(last.insteadText[n-1], slack.PlainTextType, choices)
		last.instead[n-1] = append(last.instead[n-1], slack.MsgOptionBlocks(plain...))
	}
	return posts
}
