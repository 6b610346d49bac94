package mood

import (
	"context"
	"fmt"

	"github.com/parleybot/parley/core"
)

// PromptLayers writes the mood model into L1 and the mood the session
// starts with into L2.
func (p *Plugin) PromptLayers(ctx context.Context, t *core.Turn) ([]core.PromptLayer, error) {
	m, err := p.initial(ctx, t)
	if err != nil {
		return nil, err
	}
	return []core.PromptLayer{
		{Level: core.LayerInstructions, Name: "mood", Text: fmt.Sprintf(instructions, num(p.MinValence))},
		{Level: core.LayerSession, Name: "mood", Text: fmt.Sprintf("## Your mood\n- At the start of this session: valence %s (%s), arousal %s (%s).",
			num(m.Valence), describeValence(m.Valence), num(m.Arousal), describeArousal(m.Arousal))},
	}, nil
}

const instructions = `## Mood
- You have a mood: valence from -1 (unpleasant) to 1 (pleasant) and arousal from -1 (calm, sleepy) to 1 (excited). Let it colour your tone a little, never your care for the person.
- When the conversation really moves you, call set_mood with the new values and a short reason. Small steps; do not call it every turn.
- Your valence never goes below %s: you can be quiet, tired or sad, never cold, rude or hostile.`

func describeValence(v float64) string {
	switch {
	case v <= -0.5:
		return "low"
	case v < -0.1:
		return "a bit down"
	case v <= 0.1:
		return "neutral"
	case v < 0.5:
		return "pleasant"
	default:
		return "happy"
	}
}

func describeArousal(a float64) string {
	switch {
	case a <= -0.5:
		return "sleepy"
	case a < -0.1:
		return "calm"
	case a <= 0.1:
		return "even"
	case a < 0.5:
		return "lively"
	default:
		return "excited"
	}
}
