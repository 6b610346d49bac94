package slacktest

import (
	"encoding/json"
	"unicode/utf8"
)

// Slack's limits on an actions block and its buttons, and on a context
// block (https://api.slack.com/reference/block-kit/blocks).
const (
	maxActionElements  = 25
	maxButtonText      = 75
	maxActionID        = 255
	maxButtonValue     = 2000
	maxContextElements = 10
)

// Button is one button of an actions block, as the user sees it: its
// label (text) and what a tap on it carries back (action_id and value).
type Button struct {
	Label    string
	ActionID string
	Value    string
}

// wireElement is the part of a block element the fake reads: a button's
// text is an object, a context element's text a string.
type wireElement struct {
	Type     string          `json:"type"`
	Text     json.RawMessage `json:"text"`
	ActionID string          `json:"action_id"`
	Value    string          `json:"value"`
}

// readButtons reads an actions block's elements as Slack checks them: 1
// to 25; every one a button (other elements are not modelled) with
// plain_text text of 1 to 75 characters, an action_id of at most 255
// characters unique in the block, and a value of at most 2000.
func readButtons(elements []wireElement) ([]Button, bool) {
	if len(elements) == 0 || len(elements) > maxActionElements {
		return nil, false
	}
	seen := map[string]bool{}
	out := make([]Button, 0, len(elements))
	for _, e := range elements {
		var text struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if e.Type != "button" || json.Unmarshal(e.Text, &text) != nil || text.Type != "plain_text" {
			return nil, false
		}
		n := utf8.RuneCountInString(text.Text)
		if n == 0 || n > maxButtonText || len(e.ActionID) > maxActionID || len(e.Value) > maxButtonValue {
			return nil, false
		}
		if e.ActionID != "" {
			if seen[e.ActionID] {
				return nil, false
			}
			seen[e.ActionID] = true
		}
		out = append(out, Button{Label: text.Text, ActionID: e.ActionID, Value: e.Value})
	}
	return out, true
}

// readContext reads a context block's elements: 1 to 10, the text ones
// (mrkdwn, plain_text) non-empty; images are allowed and not read.
func readContext(elements []wireElement) ([]string, bool) {
	if len(elements) == 0 || len(elements) > maxContextElements {
		return nil, false
	}
	var out []string
	for _, e := range elements {
		switch e.Type {
		case "mrkdwn", "plain_text":
			var text string
			if json.Unmarshal(e.Text, &text) != nil || text == "" {
				return nil, false
			}
			out = append(out, text)
		case "image":
		default:
			return nil, false
		}
	}
	return out, true
}

// buttonsOf are the buttons of blocks' actions blocks, in order.
func buttonsOf(blocks []Block) []Button {
	var out []Button
	for _, b := range blocks {
		out = append(out, b.Buttons...)
	}
	return out
}

// contextOf are the texts of blocks' context blocks, in order.
func contextOf(blocks []Block) []string {
	var out []string
	for _, b := range blocks {
		out = append(out, b.Context...)
	}
	return out
}

// Buttons are the buttons the message shows now, in order.
func (m BotMessage) Buttons() []Button { return buttonsOf(m.Blocks) }

// Context are the texts of the message's context blocks now (such as
// the "✓ Tea" a closed question shows).
func (m BotMessage) Context() []string { return contextOf(m.Blocks) }

// Buttons are the buttons the message shows now, in order.
func (m SentMessage) Buttons() []Button { return buttonsOf(m.Blocks) }
