package slack

import (
	"strconv"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/core"
)

// Slack's limits on Block Kit (https://api.slack.com/reference/block-kit),
// besides a section's 3,000 characters (maxSectionText): an actions block
// up to 25 elements; a button's text up to 75 characters, its value up to
// 2,000.
const (
	maxButtons     = 25
	maxButtonLabel = 75
	maxButtonValue = 2000
)

// choiceActionPrefix names a choice's button: action_id "choice_<i>".
const choiceActionPrefix = "choice_"

// chosenMark is put before the label of the choice a tap made, in the
// context block that replaces a closed question's buttons.
const chosenMark = "✓ "

// choiceBlocks shows a message's text with its choices as buttons: text
// (as Slack stores it, escaped) in sections of at most 3,000 characters,
// of type textType (mrkdwn, or plain_text for a part posted without
// markup), then one actions block with a button per choice, its label as
// text and its Data as value. The message's text stays its fallback, for
// notifications. A choice Slack would refuse (no data, data too long) is
// left out; none left, no blocks.
func choiceBlocks(text, textType string, choices []core.Choice) []slack.Block {
	var buttons []slack.BlockElement
	for i, c := range choices {
		if c.Data == "" || len(c.Data) > maxButtonValue || len(buttons) == maxButtons {
			continue
		}
		label := slack.NewTextBlockObject(slack.PlainTextType, buttonLabel(c.Label, c.Data), false, false)
		buttons = append(buttons, slack.NewButtonBlockElement(choiceActionPrefix+strconv.Itoa(i), c.Data, label))
	}
	if len(buttons) == 0 {
		return nil
	}
	var blocks []slack.Block
	for _, part := range core.SplitText(text, maxSectionText) {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(textType, part, false, false), nil, nil))
	}
	return append(blocks, slack.NewActionBlock("", buttons...))
}

// buttonLabel is label cut to Slack's 75 characters; a button needs a
// label, so an empty one shows the data.
func buttonLabel(label, data string) string {
	if label == "" {
		label = data
	}
	if utf8.RuneCountInString(label) <= maxButtonLabel {
		return label
	}
	return string([]rune(label)[:maxButtonLabel-1]) + "…"
}

// withChoices puts choices on the last of posts, the part a user reads
// last, and on the last of its plain posts, should Slack refuse its
// markup.
func withChoices(posts []post, choices []core.Choice) []post {
	if len(choices) == 0 || len(posts) == 0 {
		return posts
	}
	last := &posts[len(posts)-1]
	blocks := choiceBlocks(last.section, slack.MarkdownType, choices)
	if len(blocks) == 0 {
		return posts
	}
	last.buttons = true
	last.opts = append(last.opts, slack.MsgOptionBlocks(blocks...))
	if n := len(last.instead); n > 0 {
		plain := choiceBlocks(last.insteadText[n-1], slack.PlainTextType, choices)
		last.instead[n-1] = append(last.instead[n-1], slack.MsgOptionBlocks(plain...))
	}
	return posts
}
