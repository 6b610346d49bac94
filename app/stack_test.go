package app

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGoldenPromptStack renders the whole prompt of a turn for fixed
// inputs (a persona, two facts, two summarised sessions, a mood set in the
// last session, a bad tool call) and compares it with
// testdata/prompt_stack.golden, which is reviewed by eye. Run with
// -update to rewrite it after a deliberate change.
func TestGoldenPromptStack(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, `  persona: {name: Aiko, text: "You are {{name}}, a cheerful gardener who loves tea."}
`)
	ctx := context.Background()
	// Monday 10:00: a first session, in which the model changes its mood.
	c.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "set_mood", `{"valence":0.8,"arousal":0.6,"reason":"Ada got the job"}`)),
		llmtest.Text("Congratulations!!"),
	)
	c.say(t, "I got the job!", 1)
	conv, err := c.app.store.ConversationByThread(ctx, telegram.Platform, fmt.Sprint(c.user.ID))
	require.NoError(t, err)
	first := *conv.CurrentRecordID
	// Memory the next issue's engines will write: facts and summaries.
	for _, f := range []core.Fact{{Key: "F01", Content: "Drinks green tea, no sugar"}, {Key: "F02", Content: "Has a cat named Miso"}} {
		f.ConversationID = conv.ID
		require.NoError(t, memory.NewFactStore(c.app.store.Database()).Add(ctx, &f))
	}
	older := &core.SessionRecord{ConversationID: conv.ID, StartedAt: companionT0.AddDate(0, 0, -3),
		EndedAt: ptrTime(companionT0.AddDate(0, 0, -3).Add(20 * time.Minute)), Summary: "Talked about\nMiso's vet visit."}
	require.NoError(t, c.app.store.CreateSessionRecord(ctx, older))
	require.NoError(t, c.app.store.DB().Exec(`UPDATE session_records SET summary = ? WHERE id = ?`,
		"Ada got the job at the library and was over the moon.", first).Error)

	// Tuesday 12:00, 26 hours later: a new session.
	c.advance(t, 26*time.Hour)
	c.model.Enqueue(llmtest.Text("Welcome back, Ada!"))
	c.say(t, "hello again", 2)

	req := c.model.Requests()[2]
	var got strings.Builder
	for _, m := range req.Messages() {
		fmt.Fprintf(&got, "===== %s\n%s\n", m.Role, m.Content)
	}
	fmt.Fprintf(&got, "===== tools\n%s\n", strings.Join(req.ToolNames(), "\n"))
	golden := filepath.Join("testdata", "prompt_stack.golden")
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got.String()), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./cmd/parley -run TestGoldenPromptStack -update to create it")
	require.Equal(t, string(want), got.String())

	// The initial mood in it is the formula's, from the mood set 26 hours
	// before: baseline + (last − baseline)·exp(−0.15·26).
	f := math.Exp(-0.15 * 26)
	require.Contains(t, got.String(), fmt.Sprintf("valence %.2f", 0.2+(0.8-0.2)*f))
	require.Contains(t, got.String(), fmt.Sprintf("arousal %.2f", -0.1+(0.6+0.1)*f))
}

func ptrTime(t time.Time) *time.Time { return &t }
