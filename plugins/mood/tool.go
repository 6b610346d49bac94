package mood

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// maxReason bounds a set_mood reason, in runes.
const maxReason = 200

// Tools offers set_mood, bound to the turn's conversation.
func (p *Plugin) Tools(_ context.Context, t *core.Turn) ([]llm.Tool, error) {
	conv, rec := t.Conversation.ID, t.Record.ID
	return []llm.Tool{{
		Name:        "set_mood",
		Description: "Change your current mood when the conversation moves you. valence: -1 unpleasant … 1 pleasant; arousal: -1 calm … 1 excited.",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"valence":{"type":"number","minimum":-1,"maximum":1},
			"arousal":{"type":"number","minimum":-1,"maximum":1},
			"reason":{"type":"string","description":"why, in a few words"}},
			"required":["valence","arousal"],"additionalProperties":false}`),
		Call: func(ctx context.Context, args json.RawMessage) (string, error) {
			return p.setMood(ctx, conv, rec, args)
		},
	}}, nil
}

type setMoodArgs struct {
	Valence *float64 `json:"valence"`
	Arousal *float64 `json:"arousal"`
	Reason  string   `json:"reason"`
}

// setMood validates the model's arguments (a bad call goes back to the
// model as a tool error), clamps valence at the floor and stores the mood.
func (p *Plugin) setMood(ctx context.Context, conv, rec int64, raw json.RawMessage) (string, error) {
	var a setMoodArgs
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", fmt.Errorf("set_mood: %v (want {\"valence\": number, \"arousal\": number, \"reason\": string})", err)
	}
	switch {
	case a.Valence == nil || a.Arousal == nil:
		return "", errors.New("set_mood: valence and arousal are both required")
	case bad(*a.Valence) || bad(*a.Arousal):
		return "", fmt.Errorf("set_mood: valence and arousal must be between -1 and 1, got %g and %g", *a.Valence, *a.Arousal)
	}
	m := p.clamp(Point{Valence: *a.Valence, Arousal: *a.Arousal})
	reason := strings.TrimSpace(a.Reason)
	if r := []rune(reason); len(r) > maxReason {
		reason = string(r[:maxReason])
	}
	pt := &core.MoodPoint{ConversationID: conv, Valence: m.Valence, Arousal: m.Arousal, Source: "set_mood",
		Reason: reason, CreatedAt: p.clock.Now().UTC()}
	if rec != 0 {
		pt.SessionRecordID = &rec
	}
	if err := p.record(ctx, pt); err != nil {
		return "", fmt.Errorf("set_mood: storing the mood failed: %w", err)
	}
	out := fmt.Sprintf(`{"valence":%s,"arousal":%s}`, num(m.Valence), num(m.Arousal))
	if m.Valence != *a.Valence {
		out = fmt.Sprintf(`{"valence":%s,"arousal":%s,"note":"valence is kept at or above %s"}`, num(m.Valence), num(m.Arousal), num(p.MinValence))
	}
	return out, nil
}

func bad(v float64) bool { return math.IsNaN(v) || v < -1 || v > 1 }
