// Package blocks builds the Slack Block Kit of a question with choices:
// the buttons of a message (Choices) and the blocks it shows once a tap
// chose (Closed). It holds no state and makes no calls: the adapter posts
// what it builds.
package blocks

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/slack-go/slack"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/textsplit"
)

// MaxSectionText is a section block's text limit, in characters.
const MaxSectionText = 3000

// Slack's limits on Block Kit (https://api.slack.com/reference/block-kit),
// besides a section's 3,000 characters (MaxSectionText): an actions block
// up to 25 elements; a button's text up to 75 characters, its value up to
// 2,000.
const (
	MaxButtons     = 25
	MaxButtonLabel = 75
	MaxButtonValue = 2000
)

// ActionPrefix names a choice's button: action_id "choice_<i>".
const ActionPrefix = "choice_"

// ChosenMark is put before the label of the choice a tap made, in the
// context block that replaces a closed question's buttons.
const ChosenMark = "✓ "

// Choices shows a message's text with its choices as buttons: text
// (as Slack stores it, escaped) in sections of at most 3,000 characters,
// of type textType (mrkdwn, or plain_text for a part posted without
// markup), then one actions block with a button per choice, its label as
// text and its Data as value. The message's text stays its fallback, for
// notifications. A choice Slack would refuse (no data, data too long) is
// left out; none left, no blocks.
func Choices(text, textType string, choices []core.Choice) []slack.Block {
	var buttons []slack.BlockElement
	for i, c := range choices {
		if c.Data == "" || len(c.Data) > MaxButtonValue || len(buttons) == MaxButtons {
			continue
		}
		label := slack.NewTextBlockObject(slack.PlainTextType, ButtonLabel(c.Label, c.Data), false, false)
		buttons = append(buttons, slack.NewButtonBlockElement(ActionPrefix+strconv.Itoa(i), c.Data, label))
	}
	if len(buttons) == 0 {
		return nil
	}
	var blocks []slack.Block
	for _, part := range textsplit.Split(text, MaxSectionText) {
		blocks = append(blocks, slack.NewSectionBlock(slack.NewTextBlockObject(textType, part, false, false), nil, nil))
	}
	return append(blocks, slack.NewActionBlock("", buttons...))
}

// ButtonLabel is label cut to Slack's 75 characters; a button needs a
// label, so an empty one shows the data.
func ButtonLabel(label, data string) string {
	if label == "" {
		label = data
	}
	if utf8.RuneCountInString(label) <= MaxButtonLabel {
		return label
	}
	return string([]rune(label)[:MaxButtonLabel-1]) + "…"
}

// rawBlock is a block as the message carried it, sent back unchanged.
type rawBlock json.RawMessage

func (rawBlock) BlockType() slack.MessageBlockType { return "" }
func (rawBlock) ID() string                        { return "" }

// MarshalJSON is the block as it came.
func (b rawBlock) MarshalJSON() ([]byte, error) { return b, nil }

// Closed are a question's blocks once a tap chose label: each
// actions block (its buttons) becomes a context block "✓ label", the rest
// stays, so the user sees what they answered and has nothing left to
// tap. A message without blocks (none came with the tap) shows its text
// and the mark.
func Closed(text string, shown []json.RawMessage, label string) []slack.Block {
	mark := slack.NewContextBlock("", slack.NewTextBlockObject(slack.PlainTextType, ChosenMark+label, false, false))
	var out []slack.Block
	marked := false
	for _, raw := range shown {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &head) != nil {
			continue
		}
		if head.Type == string(slack.MBTAction) {
			if !marked {
				out, marked = append(out, mark), true
			}
			continue
		}
		out = append(out, rawBlock(raw))
	}
	if !marked {
		out = nil
		for _, part := range textsplit.Split(text, MaxSectionText) {
			out = append(out, slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, part, false, false), nil, nil))
		}
		out = append(out, mark)
	}
	return out
}
