package slacktest

import (
	"encoding/json"
	"net/url"
	"unicode/utf8"

	"github.com/parleybot/parley/adapters/markup/markuptest"
)

// Slack's limits on blocks.
const (
	maxBlocks      = 50
	maxSectionText = 3000
	maxAltText     = 2000
)

// Block is one layout block of a posted message, as the fake read it.
type Block struct {
	Type string
	// Text is a section's text and TextType its type (mrkdwn or
	// plain_text), as posted (still escaped: &amp; &lt; &gt;).
	Text     string
	TextType string
	// ImageURL and AltText are an image block's.
	ImageURL string
	AltText  string
	// BlockID is the block's block_id: as posted, or one the fake made up
	// when none was given, as Slack does.
	BlockID string
	// Buttons are an actions block's buttons (buttons.go); Context a
	// context block's texts.
	Buttons []Button
	Context []string
	// Raw is the block's JSON as posted.
	Raw json.RawMessage
}

// wireBlock is the part of a block the fake reads.
type wireBlock struct {
	Type string `json:"type"`
	Text *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"text"`
	Fields   []json.RawMessage `json:"fields"`
	ImageURL string            `json:"image_url"`
	AltText  string            `json:"alt_text"`
	BlockID  string            `json:"block_id"`
	Elements []wireElement     `json:"elements"`
}

// readBlocks decodes and checks the blocks argument like Slack: a JSON
// array of at most 50 blocks; a section has text (or fields) of at most
// 3000 characters; an image has an http(s) image_url and an alt_text of
// 1 to 2000 characters; actions and context blocks as buttons.go checks
// them. Anything wrong is invalid_blocks. Other block
// types are recorded unchecked.
func readBlocks(arg string) ([]Block, string) {
	if arg == "" {
		return nil, ""
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(arg), &raw); err != nil {
		return nil, "invalid_blocks_format"
	}
	if len(raw) > maxBlocks {
		return nil, "invalid_blocks"
	}
	out := make([]Block, 0, len(raw))
	for _, r := range raw {
		var w wireBlock
		if err := json.Unmarshal(r, &w); err != nil || w.Type == "" {
			return nil, "invalid_blocks"
		}
		b := Block{Type: w.Type, Raw: r, BlockID: w.BlockID}
		if b.BlockID == "" {
			b.BlockID = randomHex(3)
		}
		switch w.Type {
		case "section":
			if w.Text == nil && len(w.Fields) == 0 {
				return nil, "invalid_blocks"
			}
			if w.Text != nil {
				n := utf8.RuneCountInString(w.Text.Text)
				if n == 0 || n > maxSectionText || (w.Text.Type != "mrkdwn" && w.Text.Type != "plain_text") {
					return nil, "invalid_blocks"
				}
				b.Text, b.TextType = w.Text.Text, w.Text.Type
			}
		case "image":
			u, err := url.Parse(w.ImageURL)
			n := utf8.RuneCountInString(w.AltText)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || n == 0 || n > maxAltText {
				return nil, "invalid_blocks"
			}
			b.ImageURL, b.AltText = w.ImageURL, w.AltText
		case "actions":
			buttons, ok := readButtons(w.Elements)
			if !ok {
				return nil, "invalid_blocks"
			}
			b.Buttons = buttons
		case "context":
			texts, ok := readContext(w.Elements)
			if !ok {
				return nil, "invalid_blocks"
			}
			b.Context = texts
		}
		out = append(out, b)
	}
	return out, ""
}

// Shown is what a user sees of the message's text, read the way Slack
// reads it (see markuptest.Slack; mrkdwn unless the bot turned it off).
// With blocks, Slack shows them instead and the text only in
// notifications.
func (m SentMessage) Shown() markuptest.Rendered { return markuptest.Slack(m.Text, m.Mrkdwn) }

// Shown is what a user sees of a section's text.
func (b Block) Shown() markuptest.Rendered { return markuptest.Slack(b.Text, b.TextType == "mrkdwn") }
