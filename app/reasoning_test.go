package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// TestReasoningNeverReachesTheUserTheStoreOrTheNextPrompt answers one
// user, turn after turn, the ways reasoning models and their servers
// write: the user reads only the answer, the stored reply is the answer,
// the run record keeps the reasoning, and no later prompt holds any of
// it.
func TestReasoningNeverReachesTheUserTheStoreOrTheNextPrompt(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	cases := []struct {
		name   string
		answer llmtest.Response
		shown  string
	}{
		{"think at the start", llmtest.Text("<think>SECRET-1 the user wants a greeting</think>\n\nHello there!"), "Hello there!"},
		{"think in the middle", llmtest.Text("Sure. <think>SECRET-2 what time is it there?</think> It is late in Berlin."), "Sure. It is late in Berlin."},
		{"opening tag dropped by the server", llmtest.Text("SECRET-3 they asked about bread\n</think>\n\nThe bread needs 40 minutes."), "The bread needs 40 minutes."},
		{"thinking and reasoning tags", llmtest.Text("<thinking>SECRET-4</thinking>Good <reasoning>SECRET-5</reasoning>morning!"), "Good morning!"},
		{"reasoning_content field", llmtest.Text("Noted.").WithReasoning("SECRET-6 the user shared a fact"), "Noted."},
		{"unclosed after the answer", llmtest.Text("See you soon! <think>SECRET-7 should I also"), "See you soon!"},
	}
	for i, tc := range cases {
		c.model.Enqueue(tc.answer)
		sent := c.say(t, fmt.Sprintf("message %d", i+1), i+1)
		got := sent[i]
		require.Equal(t, tc.shown, got.Plain, "%s: what the user reads", tc.name)
		require.NotContains(t, got.Text, "SECRET", tc.name)
	}

	// One more turn: its prompt carries the whole conversation so far.
	c.model.Enqueue(llmtest.Text("Anything else?"))
	c.say(t, "last one", len(cases)+1)
	reqs := c.model.Requests()
	last := reqs[len(reqs)-1]
	require.False(t, last.HasReasoningContent(), "reasoning_content is never sent back")
	for _, m := range last.Messages() {
		require.NotContains(t, m.Content, "SECRET", "reasoning entered a later prompt (%s message)", m.Role)
		require.NotContains(t, strings.ToLower(m.Content), "<think", "a reasoning tag entered a later prompt")
	}

	stored := c.stored(t)
	var replies []string
	for _, m := range stored {
		require.NotContains(t, m.Content, "SECRET", "reasoning was stored as a message")
		if m.Role == core.RoleAssistant {
			replies = append(replies, m.Content)
		}
	}
	want := make([]string, 0, len(cases)+1)
	for _, tc := range cases {
		want = append(want, tc.shown)
	}
	require.Equal(t, append(want, "Anything else?"), replies, "the stored replies are what the user read")

	// The run records keep what the model thought, for the console.
	runs, err := c.app.store.Runs(context.Background(), stored[0].ConversationID)
	require.NoError(t, err)
	var thoughts strings.Builder
	for _, r := range runs {
		require.NotContains(t, r.Record.Output, "SECRET", "the record's output is the answer")
		thoughts.WriteString(r.Record.Reasoning + "\n")
	}
	for i := 1; i <= 7; i++ {
		require.Contains(t, thoughts.String(), fmt.Sprintf("SECRET-%d", i), "reasoning %d is kept in its run record", i)
	}
}

// TestOnlySilenceIsSilence: an empty answer, whitespace, a refusal and the
// content filter each send bot.failure_message and fail the run with the
// reason; <SILENCE> alone sends nothing and succeeds.
func TestOnlySilenceIsSilence(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	cases := []struct {
		name   string
		answer llmtest.Response
		reason string
	}{
		{"empty", llmtest.Text(""), "the model's answer was empty"},
		{"whitespace", llmtest.Text("  \n\t "), "the model's answer was empty"},
		{"only reasoning", llmtest.Text("<think>I could say hello</think>"), "the model's answer was empty once its reasoning and control tokens were taken out"},
		{"refusal", llmtest.Refusal("I can't help with that."), "the model refused to answer: I can't help with that."},
		{"content filter", llmtest.Text("").WithFinishReason("content_filter"), "content filter"},
		{"cut before anything", llmtest.Text("<think>so much to consider").WithFinishReason("length"), "cut at llm.max_tokens before it said anything"},
	}
	for i, tc := range cases {
		c.model.Enqueue(tc.answer)
		sent := c.say(t, fmt.Sprintf("question %d", i+1), i+1)
		require.Equal(t, config.DefaultFailureMessage, sent[i].Plain, "%s: the user hears that no answer is coming", tc.name)
	}
	ctx := context.Background()
	stored := c.stored(t)
	runs, err := c.app.store.Runs(ctx, stored[0].ConversationID)
	require.NoError(t, err)
	require.Len(t, runs, len(cases))
	for i, tc := range cases {
		require.Equal(t, core.RunFailed, runs[i].Status, tc.name)
		require.Contains(t, runs[i].Error, tc.reason, tc.name)
	}

	// <SILENCE> is the one way to say nothing.
	c.model.Enqueue(llmtest.Text("<SILENCE>"))
	c.fake.SendPrivate(c.user, "good night")
	require.Eventually(t, func() bool {
		runs, err = c.app.store.Runs(ctx, stored[0].ConversationID)
		return err == nil && len(runs) == len(cases)+1 && runs[len(cases)].Status == core.RunSucceeded
	}, waitFor, 5*time.Millisecond, "the silent turn did not succeed: %+v", runs)
	c.settle(t)
	require.Len(t, c.fake.Sent(c.user.ID), len(cases), "silence sends nothing")

	body := scrape(t, c.app.http.Addr())
	require.Contains(t, body, `parley_llm_finish_total{bot="default",reason="content_filter"} 1`)
	require.Contains(t, body, `parley_llm_finish_total{bot="default",reason="length"} 1`)
	require.Contains(t, body, `parley_llm_finish_total{bot="default",reason="stop"} 5`, "empty, whitespace, reasoning only, refusal, silence")
}

// TestAnAnswerCutAtTheTokenLimitGoesOn: the server cuts the answer at
// llm.max_tokens; the user gets what came, marked, then the model's one
// continuation from exactly where it stopped.
func TestAnAnswerCutAtTheTokenLimitGoesOn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.llmExtra = "  max_tokens: 16\n"
	fake := telegramtest.NewServer(t)
	long := "The sourdough needs a long, slow rise. First feed the starter, then wait until it doubles, then mix the flour and water."
	b.model.Enqueue(llmtest.Text(long), llmtest.Text("Then bake it at 250 degrees."))
	b.start(t, b.writeConfig(t, telegramConfig(fake, "")))
	fake.SendPrivate(ada, "how do I bake bread?")
	sent := fake.WaitSent(t, ada.ID, 2, waitFor)

	reqs := b.model.Requests()
	require.Len(t, reqs, 2)
	require.Equal(t, 16, reqs[0].MaxTokens(), "llm.max_tokens is sent")
	msgs := reqs[1].Messages()
	came := msgs[len(msgs)-2].Content
	require.True(t, strings.HasPrefix(long, came) && len(came) < len(long), "the server cut the answer: %q", came)
	require.Contains(t, msgs[len(msgs)-1].Content, "cut off at the length limit", "the model is asked to go on")
	require.Equal(t, came+" …", sent[0].Plain, "what came, with a sign that it was cut")
	require.Equal(t, "Then bake it at 250 degrees.", sent[1].Plain, "the continuation")
}

// TestControlTokensAreStrippedWithThePluginOff: with control_tokens
// disabled nothing acts on a token, and none reaches the user.
func TestControlTokensAreStrippedWithThePluginOff(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "  control_tokens: {enabled: false}\n")
	c.model.Enqueue(llmtest.Text("Hi there!\n<WANT_MORE>"))
	sent := c.say(t, "hello", 1)
	require.Equal(t, "Hi there!", sent[0].Plain)
	requireNoTokens(t, sent)
	require.Len(t, c.model.Requests(), 1, "no continuation: nothing acts on the token")
	require.NotContains(t, stackOf(c.model.Requests()[0]), "<SILENCE>", "the model was not told about tokens")
}
