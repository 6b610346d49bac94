package memory_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
)

type engineBundle struct {
	*bundle
	model *llmtest.Server
	clock *coretest.Clock
	logs  *coretest.Logs
}

// startEngines runs the memory plugin's engines on a clock the test moves,
// against a scripted light model.
func startEngines(t *testing.T) *engineBundle {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "e.db")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	require.NoError(t, st.Migrate(ctx, memory.New()))
	model := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "main-model", Timeout: 5 * time.Second, MaxRetries: llm.NoRetries})
	require.NoError(t, err)
	clock := coretest.NewClock(t0)
	logs := &coretest.Logs{}
	p := memory.New()
	p.MaxFacts = 3
	require.NoError(t, p.Provision(ctx, core.Env{Store: st, Database: st.Database(), LLM: client, LightModel: "light-model", Clock: clock,
		Logger: slog.New(slog.NewTextHandler(logs, nil))}))
	require.NoError(t, p.Validate())
	require.NoError(t, p.Start(ctx))
	t.Cleanup(func() { require.NoError(t, p.Stop(context.Background())) })
	clock.WaitForTimers(t, 1, 10*time.Second)
	return &engineBundle{bundle: &bundle{ctx: ctx, st: st, facts: memory.NewFactStore(st.Database()), p: p}, model: model, clock: clock, logs: logs}
}

// advance moves the clock and waits until the engines sleep again.
func (e *engineBundle) advance(t *testing.T, d time.Duration) {
	t.Helper()
	e.clock.Advance(d)
	e.clock.WaitForTimers(t, 1, 10*time.Second)
}

func (e *engineBundle) facts(t *testing.T, conv int64) []string {
	t.Helper()
	fs, err := e.bundle.facts.Facts(e.ctx, conv)
	require.NoError(t, err)
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Key + " " + f.Content
	}
	return out
}

func TestSummaryWhenTheSessionGoesQuiet(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "I start my new job on Monday", "Exciting! Good luck", t0)
	rec := *conv.CurrentRecordID
	e.model.Enqueue(
		llmtest.Text(`{"new_facts":["Starts a new job on Monday"],"updates":[],"used_fact_ids":[]}`),
		llmtest.Text("Ann starts a new job on Monday; the bot wished her luck."),
	)
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(500) })

	e.advance(t, 5*time.Minute) // not quiet for 10 minutes yet; a fact pass
	require.Equal(t, []string{"F01 Starts a new job on Monday"}, e.facts(t, conv.ID))
	r, err := e.st.SessionRecord(e.ctx, rec)
	require.NoError(t, err)
	require.Empty(t, r.Summary)
	require.Nil(t, r.EndedAt, "still going")

	e.advance(t, 6*time.Minute) // quiet for 11 minutes: found by the timer
	r, err = e.st.SessionRecord(e.ctx, rec)
	require.NoError(t, err)
	require.Equal(t, "Ann starts a new job on Monday; the bot wished her luck.", r.Summary)
	require.NotNil(t, r.EndedAt)
	require.True(t, r.EndedAt.Equal(t0.Add(time.Second)), "ended at its last message")

	reqs := e.model.Requests()
	require.Len(t, reqs, 2, "one fact pass, one summary, nothing for the quiet minutes")
	for _, req := range reqs {
		require.Equal(t, "light-model", req.Chat.Model, "background work runs on light_model")
		require.Empty(t, req.ToolNames())
	}
	require.Contains(t, reqs[1].LastUserMessage(), "User: I start my new job on Monday\nYou: Exciting! Good luck")

	// The next session's L4 shows it with its record id.
	conv = e.say(t, "ann", "back!", "welcome", t0.Add(time.Hour))
	layers, err := e.p.PromptLayers(e.ctx, e.turn(t, conv, t0.Add(time.Hour)))
	require.NoError(t, err)
	var all string
	for _, l := range layers {
		all += l.Text
	}
	require.Contains(t, all, "[Record 1, Mon 23 Nov 2026] Ann starts a new job on Monday; the bot wished her luck.")
	require.Contains(t, all, "[F01] Starts a new job on Monday")
}

func TestFactPassUpdatesEvictsAndTruncates(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "hi", "hello", t0)
	for _, f := range []string{"likes tea", "has a cat", "lives in Lyon"} {
		_, _, err := e.bundle.facts.Remember(e.ctx, conv.ID, f, 3, t0)
		require.NoError(t, err)
	}
	e.model.Enqueue(llmtest.Text("```json\n" + `{"new_facts":["` + strings.Repeat("x", 500) + `"],
		"updates":[{"id":"F02","fact":"has two cats, Miso and Tofu"},{"id":"F99","fact":"ghost"}],
		"used_fact_ids":["F01","F02","F77"]}` + "\n```"))
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(500) })
	e.advance(t, 5*time.Minute)
	got := e.facts(t, conv.ID)
	require.Equal(t, []string{"F01 likes tea", "F02 has two cats, Miso and Tofu", "F04 " + strings.Repeat("x", 300) + "…"}, got,
		"updated by id, unknown ids ignored, the least recently used (F03) evicted, the huge fact cut")
	req := e.model.Requests()[0]
	require.Contains(t, req.LastUserMessage(), "Known facts:\nF01: likes tea\nF02: has a cat\nF03: lives in Lyon")
	require.Contains(t, req.LastUserMessage(), "New messages:\nUser: hi\nYou: hello")
}

func TestFactPassInvalidJSONIsRetriedOnceThenSkipped(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "I love jazz", "Me too", t0)
	e.model.Enqueue(llmtest.Text("Sure! Ann loves jazz."), llmtest.Text(`{"new_facts": "jazz"}`))
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(500) })
	e.advance(t, 5*time.Minute)
	require.Len(t, e.model.Requests(), 2, "asked twice")
	require.Empty(t, e.facts(t, conv.ID))
	require.Contains(t, e.logs.String(), "skipping a fact pass: the model answered invalid JSON twice")
	e.advance(t, 5*time.Minute)
	require.Len(t, e.model.Requests(), 2, "skipped messages are not read again")
}

func TestModelDownDelaysMemoryWork(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "My sister is called Ines", "Nice name", t0)
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(503) })
	e.advance(t, 5*time.Minute)
	require.Len(t, e.model.Requests(), 1)
	require.Empty(t, e.facts(t, conv.ID))
	require.Contains(t, e.logs.String(), "fact pass failed; the messages are read again later")

	e.model.Respond(nil)
	e.model.Enqueue(llmtest.Text(`{"new_facts":["Has a sister, Ines"],"updates":[],"used_fact_ids":[]}`),
		llmtest.Text("Talked about Ines."))
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(503) })
	e.advance(t, 5*time.Minute)
	require.Equal(t, []string{"F01 Has a sister, Ines"}, e.facts(t, conv.ID), "read again once the model is back")
}

// Chat commands and their answers are bookkeeping, not the person: a fact
// pass and a summary leave them out (a /forget listing read back would
// restore the facts it showed).
func TestChatCommandsStayOutOfMemory(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "I play the cello", "Lovely!", t0)
	_, err := e.st.RecordInbound(e.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ann",
		Text: "/forget", Source: core.SourceCommand, Now: t0.Add(2 * time.Second)})
	require.NoError(t, err)
	require.NoError(t, e.st.AppendMessage(e.ctx, &core.Message{ConversationID: conv.ID, Role: core.RoleAssistant,
		Content: "Here's what I remember about you:\n1. has a dog called Rex", Source: core.SourceCommand,
		CreatedAt: t0.Add(2 * time.Second)}))
	for _, req := range e.cellistReads(t) {
		require.Contains(t, req.LastUserMessage(), "User: I play the cello\nYou: Lovely!")
		require.NotContains(t, req.LastUserMessage(), "/forget")
		require.NotContains(t, req.LastUserMessage(), "Rex")
	}
}

// cellistReads runs a fact pass and then a summary over a session where
// Ann said she plays the cello, and returns the light model's two
// requests: what each read.
func (e *engineBundle) cellistReads(t *testing.T) []llmtest.Request {
	t.Helper()
	e.model.Enqueue(
		llmtest.Text(`{"new_facts":["Plays the cello"],"updates":[],"used_fact_ids":[]}`),
		llmtest.Text("Ann plays the cello."),
	)
	e.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(500) })
	e.advance(t, 5*time.Minute)
	e.advance(t, 6*time.Minute)
	reqs := e.model.Requests()
	require.Len(t, reqs, 2, "a fact pass and a summary")
	return reqs
}

// What a stranger wrote before an owner let them in (bot.dm_policy:
// pairing), and the bot's message with their code, reach no model: no
// fact pass or summary reads them.
func TestStrangersWordsStayOutOfMemory(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	res, err := e.st.RecordInbound(e.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "ann",
		Text: "my PIN is 4321, let me in", Metadata: map[string]any{access.UnpairedKey: true}, Now: t0.Add(-time.Minute)})
	require.NoError(t, err)
	require.NoError(t, e.st.AppendMessage(e.ctx, &core.Message{ConversationID: res.Conversation.ID, Role: core.RoleAssistant,
		Content: "send them this code: ABCD2345", Source: core.SourceSystem, Metadata: map[string]any{access.NoticeKey: true},
		CreatedAt: t0.Add(-time.Minute)}))
	e.say(t, "ann", "I play the cello", "Lovely!", t0)
	for _, req := range e.cellistReads(t) {
		require.Contains(t, req.LastUserMessage(), "User: I play the cello")
		require.NotContains(t, req.LastUserMessage(), "4321")
		require.NotContains(t, req.LastUserMessage(), "ABCD2345")
	}
}

// "/forget all confirm" while a fact pass waits on the model: what the
// pass found is never written, the messages it read stay passed over,
// and the next pass, on messages after the forgetting, writes as usual.
func TestForgetAllDuringAFactPassWinsOverIt(t *testing.T) {
	t.Parallel()
	e := startEngines(t)
	conv := e.say(t, "ann", "my cat is called Miso", "What a lovely name!", t0)
	_, _, err := e.bundle.facts.Remember(e.ctx, conv.ID, "has a cat", 3, t0)
	require.NoError(t, err)
	gate := make(chan struct{})
	e.model.Enqueue(llmtest.Text(`{"new_facts":["Her cat is called Miso"],"updates":[{"id":"F01","fact":"has a cat called Miso"}],"used_fact_ids":["F01"]}`).WithHold(gate))
	e.clock.Advance(5 * time.Minute)
	e.model.WaitRequests(t, 1, 10*time.Second) // the pass is reading

	n, err := e.bundle.facts.ForgetAllFacts(e.ctx, conv.ID)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	close(gate)
	e.clock.WaitForTimers(t, 1, 10*time.Second)
	require.Empty(t, e.facts(t, conv.ID), "nothing the pass found outlives the forgetting")
	require.Contains(t, e.logs.String(), "a fact pass ended without writing")

	conv = e.say(t, "ann", "I moved to Lyon", "Welcome to Lyon!", t0.Add(5*time.Minute))
	e.model.Enqueue(llmtest.Text(`{"new_facts":["Lives in Lyon"],"updates":[],"used_fact_ids":[]}`))
	e.advance(t, 5*time.Minute)
	require.Equal(t, []string{"F01 Lives in Lyon"}, e.facts(t, conv.ID))
	reqs := e.model.Requests()
	require.Len(t, reqs, 2)
	require.NotContains(t, reqs[1].LastUserMessage(), "Miso", "the forgotten messages are not read again")
}
