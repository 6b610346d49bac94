package commands_test

import (
	"context"
	"regexp"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/markup"
	"github.com/parleybot/parley/commands"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/plugins/memory"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// t0 is a Monday, 10:00 in Paris.
var t0 = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)

var paris = mustZone("Europe/Paris")

func mustZone(name string) *time.Location {
	l, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return l
}

type testBundle struct {
	ctx     context.Context
	st      *store.Store
	facts   *memory.FactStore
	clock   *coretest.Clock
	h       *commands.Handler
	conv    core.Conversation
	changed atomic.Int32
}

// setup opens a store with one conversation of Ada's (zone zone, "" for
// the bot's default, UTC) and a handler for the bot "Subaru".
func setup(t *testing.T, zone string) *testBundle {
	t.Helper()
	st := storetest.OpenSQLite(t)
	require.NoError(t, st.Migrate(t.Context(), memory.New()))
	b := &testBundle{ctx: t.Context(), st: st, facts: memory.NewFactStore(st.Database()), clock: coretest.NewClock(t0)}
	b.h = commands.New(commands.Config{Store: st, Facts: b.facts, BotName: "Subaru", Clock: b.clock, JobsChanged: func() { b.changed.Add(1) }})
	res, err := st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "42",
		ChannelUserID: "42", DisplayName: "Ada", TimeZone: zone, Text: "hello", Now: t0})
	require.NoError(t, err)
	b.conv = res.Conversation
	return b
}

// run answers text as the dispatcher does, storing the command and its
// answer, and returns what the user reads (the Markdown made plain).
func (b *testBundle) run(t *testing.T, text string) string {
	t.Helper()
	require.True(t, b.h.IsCommand(text), "%q is a command", text)
	res, err := b.st.RecordInbound(b.ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "42",
		Text: text, Source: core.SourceCommand, Now: b.clock.Now()})
	require.NoError(t, err)
	b.conv = res.Conversation
	r, err := b.h.Reply(b.ctx, b.conv, text)
	require.NoError(t, err)
	require.NoError(t, b.st.AppendMessage(b.ctx, &core.Message{ConversationID: b.conv.ID, Role: core.RoleAssistant,
		Content: r.Text, Source: core.SourceCommand, SessionRecordID: res.Message.SessionRecordID, Metadata: r.Metadata}))
	return markup.Plain(r.Text)
}

func TestIsCommand(t *testing.T) {
	t.Parallel()
	h := commands.New(commands.Config{Store: nil})
	for text, want := range map[string]bool{
		"/help":                    true,
		"/HELP":                    true,
		"/Help":                    true,
		"/start@SomeBot":           true,
		"/start@parley_test_bot":   true,
		"/help   ":                 true,
		"   /help":                 true,
		"/cancel 2":                true,
		"/cancel\t2":               true,
		"/timezone Europe/Paris":   true,
		"/forget all confirm":      true,
		"/reminders\nand more":     true,
		"/new":                     true,
		"/unknown":                 false,
		"/ start":                  false,
		"/":                        false,
		"//help":                   false,
		"help":                     false,
		"please /help":             false,
		"/helpme":                  false,
		"/help-me":                 false,
		"":                         false,
		"/startle the cat":         false,
		"/timezone_europe":         false,
		"/st\u0430rt (cyrillic a)": false,
	} {
		require.Equal(t, want, h.IsCommand(text), "%q", text)
	}
}

// The commands fit Telegram's setMyCommands: names of 1-32 lowercase
// letters, digits and underscores, descriptions of 1-256 characters.
func TestCommandsFitTelegram(t *testing.T) {
	t.Parallel()
	h := commands.New(commands.Config{})
	var names []string
	valid := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	for _, c := range h.Commands() {
		names = append(names, c.Name)
		require.Regexp(t, valid, c.Name)
		require.True(t, c.Description != "" && utf8.RuneCountInString(c.Description) <= 256, c.Description)
	}
	require.Equal(t, []string{"start", "help", "new", "reminders", "cancel", "forget", "timezone"}, names)
}

func TestStartAndHelp(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	start := b.run(t, "/start")
	require.Contains(t, start, "Hi Ada!")
	require.Contains(t, start, "I'm Subaru.")
	require.Contains(t, start, "/help")
	require.Equal(t, start, b.run(t, "/start@parley_test_bot"), "Telegram's @botname suffix")

	help := b.run(t, "/HELP")
	for _, c := range b.h.Commands() {
		require.Contains(t, help, "/"+c.Name, "/help lists /%s", c.Name)
	}
	require.Contains(t, help, "/cancel N")
	require.Contains(t, help, "/timezone ZONE")
	require.Equal(t, help, b.run(t, "/help   "), "trailing spaces")
}

// scheduled creates a pending message due at due and a daily recurring
// job at 09:00 (in loc), in that order of due times.
func (b *testBundle) scheduled(t *testing.T, text string, due time.Time) core.Job {
	t.Helper()
	j := &core.Job{ConversationID: b.conv.ID, Text: text, Name: "scheduled message", DueAt: due, Origin: "tool", Format: core.FormatRichText}
	_, err := b.st.ScheduleMessage(b.ctx, j, false, 50)
	require.NoError(t, err)
	return *j
}

func (b *testBundle) recurring(t *testing.T, name, cron string, first time.Time) core.Job {
	t.Helper()
	j := &core.Job{ConversationID: b.conv.ID, Text: "check in", Name: name, DueAt: first, Recurrence: cron, Origin: "tool"}
	require.NoError(t, b.st.CreateRecurringJob(b.ctx, j, 10))
	return *j
}

func (b *testBundle) job(t *testing.T, id int64) core.Job {
	t.Helper()
	j, err := b.st.Job(b.ctx, id)
	require.NoError(t, err)
	return j
}

func TestRemindersAndCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, "Europe/Paris")
	require.Contains(t, b.run(t, "/cancel 1"), "Send /reminders first", "no list shown yet")
	require.Contains(t, b.run(t, "/reminders"), "You have no reminders")
	require.Contains(t, b.run(t, "/cancel 1"), "The last list was empty")

	bread := b.scheduled(t, "Time for the *bread*! Don't_forget <salt> & [water]", time.Date(2026, 11, 24, 9, 0, 0, 0, paris))
	daily := b.recurring(t, "daily check-in", "0 9 * * *", time.Date(2026, 11, 24, 9, 30, 0, 0, paris))
	letter := b.scheduled(t, "post the letter", time.Date(2026, 11, 25, 18, 15, 0, 0, paris))
	sent := b.scheduled(t, "already gone", time.Date(2026, 11, 24, 8, 0, 0, 0, paris))
	require.NoError(t, b.st.DB().Exec(`UPDATE jobs SET status = 'sent' WHERE id = ?`, sent.ID).Error)

	list := b.run(t, "/reminders")
	require.Contains(t, list, "Your reminders (times in Europe/Paris)")
	require.Contains(t, list, "1. Tue 24 Nov 2026, 09:00: Time for the bread! Don't_forget <salt> & [water]\n",
		"the text as it will be sent (formatted), the time in the user's zone")
	require.Contains(t, list, "2. Wed 25 Nov 2026, 18:15: post the letter\n")
	require.Contains(t, list, "3. Recurring: daily check-in (0 9 * * *), next Tue 24 Nov 2026, 09:30\n")
	require.NotContains(t, list, "already gone", "a sent message is not pending")
	require.Contains(t, list, "/cancel")

	require.Contains(t, b.run(t, "/cancel x"), "“x” is not a number")
	require.Contains(t, b.run(t, "/cancel"), "Which one?")
	require.Contains(t, b.run(t, "/cancel 99"), "There is no number 99 on your last list (it had 3)")
	require.Contains(t, b.run(t, "/cancel 0"), "is not a number")
	require.Equal(t, core.JobPending, b.job(t, bread.ID).Status, "nothing cancelled by a bad number")
	require.Zero(t, b.changed.Load())

	got := b.run(t, "/cancel 2")
	require.Equal(t, "Cancelled number 2: “post the letter”, which was due Wed 25 Nov 2026, 18:15.", got)
	j := b.job(t, letter.ID)
	require.Equal(t, core.JobCancelled, j.Status)
	require.Equal(t, "command:/cancel", j.CancelledByToolCallID)
	require.Equal(t, int32(1), b.changed.Load(), "the scheduler is woken")

	// The numbers are those of the list shown, not of a new one.
	require.Contains(t, b.run(t, "/cancel 3"), "Cancelled number 3, the recurring “daily check-in”")
	require.Equal(t, core.JobCancelled, b.job(t, daily.ID).Status)
	require.Contains(t, b.run(t, "/cancel 2"), "Number 2 can't be cancelled any more: it was already cancelled")
	require.Equal(t, core.JobPending, b.job(t, bread.ID).Status)

	// A new listing renumbers.
	list = b.run(t, "/reminders")
	require.Contains(t, list, "1. Tue 24 Nov 2026, 09:00: Time for the")
	require.NotContains(t, list, "2.")
	require.Contains(t, b.run(t, "/cancel 2"), "no number 2 on your last list (it had 1)")
}

func TestForget(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	require.Equal(t, "I don't remember anything about you yet.", b.run(t, "/forget"))
	require.Contains(t, b.run(t, "/forget all"), "nothing to erase")
	for _, f := range []string{"has a cat called *Mochi*", "lives in Lyon"} {
		_, _, err := b.facts.Remember(b.ctx, b.conv.ID, f, 30, t0)
		require.NoError(t, err)
	}
	list := b.run(t, "/forget")
	require.Contains(t, list, "1. has a cat called *Mochi*\n2. lives in Lyon\n")
	require.Contains(t, list, "/forget all")

	ask := b.run(t, "/forget all")
	require.Contains(t, ask, "erases the 2 things I remember")
	require.Contains(t, ask, "/forget all confirm")
	facts, err := b.facts.Facts(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Len(t, facts, 2, "asking erases nothing")

	require.Contains(t, b.run(t, "/forget everything"), "/forget all")
	require.Equal(t, "Done: I've forgotten the 2 things I remembered about you.", b.run(t, "/FORGET All Confirm"))
	facts, err = b.facts.Facts(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Empty(t, facts)
}

func TestTimezone(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	require.Contains(t, b.run(t, "/timezone"), "You haven't set a time zone, so I use mine, UTC: it's Mon 23 Nov 2026, 09:00 there now.")
	daily := b.recurring(t, "daily check-in", "0 9 * * *", time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	hourly := b.recurring(t, "water", "every 2h", t0.Add(2*time.Hour))

	bad := b.run(t, "/timezone Mars/Base")
	require.Contains(t, bad, "“Mars/Base” is not a time zone I know")
	require.Contains(t, bad, "/timezone Europe/Paris", "an example")
	conv, err := b.st.Conversation(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Empty(t, conv.TimeZone, "a bad zone changes nothing")

	require.Equal(t, "Your time zone is now Europe/Paris: it's Mon 23 Nov 2026, 10:00 there.", b.run(t, "/timezone europe/paris"))
	conv, err = b.st.Conversation(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Equal(t, "Europe/Paris", conv.TimeZone)
	require.Contains(t, b.run(t, "/timezone"), "Your time zone is Europe/Paris: it's Mon 23 Nov 2026, 10:00 there now.")
	// The daily job now runs at 09:00 in Paris; an interval stays put.
	require.True(t, b.job(t, daily.ID).DueAt.Equal(time.Date(2026, 11, 24, 9, 0, 0, 0, paris)))
	require.True(t, b.job(t, hourly.ID).DueAt.Equal(t0.Add(2*time.Hour)))
	require.Equal(t, int32(1), b.changed.Load())

	require.Contains(t, b.run(t, "/timezone america/new_york"), "now America/New_York")
	require.Contains(t, b.run(t, "/timezone utc"), "now UTC")
	require.Contains(t, b.run(t, "/timezone Local"), "not a time zone I know")
}

func TestNewEndsTheRecordAndKeepsFacts(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	rec := *b.conv.CurrentRecordID
	_, _, err := b.facts.Remember(b.ctx, b.conv.ID, "likes tea", 30, t0)
	require.NoError(t, err)
	b.clock.Advance(time.Minute)
	got := b.run(t, "/new")
	require.Contains(t, got, "Your next message begins a new conversation")
	require.Contains(t, got, "I still remember")
	conv, err := b.st.Conversation(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Nil(t, conv.CurrentRecordID)
	r, err := b.st.SessionRecord(b.ctx, rec)
	require.NoError(t, err)
	require.NotNil(t, r.EndedAt)
	require.True(t, r.EndedAt.Equal(t0.Add(time.Minute)))
	facts, err := b.facts.Facts(b.ctx, b.conv.ID)
	require.NoError(t, err)
	require.Len(t, facts, 1, "facts stay")
}

func TestRunAnswersAsReplyDoes(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	got, err := b.h.Run(b.ctx, b.conv, "/help")
	require.NoError(t, err)
	r, err := b.h.Reply(b.ctx, b.conv, "/help")
	require.NoError(t, err)
	require.Equal(t, r.Text, got)
	_, err = b.h.Run(b.ctx, b.conv, "/unknown")
	require.Error(t, err, "not a command")
}
