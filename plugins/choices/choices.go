// Package choices is the plugin that lets the model ask with buttons:
// tool offer_choices {question, choices} sends the question after the
// turn's reply with a button per choice (core/choices.go); the user's tap
// comes back as their next message, its text the choice. It has no
// settings beyond enabled (plugins.choices).
package choices

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "choices", New: func() core.Plugin { return New() }})
}

// maxQuestion bounds a question's text, in characters.
const maxQuestion = 500

// Plugin offers offer_choices.
type Plugin struct{}

// Interface guards.
var (
	_ core.Plugin       = (*Plugin)(nil)
	_ core.ToolProvider = (*Plugin)(nil)
)

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "choices" }

// Tools offers offer_choices, bound to the turn: the question waits on it
// until the reply has gone.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{{
		Name: "offer_choices",
		Description: fmt.Sprintf("Ask the user a question they answer with one tap: it is sent after your reply with a button per choice "+
			"(%d to %d choices, each at most %d characters). Their choice comes back as their next message. Use it when the answer is one of a few.",
			core.MinChoices, core.MaxChoices, core.MaxChoiceLabel),
		Parameters: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{
			"question":{"type":"string","description":"the question, as the user reads it"},
			"choices":{"type":"array","items":{"type":"string","maxLength":%d},"minItems":%d,"maxItems":%d}},
			"required":["question","choices"],"additionalProperties":false}`, core.MaxChoiceLabel, core.MinChoices, core.MaxChoices)),
		Call: func(_ context.Context, args json.RawMessage) (string, error) {
			q, err := parse(args)
			if err != nil {
				return "", err
			}
			t.Question = q
			return "The question will be sent after your reply, with a button for each choice. Do not repeat the choices in your reply.", nil
		},
	}}, nil
}

// parse checks the model's arguments: a bad call goes back to the model
// as a tool error saying what to fix.
func parse(raw json.RawMessage) (*core.Question, error) {
	var a struct {
		Question string   `json:"question"`
		Choices  []string `json:"choices"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return nil, fmt.Errorf("offer_choices: %v (want {\"question\": string, \"choices\": [string, …]})", err)
	}
	q := &core.Question{Text: strings.TrimSpace(a.Question)}
	switch {
	case q.Text == "":
		return nil, fmt.Errorf("offer_choices: question is empty")
	case utf8.RuneCountInString(q.Text) > maxQuestion:
		return nil, fmt.Errorf("offer_choices: question is over %d characters", maxQuestion)
	case len(a.Choices) < core.MinChoices || len(a.Choices) > core.MaxChoices:
		return nil, fmt.Errorf("offer_choices: give %d to %d choices, not %d", core.MinChoices, core.MaxChoices, len(a.Choices))
	}
	seen := map[string]bool{}
	for i, c := range a.Choices {
		c = strings.Join(strings.Fields(c), " ")
		switch {
		case c == "":
			return nil, fmt.Errorf("offer_choices: choice %d is empty", i+1)
		case utf8.RuneCountInString(c) > core.MaxChoiceLabel:
			return nil, fmt.Errorf("offer_choices: choice %d (%q) is over %d characters", i+1, c, core.MaxChoiceLabel)
		case seen[strings.ToLower(c)]:
			return nil, fmt.Errorf("offer_choices: choice %d (%q) is given twice", i+1, c)
		}
		seen[strings.ToLower(c)] = true
		q.Choices = append(q.Choices, c)
	}
	return q, nil
}
