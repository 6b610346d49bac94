// Package reactions is the plugin that lets the model react: tool react
// {emoji} puts an emoji on the user's latest message, where the platform
// has reactions (core.Reactor). It has no settings beyond enabled
// (plugins.reactions).
package reactions

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
	core.RegisterPlugin(core.PluginInfo{Name: "reactions", New: func() core.Plugin { return New() }})
}

// maxEmoji bounds an emoji argument, in characters (a flag or a family
// is several code points).
const maxEmoji = 16

// Plugin offers react.
type Plugin struct{}

// Interface guards.
var (
	_ core.Plugin       = (*Plugin)(nil)
	_ core.ToolProvider = (*Plugin)(nil)
)

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "reactions" }

// Tools offers react when the turn's platform has reactions.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	if t.React == nil {
		return nil, nil
	}
	react := t.React
	return []llm.Tool{{
		Name:        "react",
		Description: "React to the person's latest message with one emoji (👍, ❤️, 😂, 🎉…), as a friend would, instead of or beside a reply.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"emoji":{"type":"string","description":"one emoji"}},
			"required":["emoji"],"additionalProperties":false}`),
		Call: func(ctx context.Context, raw json.RawMessage) (string, error) {
			var a struct {
				Emoji string `json:"emoji"`
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&a); err != nil {
				return "", fmt.Errorf("react: %v (want {\"emoji\": string})", err)
			}
			e := strings.TrimSpace(a.Emoji)
			if e == "" || utf8.RuneCountInString(e) > maxEmoji || strings.ContainsAny(e, " \t\n") {
				return "", fmt.Errorf("react: emoji must be one emoji, got %q", a.Emoji)
			}
			if err := react(ctx, e); err != nil {
				return "", fmt.Errorf("react: %w", err)
			}
			return "Reacted with " + e + ".", nil
		},
	}}, nil
}
