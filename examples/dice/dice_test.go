package dice_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/examples/dice"
)

// seq returns a Rand that gives the values in order (each below n).
func seq(t *testing.T, values ...int) func(n int) int {
	return func(n int) int {
		require.NotEmpty(t, values, "rolled more dice than expected")
		v := values[0]
		values = values[1:]
		require.Less(t, v, n)
		return v
	}
}

func TestRoll(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		notation string
		rand     []int
		want     dice.Roll
	}{
		{"d20", []int{19}, dice.Roll{Notation: "d20", Rolls: []int{20}, Total: 20}},
		{"2d6+1", []int{0, 4}, dice.Roll{Notation: "2d6+1", Rolls: []int{1, 5}, Modifier: 1, Total: 7}},
		{" 3D8 - 2 ", []int{7, 7, 0}, dice.Roll{Notation: "3d8-2", Rolls: []int{8, 8, 1}, Modifier: -2, Total: 15}},
		{"d%", []int{41}, dice.Roll{Notation: "d%", Rolls: []int{42}, Total: 42}},
	} {
		p := dice.New()
		p.Rand = seq(t, tc.rand...)
		got, err := p.Roll(tc.notation)
		require.NoError(t, err, tc.notation)
		require.Equal(t, tc.want, got, tc.notation)
	}
}

func TestRollRefusesBadNotation(t *testing.T) {
	t.Parallel()
	p := dice.New()
	p.MaxDice, p.MaxSides = 10, 100
	for notation, want := range map[string]string{
		"":                       "is not dice notation",
		"two dice":               "is not dice notation",
		"2d":                     "is not dice notation",
		"2d6+":                   "is not dice notation",
		"d6*2":                   "is not dice notation",
		"0d6":                    "number of dice must be 1 to 10",
		"11d6":                   "number of dice must be 1 to 10",
		"99999999999999999999d6": "number of dice must be 1 to 10",
		"d1":                     "2 to 100 sides",
		"d101":                   "2 to 100 sides",
		"d6+1000001":             "modifier must be within",
	} {
		_, err := p.Roll(notation)
		require.ErrorContains(t, err, want, "%q", notation)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, dice.New().Validate())
	p := dice.New()
	p.MaxDice, p.MaxSides = 0, 1
	err := p.Validate()
	require.ErrorContains(t, err, "max_dice must be 1 to 1000, got 0")
	require.ErrorContains(t, err, "max_sides must be 2 to 1000000, got 1")
}

// TestToolThroughTheModel runs the plugin's tool and layer the way the
// core does, through llm.Client against a fake model: the model is
// offered roll_dice, its call is answered with the roll, and a bad
// notation comes back to it as an error it can act on.
func TestToolThroughTheModel(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(t)
	model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("call_1", "roll_dice", `{"notation":"2d6+1"}`)),
		llmtest.ToolCalls(llmtest.Call("call_2", "roll_dice", `{"notation":"2d0"}`)),
		llmtest.Text("You rolled a 3 and a 5: 9 in all."),
	)
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "test", Model: "m"})
	require.NoError(t, err)

	p := dice.New()
	p.Rand = seq(t, 2, 4)
	require.NoError(t, p.Validate())
	turn := &core.Turn{}
	layers, err := p.PromptLayers(context.Background(), turn)
	require.NoError(t, err)
	require.Len(t, layers, 1)
	require.Equal(t, core.LayerInstructions, layers[0].Level)
	tools, err := p.Tools(context.Background(), turn)
	require.NoError(t, err)

	res, err := client.Run(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: layers[0].Text}, {Role: llm.RoleUser, Content: "roll 2d6+1 for me"}},
		Tools:    tools,
	})
	require.NoError(t, err)
	require.Equal(t, "You rolled a 3 and a 5: 9 in all.", res.Content)

	reqs := model.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, []string{"roll_dice"}, reqs[0].ToolNames())
	require.Contains(t, reqs[0].Messages()[0].Content, "roll_dice tool")
	rolled, ok := reqs[1].ToolMessage("call_1")
	require.True(t, ok)
	require.JSONEq(t, `{"notation":"2d6+1","rolls":[3,5],"modifier":1,"total":9}`, rolled.Content)
	refused, ok := reqs[2].ToolMessage("call_2")
	require.True(t, ok)
	var e struct{ Error string }
	require.NoError(t, json.Unmarshal([]byte(refused.Content), &e))
	require.Contains(t, e.Error, "a die must have 2 to 1000 sides")
	require.True(t, res.ToolCalls[1].IsError)
}
