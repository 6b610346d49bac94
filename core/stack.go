package core

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Session defaults, used when no SessionPolicy plugin says otherwise.
const (
	DefaultSessionGap     = 10 * time.Minute
	DefaultWindowMessages = 50
	DefaultWindowTokens   = 8000
)

// StackLayers asks every PromptContributor among plugins for its layers
// of t and returns them in stack order: by level, then by Order, then in
// plugin order.
func StackLayers(ctx context.Context, plugins []Plugin, t *Turn) ([]PromptLayer, error) {
	var layers []PromptLayer
	for _, p := range plugins {
		pc, ok := p.(PromptContributor)
		if !ok {
			continue
		}
		ls, err := pc.PromptLayers(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", p.Name(), err)
		}
		layers = append(layers, ls...)
	}
	sort.SliceStable(layers, func(i, j int) bool {
		if layers[i].Level != layers[j].Level {
			return layers[i].Level < layers[j].Level
		}
		return layers[i].Order < layers[j].Order
	})
	return layers, nil
}

// SystemPrompt joins the layers' texts, in order, into the system prompt.
func SystemPrompt(layers []PromptLayer) string { return SystemPromptWith(layers, nil) }

// SystemPromptWith is SystemPrompt followed by the turn's notes, built in one
// string: it is held for the whole model call.
func SystemPromptWith(layers []PromptLayer, notes []string) string {
	n := 0
	for _, l := range layers {
		n += len(l.Text) + 2
	}
	for _, note := range notes {
		n += len(note) + 2
	}
	var sys strings.Builder
	sys.Grow(n)
	for _, l := range layers {
		if strings.TrimSpace(l.Text) == "" {
			continue
		}
		if sys.Len() > 0 {
			sys.WriteString("\n\n")
		}
		sys.WriteString(l.Text)
	}
	for _, note := range notes {
		if sys.Len() > 0 {
			sys.WriteString("\n\n")
		}
		sys.WriteString(note)
	}
	return sys.String()
}

// EstimateTokens guesses how many tokens text costs a model: about four
// ASCII characters a token, and a token for each other character (CJK
// text has no spaces and costs about that), plus a message's framing. It
// errs high, so a window stays under a model's real limit.
func EstimateTokens(text string) int {
	ascii, other := 0, 0
	for _, r := range text {
		if r < utf8.RuneSelf {
			ascii++
		} else {
			other++
		}
	}
	return (ascii+3)/4 + other + 4
}
