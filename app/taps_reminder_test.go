package app

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine/outbox"
)

// clockedBot is a bot on any platform's fake, built as `parley run` builds
// it but on a clock the test moves (as the companion tests' is).
type clockedBot struct {
	*testBundle
	clock *coretest.Clock
	app   *app
}

// startClocked starts the bot on fake f at companionT0 (10:00 in Berlin),
// with the platform's pace off (it would wait on the clock) and the
// memory engines asleep, as the companion's: idleTimers loops sleep on
// the clock when it is idle.
func startClocked(t *testing.T, f tapFake) *clockedBot {
	t.Helper()
	c := &clockedBot{testBundle: setup(t), clock: coretest.NewClock(companionT0)}
	path := c.writeConfig(t, f.config("    send_rate: {per_second: 0, per_chat_per_second: 0}")+`bot:
  timezone: Europe/Berlin
plugins:
  memory: {fact_every: 1000h, summary_every: 1000h}
`)
	cfg, err := config.Load(path, c.lookup)
	require.NoError(t, err)
	logs := &coretest.Logs{}
	c.app, err = buildApp(context.Background(), cfg, logs.Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled },
		clock:       c.clock,
	})
	require.NoError(t, err)
	require.NoError(t, c.app.start(context.Background()))
	t.Cleanup(func() {
		require.NoError(t, c.app.stop())
		if t.Failed() {
			t.Logf("the bot's log:\n%s", logs)
		}
	})
	f.ready(t, 1)
	c.settle(t)
	return c
}

// settle waits until no run is queued or running, no send is in flight
// and every loop sleeps on the clock again.
func (c *clockedBot) settle(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		busy, err := c.app.store.HasPendingRuns(context.Background())
		return err == nil && !busy && c.app.bots[0].disp.SendsInFlight() == 0
	}, waitFor, 2*time.Millisecond, "runs and scheduled sends never finished")
	c.clock.WaitForTimers(t, idleTimers, waitFor)
}

// advance moves the clock and waits until the bot has done what the new
// time asks of it.
func (c *clockedBot) advance(t *testing.T, d time.Duration) {
	t.Helper()
	c.clock.Advance(d)
	c.clock.WaitForTimers(t, idleTimers, waitFor)
	c.settle(t)
}

// advanceUntilShown moves the clock d, then a second at a time until the
// bot has sent u its n-th message, and returns how many seconds more that
// took: the job loop reads the next due time at most every poll interval
// (2 s), so a loop that armed its timer just before the move is that late
// at most.
func (c *clockedBot) advanceUntilShown(t *testing.T, u tapUser, d time.Duration, n int) time.Duration {
	t.Helper()
	c.advance(t, d)
	var extra time.Duration
	for len(u.shown(t, n-1)) < n {
		require.Less(t, extra, 5*time.Second, "message %d never came", n)
		c.advance(t, time.Second)
		extra += time.Second
	}
	return extra
}

// Through the bot on each platform, the model down: a reminder the model
// set arrives with Snooze and Done buttons; Snooze 10 min answers when,
// closes the buttons, and the same text comes again then, with buttons of
// its own; Done marks it; a second tap on either is told it is answered.
// The model is never asked.
func TestReminderSnoozedAndDoneWithTheModelDown(t *testing.T) {
	t.Parallel()
	for _, p := range tapPlatforms {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			f := p.open(t)
			c := startClocked(t, f)
			u := f.user(0)
			c.model.Enqueue(scheduleCall("s1", "2026-11-23 10:05", "Stretch your legs!", false), llmtest.Text("I will remind you."))
			u.say(t, "remind me to stretch at 10:05")
			u.reads(t, "I will remind you.")
			c.settle(t)
			c.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Status(http.StatusServiceUnavailable) })
			asked := len(c.model.Requests())

			c.advanceUntilShown(t, u, 5*time.Minute, 2)
			rem := u.shown(t, 2)[1]
			require.Equal(t, "Stretch your legs!", rem.Text)
			requireReminderButtons(t, rem)
			tap(t, u, rem, buttonData(t, rem, "Snooze 10 min"), "Snoozed until 10:15.")
			waitChosen(t, u, rem, "Snooze 10 min")
			forge(t, u, rem, buttonData(t, rem, "Done"), core.NoticeAlreadyAnswered)

			c.settle(t)
			c.advance(t, 10*time.Minute-time.Second)
			require.Len(t, u.shown(t, 2), 2, "not before its time")
			late := c.advanceUntilShown(t, u, time.Second, 3)
			require.LessOrEqual(t, late, 2*time.Second, "at 10:15")
			again := u.shown(t, 3)[2]
			require.Equal(t, "Stretch your legs!", again.Text, "the same text again")
			requireReminderButtons(t, again)
			tap(t, u, again, buttonData(t, again, "Done"), "Marked done.")
			waitChosen(t, u, again, "Done")
			forge(t, u, again, buttonData(t, again, "Snooze 1 h"), core.NoticeAlreadyAnswered)

			c.settle(t)
			c.advance(t, 2*time.Hour)
			require.Len(t, u.shown(t, 3), 3, "done: it comes no more")
			require.Len(t, c.model.Requests(), asked, "the model was never asked")

			var jobs []core.Job
			require.NoError(t, c.app.store.DB().Raw(`SELECT id FROM jobs WHERE origin = ? ORDER BY id`, outbox.OriginSnooze).Scan(&jobs).Error)
			require.Len(t, jobs, 2, "one answer per reminder")
			snooze, err := c.app.store.Job(t.Context(), jobs[0].ID)
			require.NoError(t, err)
			require.Equal(t, core.JobSent, snooze.Status)
			require.True(t, companionT0.Add(15*time.Minute).Equal(snooze.DueAt), "due at 10:15 in Berlin: %v", snooze.DueAt)
			done, err := c.app.store.Job(t.Context(), jobs[1].ID)
			require.NoError(t, err)
			require.Equal(t, core.JobCancelled, done.Status, "done keeps the answer and sends nothing")
			require.Contains(t, done.LastError, "marked done")
		})
	}
}

// requireReminderButtons checks a reminder shows its three buttons.
func requireReminderButtons(t *testing.T, m shownMessage) {
	t.Helper()
	var labels []string
	for _, b := range m.Buttons {
		labels = append(labels, b.Label)
	}
	require.Equal(t, []string{"Snooze 10 min", "Snooze 1 h", "Done"}, labels)
}
