package controltokens

import (
	"context"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/modeltext"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "control_tokens", New: func() core.Plugin { return New() }})
}

// Plugin acts on the control tokens of the model's output
// (modeltext.ParseTokens has the rules); it has no settings beyond enabled
// (plugins.control_tokens). Disabled, the core still strips the tokens,
// and nothing acts on them.
type Plugin struct{}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
	_ core.OutputProcessor   = (*Plugin)(nil)
)

// New returns the plugin.
func New() *Plugin { return &Plugin{} }

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "control_tokens" }

// PromptLayers explains <SILENCE> and <WANT_MORE> in L1 (<PROACTIVE> is
// the proactive plugin's to explain).
func (p *Plugin) PromptLayers(context.Context, *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerInstructions, Name: "control_tokens", Text: instructions}}, nil
}

const instructions = `## Silence and saying more
- If the best answer is to say nothing (they said goodnight, a reply would only interrupt), answer exactly <SILENCE> and nothing else.
- If you have more to say right after this message, end it with a last line <WANT_MORE>: you will get to write one more message.
- These tokens are for you only: they are removed before anything is sent. Never put them in the middle of your text.`

// ProcessOutput reads the tokens out of the reply (its reasoning already
// taken out by the core): the text sent keeps none of them, and what they ask for is set on the reply. A continuation
// honours no second <WANT_MORE>.
func (p *Plugin) ProcessOutput(_ context.Context, t *core.Turn, r *core.Reply) error {
	parsed := modeltext.ParseTokens(r.Text)
	r.Text = parsed.Text
	r.Silent = r.Silent || parsed.Silence
	r.Notes = append(r.Notes, parsed.Notes...)
	if parsed.WantMore {
		if t.Continuation {
			r.Notes = append(r.Notes, "ignored <WANT_MORE>: a turn continues at most once")
		} else {
			r.Continue = true
		}
	}
	if pr := parsed.Proactive; pr != nil {
		r.Proactive = &core.ProactiveRequest{Delay: pr.Delay, Reason: pr.Reason}
	}
	return nil
}
