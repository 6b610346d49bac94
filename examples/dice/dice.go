// Package dice is a Parley plugin, written outside the Parley module as an
// example of an out-of-tree plugin: it gives the model a roll_dice tool
// and tells it, in a prompt layer, that it can roll dice for games. It
// registers itself as "dice" (config section plugins.dice); a binary gets
// it by importing the package next to github.com/parleybot/parley/app:
//
//	package main
//
//	import (
//		"github.com/parleybot/parley/app"
//		_ "github.com/parleybot/parley/examples/dice"
//		_ "github.com/parleybot/parley/standard"
//	)
//
//	func main() { app.Main() }
package dice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

func init() {
	core.RegisterPlugin(core.PluginInfo{Name: "dice", New: func() core.Plugin { return New() }})
}

// Interface guards.
var (
	_ core.Plugin            = (*Plugin)(nil)
	_ core.Validator         = (*Plugin)(nil)
	_ core.ToolProvider      = (*Plugin)(nil)
	_ core.PromptContributor = (*Plugin)(nil)
)

// Bounds of the config.
const (
	maxDiceLimit  = 1000
	maxSidesLimit = 1_000_000
	maxModifier   = 1_000_000
)

// Plugin offers roll_dice. Its exported yaml-tagged fields are its config.
type Plugin struct {
	// MaxDice is the most dice one roll may throw, 1 to 1000 (default 100).
	MaxDice int `yaml:"max_dice"`
	// MaxSides is the most sides a die may have, 2 to 1000000 (default 1000).
	MaxSides int `yaml:"max_sides"`

	// Rand returns a number from 0 to n-1. New sets math/rand/v2's IntN;
	// tests set their own. It is not config.
	Rand func(n int) int `yaml:"-"`
}

// New returns the plugin with its defaults.
func New() *Plugin {
	return &Plugin{MaxDice: 100, MaxSides: 1000, Rand: rand.IntN}
}

// Name is the plugin's registered name.
func (p *Plugin) Name() string { return "dice" }

// Validate checks the bounds (the host names the plugin in its errors).
func (p *Plugin) Validate() error {
	var errs []error
	if p.MaxDice < 1 || p.MaxDice > maxDiceLimit {
		errs = append(errs, fmt.Errorf("max_dice must be 1 to %d, got %d", maxDiceLimit, p.MaxDice))
	}
	if p.MaxSides < 2 || p.MaxSides > maxSidesLimit {
		errs = append(errs, fmt.Errorf("max_sides must be 2 to %d, got %d", maxSidesLimit, p.MaxSides))
	}
	if p.Rand == nil {
		errs = append(errs, errors.New("no source of randomness (Rand is nil)"))
	}
	return errors.Join(errs...)
}

// instructions is the plugin's part of L1.
const instructions = `## Dice
You can roll dice with the roll_dice tool, for games or whenever they ask for a roll ("roll a d20", "2d6+3"). Never make up a result: call the tool, then tell them each die and the total it returned.`

// PromptLayers adds the dice instructions to L1.
func (p *Plugin) PromptLayers(_ context.Context, _ *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerInstructions, Name: "dice", Text: instructions}}, nil
}

// Tools offers roll_dice.
func (p *Plugin) Tools(_ context.Context, _ *core.Turn) ([]llm.Tool, error) {
	return []llm.Tool{{
		Name:        "roll_dice",
		Description: "Roll dice and get each die and the total. notation is NdS, optionally +M or -M: \"d20\", \"2d6+1\", \"4d8-2\", \"d%\" (a d100).",
		Parameters: json.RawMessage(`{"type":"object","properties":{
			"notation":{"type":"string","description":"dice to roll, e.g. 2d6+1"}},
			"required":["notation"],"additionalProperties":false}`),
		Call: p.call,
	}}, nil
}

// Roll is the result of a roll, as the model gets it.
type Roll struct {
	Notation string `json:"notation"`
	Rolls    []int  `json:"rolls"`
	Modifier int    `json:"modifier"`
	Total    int    `json:"total"`
}

// call runs roll_dice. An error goes back to the model as the tool's
// result, so it can fix the notation or tell the user.
func (p *Plugin) call(_ context.Context, raw json.RawMessage) (string, error) {
	var args struct {
		Notation string `json:"notation"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		return "", fmt.Errorf(`roll_dice: %v (want {"notation": "2d6+1"})`, err)
	}
	r, err := p.Roll(args.Notation)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(r)
	return string(out), err
}

// notation is NdS with an optional +M or -M; "d%" is a d100.
var notation = regexp.MustCompile(`^(\d*)d(\d+|%)([+-]\d+)?$`)

// Roll parses notation and rolls it.
func (p *Plugin) Roll(s string) (Roll, error) {
	clean := strings.ToLower(strings.Join(strings.Fields(s), ""))
	m := notation.FindStringSubmatch(clean)
	if m == nil {
		return Roll{}, fmt.Errorf("roll_dice: %q is not dice notation: want NdS with an optional +M or -M, like 2d6+1 or d20", s)
	}
	count, sides, mod := atoi(m[1], 1), 100, atoi(m[3], 0)
	if m[2] != "%" {
		sides = atoi(m[2], 0)
	}
	switch {
	case count < 1 || count > p.MaxDice:
		return Roll{}, fmt.Errorf("roll_dice: %q: the number of dice must be 1 to %d", s, p.MaxDice)
	case sides < 2 || sides > p.MaxSides:
		return Roll{}, fmt.Errorf("roll_dice: %q: a die must have 2 to %d sides", s, p.MaxSides)
	case mod < -maxModifier || mod > maxModifier:
		return Roll{}, fmt.Errorf("roll_dice: %q: the modifier must be within ±%d", s, maxModifier)
	}
	r := Roll{Notation: clean, Rolls: make([]int, count), Modifier: mod, Total: mod}
	for i := range r.Rolls {
		r.Rolls[i] = 1 + p.Rand(sides)
		r.Total += r.Rolls[i]
	}
	return r, nil
}

// atoi reads a number, def for "", and one no roll accepts for a number
// too large to read.
func atoi(s string, def int) int {
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return math.MinInt
	}
	return n
}
