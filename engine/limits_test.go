package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// limitsT0 is 10:00 in Berlin.
var limitsT0 = time.Date(2030, 1, 15, 9, 0, 0, 0, time.UTC)

// countingStore counts the reads the limits make.
type countingStore struct {
	*store.Store
	lookups, usages atomic.Int32
}

func (s *countingStore) ConversationByThread(ctx context.Context, p core.Platform, thread string) (core.Conversation, error) {
	s.lookups.Add(1)
	return s.Store.ConversationByThread(ctx, p, thread)
}

func (s *countingStore) LimitUsage(ctx context.Context, q core.LimitQuery) (core.LimitUsage, error) {
	s.usages.Add(1)
	return s.Store.LimitUsage(ctx, q)
}

// limitsBundle is a dispatcher with limits, on a clock the test moves,
// users in Berlin.
type limitsBundle struct {
	*testBundle
	clock   *coretest.Clock
	counted *countingStore
	pings   *pinger
}

func setupLimits(t *testing.T, limits core.UserLimits, st *store.Store) *limitsBundle {
	t.Helper()
	return setupLimitsOpts(t, limits, st, true)
}

// setupLimitsOpts is setupLimits; unstarted, the dispatcher runs no turn.
func setupLimitsOpts(t *testing.T, limits core.UserLimits, st *store.Store, start bool) *limitsBundle {
	t.Helper()
	if st == nil {
		st = openStore(t)
	}
	ctx := context.Background()
	lb := &limitsBundle{
		testBundle: &testBundle{ctx: ctx, store: st, model: llmtest.NewServer(t), adapter: coretest.NewAdapter(web),
			jobs: core.NewWaker()},
		clock:   coretest.NewClock(limitsT0),
		counted: &countingStore{Store: st},
		pings:   &pinger{},
	}
	client, err := llm.New(llm.Config{BaseURL: lb.model.URL(), APIKey: "sk-test", Model: "test-model", Timeout: 5 * time.Second})
	require.NoError(t, err)
	lb.disp, err = engine.New(engine.Config{
		Store: lb.counted, LLM: client, Plugins: []core.Plugin{personaLayer{text: "You are Testy."}},
		Adapters: []core.Adapter{lb.adapter}, Clock: lb.clock, Location: mustZone(t, "Europe/Berlin"),
		JobWaker: lb.jobs, Commands: lb.pings, Limits: limits,
	})
	require.NoError(t, err)
	require.NoError(t, lb.adapter.Start(ctx, lb.disp))
	if !start {
		return lb
	}
	require.NoError(t, lb.disp.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, lb.disp.Stop(stopCtx))
	})
	return lb
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	require.NoError(t, err)
	return l
}

// turn makes user write text, which must start a turn, and waits for the
// reply; the model answers reply.
func (b *limitsBundle) turn(t *testing.T, user, text string, reply llmtest.Response) {
	t.Helper()
	b.model.Enqueue(reply)
	before := len(b.adapter.Sent())
	require.NoError(t, b.adapter.Deliver(b.ctx, user, text))
	b.adapter.WaitSent(t, before+1, waitFor)
	run := b.waitRun(t, user)
	require.Equal(t, core.RunSucceeded, run.Status, run.Error)
}

// held makes user write text, which must be held: stored with the
// limit's mark and no run, and no model call.
func (b *limitsBundle) held(t *testing.T, user, text, limit string) core.Message {
	t.Helper()
	calls := len(b.model.Requests())
	runs := b.runs(t, user)
	require.NoError(t, b.adapter.Deliver(b.ctx, user, text))
	msgs := b.messages(t, user)
	var m core.Message
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == core.RoleUser {
			m = msgs[i]
			break
		}
	}
	require.Equal(t, text, m.Content)
	require.Equal(t, limit, m.Metadata["limited"], "the message is marked with the limit that held it")
	require.Equal(t, runs, b.runs(t, user), "a held message plans no run")
	require.Len(t, b.model.Requests(), calls, "a held message calls no model")
	return m
}

func (b *limitsBundle) runs(t *testing.T, user string) int {
	t.Helper()
	conv, err := b.store.ConversationByThread(b.ctx, web, user)
	require.NoError(t, err)
	runs, err := b.store.Runs(b.ctx, conv.ID)
	require.NoError(t, err)
	return len(runs)
}

// notices are the texts sent to user that were limit notices.
func (b *limitsBundle) notices(t *testing.T, user string) []string {
	t.Helper()
	var out []string
	for _, m := range b.messages(t, user) {
		if l, ok := m.Metadata["limit_notice"].(string); ok {
			require.Equal(t, core.SourceSystem, m.Source)
			require.Equal(t, core.RoleAssistant, m.Role)
			require.NotEmpty(t, m.PlatformMessageID, "delivered")
			out = append(out, l+": "+m.Content)
		}
	}
	return out
}

// advance moves the clock; the tests move it only while no turn runs.
func (b *limitsBundle) advance(d time.Duration) { b.clock.Advance(d) }

func TestMessagesOverTheMinuteAreHeldWithOneNotice(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, core.UserLimits{MessagesPerMinute: 2}, nil)
	b.turn(t, "ann", "hi", llmtest.Text("Hello Ann!"))
	b.turn(t, "ann", "how are you?", llmtest.Text("Fine, thanks."))

	b.held(t, "ann", "spam 1", core.LimitMessagesPerMinute)
	b.held(t, "ann", "spam 2", core.LimitMessagesPerMinute)
	b.advance(30 * time.Second)
	b.held(t, "ann", "spam 3", core.LimitMessagesPerMinute)
	const notice = "You're writing faster than I can keep up with (more than 2 messages a minute). Give me a minute, then write again."
	require.Equal(t, []string{"messages_per_minute: " + notice}, b.notices(t, "ann"), "one notice for the window, not one per message")
	sent := b.adapter.Sent()
	require.Len(t, sent, 3)
	require.Equal(t, notice, sent[2].Text)

	// A command answers while the user is held, and does not count.
	require.NoError(t, b.adapter.Deliver(b.ctx, "ann", "/ping"))
	require.Equal(t, "pong", b.adapter.Sent()[3].Text)
	require.Len(t, b.model.Requests(), 2)

	// A minute after the newest two messages the window has room again;
	// the turn reads the held messages, never the notice. (The command
	// answered after the notice goes ahead of the messages after it, as
	// commands answered since the bot last spoke do.)
	b.advance(61 * time.Second)
	b.turn(t, "ann", "sorry, I got carried away", llmtest.Text("No worries."))
	got := roles(b.model.Requests()[2])
	require.Equal(t, []string{"user:hi", "assistant:Hello Ann!", "user:how are you?", "assistant:Fine, thanks.",
		"user:spam 1", "user:/ping", "assistant:**pong**", "user:spam 2", "user:spam 3", "user:sorry, I got carried away"}, got)
	for _, m := range got {
		require.NotContains(t, m, "faster than I can keep up", "the notice is kept out of the prompt")
	}

	// A new flood opens a new window: one more notice.
	b.turn(t, "ann", "one more", llmtest.Text("Sure."))
	b.held(t, "ann", "spam 4", core.LimitMessagesPerMinute)
	b.held(t, "ann", "spam 5", core.LimitMessagesPerMinute)
	require.Len(t, b.notices(t, "ann"), 2)
}

// roles lists a request's messages as role:content, the system prompt left
// out.
func roles(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role != "system" {
			out = append(out, m.Role+":"+m.Content)
		}
	}
	return out
}

func TestTurnsPerDaySaysWhenItLiftsInTheUsersZone(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, core.UserLimits{TurnsPerDay: 2}, nil)
	b.turn(t, "ann", "good morning", llmtest.Text("Morning!")) // 10:00 Berlin
	b.advance(2*time.Hour + 30*time.Second)
	b.turn(t, "ann", "lunch?", llmtest.Text("Soup.")) // 12:00:30
	b.advance(time.Hour)
	b.held(t, "ann", "and dinner?", core.LimitTurnsPerDay)
	b.advance(8 * time.Hour)
	b.held(t, "ann", "hello?", core.LimitTurnsPerDay)
	require.Equal(t, []string{"turns_per_day: You've reached the limit of 2 replies in 24 hours. " +
		"I'll answer again after 10:00 tomorrow (Europe/Berlin time)."}, b.notices(t, "ann"))

	// Still held a second before the first turn is a day old.
	b.advance(24*time.Hour - (2*time.Hour + 30*time.Second) - 9*time.Hour - time.Second)
	b.held(t, "ann", "now?", core.LimitTurnsPerDay)
	require.Len(t, b.notices(t, "ann"), 1)
	b.advance(time.Second)
	b.turn(t, "ann", "now!", llmtest.Text("Here I am."))
	// The second turn is still in the window: one more is a turn too many.
	b.held(t, "ann", "again", core.LimitTurnsPerDay)
	notices := b.notices(t, "ann")
	require.Len(t, notices, 2, "a new window, a new notice")
	require.Equal(t, "turns_per_day: You've reached the limit of 2 replies in 24 hours. "+
		"I'll answer again after 12:01 (Europe/Berlin time).", notices[1], "the minute rounded up: never early")
}

func TestTokensPerDayCountsWhatTheModelReported(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, core.UserLimits{TokensPerDay: 1000}, nil)
	b.turn(t, "ann", "tell me a story", llmtest.Text("Once upon a time…").WithUsage(500, 200)) // 700
	b.advance(time.Hour)
	b.turn(t, "ann", "and then?", llmtest.Text("They lived happily.").WithUsage(300, 100)) // 1,100
	b.advance(time.Minute)
	b.held(t, "ann", "another!", core.LimitTokensPerDay)
	// Without the first turn's 700 the day holds 400: under the limit.
	require.Equal(t, []string{"tokens_per_day: You've reached the usage limit for 24 hours. " +
		"I'll answer again after 10:00 tomorrow (Europe/Berlin time)."}, b.notices(t, "ann"))
	b.advance(23*time.Hour - time.Minute)
	b.turn(t, "ann", "another?", llmtest.Text("Fine.").WithUsage(10, 10))
	require.Len(t, b.model.Requests(), 3)
}

func TestExemptUsersAreNeverLimitedAndCostNoQuery(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, core.UserLimits{MessagesPerMinute: 1, TurnsPerDay: 1, TokensPerDay: 1, Exempt: []string{"web:boss"}}, nil)
	for i := range 3 {
		b.turn(t, "boss", fmt.Sprintf("task %d", i), llmtest.Text("Done."))
	}
	require.Zero(t, b.counted.lookups.Load(), "an exempt user's messages read nothing for the limits")
	require.Zero(t, b.counted.usages.Load())
	require.Empty(t, b.notices(t, "boss"))

	b.turn(t, "bob", "hi", llmtest.Text("Hi Bob."))
	require.Equal(t, int32(2), b.counted.usages.Load(), "a new user: one read on arrival, which finds no conversation, and one as the turn starts")
	b.held(t, "bob", "hi again", core.LimitTokensPerDay)
	require.Equal(t, int32(3), b.counted.usages.Load(), "one read per held message")
	require.Zero(t, b.counted.lookups.Load(), "the read finds the conversation itself")
}

func TestLimitsOffCostNoQuery(t *testing.T) {
	t.Parallel()
	b := setupLimits(t, core.UserLimits{Exempt: []string{"web:boss"}}, nil)
	for i := range 3 {
		b.turn(t, "ann", fmt.Sprintf("hello %d", i), llmtest.Text("Hi."))
	}
	require.Zero(t, b.counted.lookups.Load())
	require.Zero(t, b.counted.usages.Load())
}

func TestLimitsNeedAStoreThatCounts(t *testing.T) {
	t.Parallel()
	type plainStore struct{ core.Store }
	_, err := engine.New(engine.Config{Store: plainStore{openStore(t)}, LLM: fakeLLM{},
		Adapters: []core.Adapter{coretest.NewAdapter(web)}, Limits: core.UserLimits{TurnsPerDay: 5}})
	require.ErrorContains(t, err, "per-user limits need a store that counts usage")
	_, err = engine.New(engine.Config{Store: plainStore{openStore(t)}, LLM: fakeLLM{},
		Adapters: []core.Adapter{coretest.NewAdapter(web)}, Limits: core.UserLimits{Exempt: []string{"web:x"}}})
	require.NoError(t, err, "no limit set: no store needed")
}

type fakeLLM struct{}

func (fakeLLM) Run(context.Context, llm.Request) (llm.Result, error) {
	return llm.Result{Content: "ok"}, nil
}

// TestLimitsUnderAConcurrentBurst: messages of one user handled at once
// are all stored, none twice; the check and the store are not one
// transaction, so more than the limit may pass (the bound is the limit
// plus the burst, less one), but once the burst is stored the next
// message is held. On PostgreSQL too.
func TestLimitsUnderAConcurrentBurst(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(t *testing.T) *store.Store{
		"sqlite":   func(t *testing.T) *store.Store { return openStore(t) },
		"postgres": func(t *testing.T) *store.Store { return migrated(t, storetest.OpenPostgres(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setupLimits(t, core.UserLimits{MessagesPerMinute: 3}, open(t))
			b.turn(t, "ann", "hi", llmtest.Text("Hi."))
			for range 20 {
				b.model.Enqueue(llmtest.Text("ok"))
			}
			var wg sync.WaitGroup
			errs := make(chan error, 20)
			for i := range 20 {
				wg.Go(func() { errs <- b.adapter.Deliver(b.ctx, "ann", fmt.Sprintf("burst %d", i)) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			b.waitRun(t, "ann")
			msgs := b.messages(t, "ann")
			var users, held int
			for _, m := range msgs {
				if m.Role == core.RoleUser {
					users++
					if m.Metadata["limited"] != nil {
						held++
					}
				}
			}
			require.Equal(t, 21, users, "every message stored once")
			require.LessOrEqual(t, len(b.notices(t, "ann")), held, "at most one notice per held message")
			b.held(t, "ann", "after the burst", core.LimitMessagesPerMinute)
			notices := b.notices(t, "ann")
			require.NotEmpty(t, notices, "the user is told")
			for _, n := range notices {
				require.True(t, strings.HasPrefix(n, "messages_per_minute: "), n)
			}
		})
	}
}

// TestTurnPlannedBeforeTheLimitDoesNotStart: a turn planned before the
// limit was reached (a replica's race, a message queued while the last
// allowed turn ran) finds it reached as it starts, its own run not
// counted; the user is told once.
func TestTurnPlannedBeforeTheLimitDoesNotStart(t *testing.T) {
	t.Parallel()
	b := setupLimitsOpts(t, core.UserLimits{TurnsPerDay: 1, TokensPerDay: 5000}, nil, false)
	now := limitsT0
	// The first turn is claimed: running, the turn being checked.
	res, err := b.store.RecordInbound(b.ctx, core.InboundRecord{Platform: web, ChannelThreadID: "ann", ChannelUserID: "ann",
		TimeZone: "Europe/Berlin", Text: "hi", Now: now, PlanRun: true})
	require.NoError(t, err)
	first, err := b.store.ClaimRun(b.ctx, "w", now)
	require.NoError(t, err)
	require.NotNil(t, first)
	conv := res.Conversation
	limit, err := b.disp.LimitReached(b.ctx, conv, now)
	require.NoError(t, err)
	require.Empty(t, limit, "the turn starting is not counted against itself")

	conv, err = b.store.Conversation(b.ctx, conv.ID)
	require.NoError(t, err)
	b.clock.Advance(time.Hour)
	now = b.clock.Now()
	_, err = b.store.RecordInbound(b.ctx, core.InboundRecord{Platform: web, ChannelThreadID: "ann", Text: "more", Now: now, PlanRun: true})
	require.NoError(t, err)
	// The first turn finishes; the second starts.
	require.NoError(t, b.store.CompleteRun(b.ctx, first.ID, "w", core.RunCompletion{Status: core.RunSucceeded, TotalTokens: 100, Now: now}))
	second, err := b.store.ClaimRun(b.ctx, "w", now)
	require.NoError(t, err)
	require.NotNil(t, second)
	limit, err = b.disp.LimitReached(b.ctx, conv, now)
	require.NoError(t, err)
	require.Equal(t, core.LimitTurnsPerDay, limit)

	b.disp.TellLimit(b.ctx, conv, limit, now)
	b.disp.TellLimit(b.ctx, conv, limit, now.Add(time.Minute))
	require.Equal(t, []string{"turns_per_day: You've reached the limit of 1 reply in 24 hours. " +
		"I'll answer again after 10:00 tomorrow (Europe/Berlin time)."}, b.notices(t, "ann"), "told once")
	require.Empty(t, b.model.Requests())

	// Exempt, or with the limits off, nothing is read.
	before := b.counted.usages.Load()
	ex := setupLimitsOpts(t, core.UserLimits{TurnsPerDay: 1, Exempt: []string{"web:ann"}}, b.store, false)
	limit, err = ex.disp.LimitReached(b.ctx, conv, now)
	require.NoError(t, err)
	require.Empty(t, limit)
	off := setupLimitsOpts(t, core.UserLimits{MessagesPerMinute: 1}, b.store, false)
	limit, err = off.disp.LimitReached(b.ctx, conv, now)
	require.NoError(t, err)
	require.Empty(t, limit, "messages_per_minute is checked as messages arrive, not as turns start")
	require.Zero(t, ex.counted.usages.Load()+off.counted.usages.Load())
	require.Equal(t, before, b.counted.usages.Load())
}

// A turn queued while the turn before it ran does not call the model when
// it starts if that turn spent the day's tokens: it is skipped and the
// user told, once.
func TestAQueuedTurnOverTheLimitIsSkippedAsItStarts(t *testing.T) {
	t.Parallel()
	b := setupLimitsOpts(t, core.UserLimits{TokensPerDay: 100}, nil, false)
	require.NoError(t, b.adapter.Deliver(b.ctx, "ann", "one"))
	first, err := b.store.ClaimRun(b.ctx, "w", limitsT0)
	require.NoError(t, err)
	require.NotNil(t, first)
	require.NoError(t, b.adapter.Deliver(b.ctx, "ann", "two"), "queued behind the running turn")
	require.NoError(t, b.store.CompleteRun(b.ctx, first.ID, "w", core.RunCompletion{Status: core.RunSucceeded,
		PromptTokens: 400, CompletionTokens: 100, TotalTokens: 500, Now: limitsT0}))

	require.NoError(t, b.disp.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		require.NoError(t, b.disp.Stop(ctx))
	})
	run := b.waitRun(t, "ann")
	require.Equal(t, core.RunSkipped, run.Status)
	require.Contains(t, run.Error, "tokens_per_day")
	require.Empty(t, b.model.Requests(), "no model call")
	require.Len(t, b.notices(t, "ann"), 1)
	require.Len(t, b.adapter.WaitSent(t, 1, waitFor), 1, "the user is told")
}
