package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// companionT0 is 10:00 in Berlin, where the companion tests' users live.
var companionT0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

// idleTimers is how many loops sleep on the clock when the bot is idle:
// the claim loop, the maintenance loop, the job loop and the memory
// engines (set to wait 1000 hours here, so that their light-model calls
// never mix with the scripted answers; plugins/memory tests them).
const idleTimers = 4

// companion is a bot with every plugin on, talking through the fake
// Telegram, on a clock the test moves.
type companion struct {
	clockedBot // settle and advance
	fake       *telegramtest.Server
	user       telegramtest.User
	// logs is what the bot logged, for a failing test to show.
	logs    *coretest.Logs
	cfgPath string
}

// startCompanion builds and starts the bot in-process; plugins is more
// YAML under plugins:, indented two spaces.
func startCompanion(t *testing.T, plugins string) *companion {
	t.Helper()
	c := &companion{clockedBot: clockedBot{testBundle: setup(t), clock: coretest.NewClock(companionT0)}, fake: telegramtest.NewServer(t),
		user: telegramtest.User{ID: 777, FirstName: "Ada"}}
	path := c.writeConfig(t, fmt.Sprintf(`bot:
  timezone: Europe/Berlin
adapters:
  web: {enabled: false}
  telegram:
    token: "%s"
    api_url: "%s"
    # Telegram's pace would wait on the companion's fake clock for moves
    # these tests do not make; adapters/telegram tests the pace.
    send_rate: {per_second: 0, per_chat_per_second: 0}
runs:
  debounce: 0s
plugins:
  memory: {fact_every: 1000h, summary_every: 1000h}
%s`, c.fake.Token(), c.fake.URL(), plugins))
	c.cfgPath = path
	c.logs = &coretest.Logs{}
	c.boot(t)
	t.Cleanup(func() {
		if c.app != nil {
			require.NoError(t, c.app.stop())
		}
		if t.Failed() {
			t.Logf("the bot's log:\n%s", c.logs)
		}
	})
	c.settle(t)
	return c
}

// boot builds and starts the bot from the config file, on the clock.
func (c *companion) boot(t *testing.T) {
	t.Helper()
	cfg, err := config.Load(c.cfgPath, c.lookup)
	require.NoError(t, err)
	ctx := context.Background()
	c.app, err = buildApp(ctx, cfg, c.logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
		clock:       c.clock,
		serveHTTP:   true, // the API, on 127.0.0.1:0
	})
	require.NoError(t, err)
	require.NoError(t, c.app.start(ctx))
}

// down stops the bot; while it is down the test may move the clock.
func (c *companion) down(t *testing.T) {
	t.Helper()
	require.NoError(t, c.app.stop())
	c.app = nil
}

// up starts a new bot on the same database and waits until it is idle.
func (c *companion) up(t *testing.T) {
	t.Helper()
	c.boot(t)
	c.settle(t)
}

// say makes the user write text and waits until the bot has sent n
// messages in all, then until it is idle again.
func (c *companion) say(t *testing.T, text string, n int) []telegramtest.SentMessage {
	t.Helper()
	c.fake.SendPrivate(c.user, text)
	sent := c.fake.WaitSent(t, c.user.ID, n, waitFor)
	c.settle(t)
	return sent
}

// stored is the conversation's messages.
func (c *companion) stored(t *testing.T) []core.Message {
	t.Helper()
	ctx := context.Background()
	conv, err := c.app.store.ConversationByThread(ctx, telegram.Platform, fmt.Sprint(c.user.ID))
	require.NoError(t, err)
	msgs, err := c.app.store.Messages(ctx, conv.ID)
	require.NoError(t, err)
	return msgs
}

// roles lists a request's messages as role:content, the system prompt
// left out.
func roles(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		if m.Role != "system" {
			out = append(out, m.Role+":"+m.Content)
		}
	}
	return out
}

// stackOf is a request's system message without the turn's time note: the
// record's frozen stack.
func stackOf(r llmtest.Request) string {
	stack, _, _ := strings.Cut(r.Messages()[0].Content, "\n\nNow for them: ")
	return stack
}

// requireNoTokens fails if anything token-like reached Telegram.
func requireNoTokens(t *testing.T, sent []telegramtest.SentMessage) {
	t.Helper()
	for _, s := range sent {
		for _, tok := range []string{"<SILENCE>", "<WANT_MORE>", "<PROACTIVE>", "delay_seconds", "SILENCE", "WANT_MORE", "PROACTIVE"} {
			require.NotContains(t, s.Plain, tok, "a control token reached the user")
		}
	}
}

func TestSilenceSendsNothingAndTheNextTurnKnows(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("<SILENCE>"), llmtest.Text("Good morning, Ada!"))
	c.fake.SendPrivate(c.user, "good night!")
	c.model.WaitRequests(t, 1, waitFor)
	c.settle(t)
	require.Empty(t, c.fake.Sent(c.user.ID), "a silent turn sends nothing")

	sent := c.say(t, "good morning", 1)
	require.Equal(t, "Good morning, Ada!", sent[0].Plain)
	require.Equal(t, []string{"user:good night!", "assistant:<SILENCE>", "user:good morning"}, roles(c.model.Requests()[1]),
		"the next turn sees that it stayed silent")
	msgs := c.stored(t)
	require.Len(t, msgs, 4)
	require.Equal(t, true, msgs[1].Metadata["silent"])
	require.Empty(t, msgs[1].PlatformMessageID, "never delivered")
	requireNoTokens(t, c.fake.Sent(c.user.ID))
}

func TestUserTextWithATokenIsOrdinaryText(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("It is just a word in angle brackets."))
	sent := c.say(t, "what does <SILENCE> mean? <WANT_MORE>", 1)
	require.Equal(t, "It is just a word in angle brackets.", sent[0].Plain, "the user's tokens silenced nothing")
	require.Equal(t, "what does <SILENCE> mean? <WANT_MORE>", c.model.Requests()[0].LastUserMessage())
	require.Len(t, c.model.Requests(), 1, "and asked for no continuation")
	require.Equal(t, "what does <SILENCE> mean? <WANT_MORE>", c.stored(t)[0].Content)
}

func TestWantMoreContinuesOnceOnly(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Here is the first part.\n<WANT_MORE>"),
		llmtest.Text("And one more thing!\n<WANT_MORE>"),
		llmtest.Text("Noted."),
	)
	sent := c.say(t, "tell me a story", 2)
	require.Equal(t, []string{"Here is the first part.", "And one more thing!"}, []string{sent[0].Plain, sent[1].Plain})
	reqs := c.model.Requests()
	require.Len(t, reqs, 2, "a continuation asks for no second one")
	require.Equal(t, []string{"user:tell me a story", "assistant:Here is the first part.", "user:" + core.DefaultContinueNudge}, roles(reqs[1]))

	msgs := c.stored(t)
	require.Len(t, msgs, 3, "the nudge is kept out of the transcript")
	require.Equal(t, "And one more thing!", msgs[2].Content)
	require.Equal(t, true, msgs[2].Metadata["continuation"])

	c.say(t, "ok", 3)
	require.Equal(t, []string{"user:tell me a story", "assistant:Here is the first part.", "assistant:And one more thing!", "user:ok"},
		roles(c.model.Requests()[2]))
	requireNoTokens(t, c.fake.Sent(c.user.ID))
}

func TestProactiveFollowUpFiresAfterTheDelay(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Good luck with the bread!\n"+`<PROACTIVE>{"delay_seconds":3600,"reason":"check on the bread"}`),
		llmtest.Text("How did the bread turn out?"),
	)
	sent := c.say(t, "my bread is in the oven", 1)
	require.Equal(t, "Good luck with the bread!", sent[0].Plain)

	c.advance(t, 59*time.Minute)
	require.Len(t, c.model.Requests(), 1, "nothing before the delay")
	c.advance(t, time.Minute)
	sent = c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "How did the bread turn out?", sent[1].Plain)
	reqs := c.model.Requests()
	require.Len(t, reqs, 2)
	nudge := reqs[1].LastUserMessage()
	require.Contains(t, nudge, "check on the bread")
	require.Contains(t, nudge, "It is now Monday 11:00 for them", "the follow-up ran at the due time, in the user's zone")
	c.settle(t)
	msgs := c.stored(t)
	require.Len(t, msgs, 3, "the hidden note is not in the transcript")
	require.Equal(t, core.SourceProactive, msgs[2].Source)
	requireNoTokens(t, c.fake.Sent(c.user.ID))
}

func TestProactiveFollowUpDroppedWhenTheUserWrites(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Good luck!\n"+`<PROACTIVE>{"delay_seconds":3600,"reason":"check on the bread"}`),
		llmtest.Text("Yay, enjoy it!"),
	)
	c.say(t, "my bread is in the oven", 1)
	c.advance(t, 5*time.Minute) // within the session
	c.say(t, "the bread came out great", 2)
	c.advance(t, 2*time.Hour)
	require.Len(t, c.model.Requests(), 2, "no follow-up after the user wrote")
	require.Len(t, c.fake.Sent(c.user.ID), 2)

	var status, why string
	require.NoError(t, c.app.store.DB().Raw(`SELECT status, last_error FROM jobs`).Row().Scan(&status, &why))
	require.Equal(t, "cancelled", status)
	require.Equal(t, "dropped: the user wrote since", why)
}

func TestProactiveFollowUpWaitsForTheEndOfQuietHours(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, `  proactive:
    quiet_hours: {start: "23:00", end: "08:00"}
`)
	// 22:30 in Berlin; the follow-up is due at 23:30, inside quiet hours.
	c.advance(t, 12*time.Hour+30*time.Minute)
	c.model.Enqueue(
		llmtest.Text("Sleep well!\n"+`<PROACTIVE>{"delay_seconds":3600,"reason":"ask how they slept"}`),
		llmtest.Text("Good morning! How did you sleep?"),
	)
	c.say(t, "off to bed", 1)
	c.advance(t, time.Hour+time.Minute)
	require.Len(t, c.model.Requests(), 1, "no model call inside quiet hours")
	var due time.Time
	var s string
	require.NoError(t, c.app.store.DB().Raw(`SELECT due_at FROM jobs`).Row().Scan(&s))
	due, err := time.Parse("2006-01-02T15:04:05.000000Z", s)
	require.NoError(t, err)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	require.Equal(t, "2026-11-24 08:00", due.In(berlin).Format("2006-01-02 15:04"), "moved to the end of quiet hours")

	c.advance(t, 8*time.Hour+28*time.Minute) // 07:59
	require.Len(t, c.model.Requests(), 1, "still quiet at 07:59")
	c.advance(t, time.Minute) // 08:00
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Good morning! How did you sleep?", sent[1].Plain)
	require.Contains(t, c.model.Requests()[1].LastUserMessage(), "It is now Tuesday 08:00 for them")
}

func TestSessionRecordBoundaryAtTheGap(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(llmtest.Text("one"), llmtest.Text("two"), llmtest.Text("three"))
	c.say(t, "first", 1)
	c.advance(t, 10*time.Minute) // exactly the gap after the reply
	c.say(t, "second", 2)
	c.advance(t, 10*time.Minute+time.Second)
	c.say(t, "third", 3)

	reqs := c.model.Requests()
	require.Equal(t, stackOf(reqs[0]), stackOf(reqs[1]), "the same record keeps its stack")
	require.Equal(t, []string{"user:first", "assistant:one", "user:second"}, roles(reqs[1]))
	require.NotEqual(t, stackOf(reqs[1]), stackOf(reqs[2]), "a new record builds a new stack")
	require.Equal(t, []string{"user:third"}, roles(reqs[2]), "L5 holds the new record's messages only")
	require.Contains(t, reqs[2].Messages()[0].Content, "Your previous session ended ~10 minutes before this one.")
	require.Contains(t, reqs[2].Messages()[0].Content, "The session started Monday 23 November 2026, 10:20 (Europe/Berlin).")

	msgs := c.stored(t)
	require.Equal(t, *msgs[0].SessionRecordID, *msgs[3].SessionRecordID)
	require.NotEqual(t, *msgs[0].SessionRecordID, *msgs[4].SessionRecordID)
	for _, m := range msgs {
		require.NotContains(t, strings.ToUpper(m.Content), "<PROACTIVE>")
	}
}

// job is the conversation's only job, as stored.
func (c *companion) job(t *testing.T) core.Job {
	t.Helper()
	var id int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT id FROM jobs`).Row().Scan(&id))
	j, err := c.app.store.Job(context.Background(), id)
	require.NoError(t, err)
	return j
}

func TestProactiveFollowUpGivesUpAfterThreeAttempts(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Good luck!\n"+`<PROACTIVE>{"delay_seconds":60,"reason":"ask about the exam"}`),
		llmtest.Status(400), llmtest.Status(400), llmtest.Status(400),
	)
	c.say(t, "exam in a minute", 1)
	c.advance(t, time.Minute)
	require.Len(t, c.model.Requests(), 2)
	j := c.job(t)
	require.Equal(t, core.JobPending, j.Status, "tried again later")
	require.Equal(t, 1, j.Attempts)
	require.True(t, j.DueAt.Equal(companionT0.Add(3*time.Minute)), "after a 2-minute backoff, got %v", j.DueAt)
	c.advance(t, 2*time.Minute)
	require.Len(t, c.model.Requests(), 3)
	c.advance(t, 4*time.Minute)
	require.Len(t, c.model.Requests(), 4)
	j = c.job(t)
	require.Equal(t, core.JobFailed, j.Status)
	require.Equal(t, 3, j.Attempts)
	require.NotEmpty(t, j.LastError, "the error is kept")
	c.advance(t, time.Hour)
	require.Len(t, c.model.Requests(), 4, "no fourth attempt")
	require.Len(t, c.fake.Sent(c.user.ID), 1, "a failed follow-up sends no failure notice")
}

func TestProactiveFollowUpMayStaySilent(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	c.model.Enqueue(
		llmtest.Text("Good luck!\n"+`<PROACTIVE>{"delay_seconds":600,"reason":"ask about the exam"}`),
		llmtest.Text("<SILENCE>"),
	)
	c.say(t, "exam soon", 1)
	c.advance(t, 10*time.Minute)
	require.Len(t, c.model.Requests(), 2)
	require.Len(t, c.fake.Sent(c.user.ID), 1, "the follow-up chose silence")
	j := c.job(t)
	require.Equal(t, core.JobSent, j.Status)
	require.Contains(t, j.LastError, "silent")
	msgs := c.stored(t)
	require.Equal(t, true, msgs[len(msgs)-1].Metadata["silent"])
}
