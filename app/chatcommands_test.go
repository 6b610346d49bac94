package app

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord"
	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/markup/markuptest"
	"github.com/parleybot/parley/adapters/slack"
	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/adapters/terminal"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/plugins/memory"
)

// commandNames are the chat commands, in /help's order.
var commandNames = []string{"start", "help", "new", "reminders", "cancel", "forget", "timezone", "export", "erase"}

// requireHelp checks what a user reads of /help: every command with its
// slash.
func requireHelp(t *testing.T, shown string) {
	t.Helper()
	require.Contains(t, shown, "Here's what I understand:")
	for _, name := range commandNames {
		require.Contains(t, shown, "/"+name, "/help lists /%s", name)
	}
	require.Contains(t, shown, "/cancel N")
	require.Contains(t, shown, "/timezone ZONE")
}

// requireCommandsStored checks that the conversation holds each command
// and its answer (source "command"), and nothing else.
func requireCommandsStored(t *testing.T, msgs []core.Message, commands ...string) {
	t.Helper()
	require.Len(t, msgs, 2*len(commands))
	for i, cmd := range commands {
		q, a := msgs[2*i], msgs[2*i+1]
		require.Equal(t, cmd, q.Content)
		require.Equal(t, core.RoleUser, q.Role)
		require.Equal(t, core.SourceCommand, q.Source)
		require.Equal(t, core.RoleAssistant, a.Role)
		require.Equal(t, core.SourceCommand, a.Source)
		require.NotEmpty(t, a.PlatformMessageID, "%s was answered on the platform", cmd)
	}
}

// TestChatCommandsOnTelegram: the commands are in Telegram's menu from
// the start and answered without the model; /reminders lists what the
// model scheduled, /cancel N cancels what was listed, /timezone moves the
// user, the model later reads what the commands did, and /new gives the
// next turn a fresh window with the facts kept.
func TestChatCommandsOnTelegram(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	menu := c.fake.MyCommands("all_private_chats")
	var names []string
	for _, m := range menu {
		names = append(names, m.Command)
		require.NotEmpty(t, m.Description)
	}
	require.Equal(t, commandNames, names, "setMyCommands at start")

	sent := c.say(t, "/start", 1)
	require.Equal(t, "MarkdownV2", sent[0].ParseMode)
	require.Equal(t, "Hi Ada! I'm Subaru. Write to me whenever you like; send /help to see what else I can do.", sent[0].Plain)
	shown, err := markuptest.TelegramV2(sent[0].Text)
	require.NoError(t, err)
	require.True(t, shown.Has(markuptest.Bold, "Subaru"), "%+v", shown)
	sent = c.say(t, "/help@parley_test_bot", 2)
	requireHelp(t, sent[1].Plain)
	require.Empty(t, c.model.Requests(), "no model call for a command")

	// The model schedules a reminder and a recurring check-in.
	c.model.Enqueue(
		scheduleCall("call_1", "2026-11-24 09:00", "Time to call *Mum*!", false),
		recurringCall("call_2", "0 8 * * 1-5", "ask how they slept", "morning check-in"),
		llmtest.Text("Both set."),
	)
	c.say(t, "remind me tomorrow at 9 to call mum, and check on me every weekday morning", 3)
	require.Len(t, c.model.Requests(), 3)

	sent = c.say(t, "/reminders", 4)
	list := sent[3].Plain
	require.Contains(t, list, "Your reminders (times in Europe/Berlin):")
	require.Contains(t, list, "1. Tue 24 Nov 2026, 09:00: Time to call Mum!\n", "the text as it will be sent (formatted), in the user's zone")
	require.Contains(t, list, "2. Recurring: morning check-in (0 8 * * 1-5), next Tue 24 Nov 2026, 08:00\n")

	sent = c.say(t, "/cancel 5", 5)
	require.Equal(t, "There is no number 5 on your last list (it had 2). Send /reminders to see it again.", sent[4].Plain)
	sent = c.say(t, "/cancel 1", 6)
	require.Equal(t, "Cancelled number 1: “Time to call Mum!”, which was due Tue 24 Nov 2026, 09:00.", sent[5].Plain)
	jobs := c.jobs(t)
	require.Equal(t, core.JobCancelled, jobs[0].Status)
	require.Equal(t, core.JobPending, jobs[1].Status)

	sent = c.say(t, "/timezone", 7)
	require.Contains(t, sent[6].Plain, "Your time zone is Europe/Berlin: it's Mon 23 Nov 2026, 10:00 there now.")
	sent = c.say(t, "/timezone Mars/Base", 8)
	require.Contains(t, sent[7].Plain, "“Mars/Base” is not a time zone I know. Send an IANA name like /timezone Europe/Paris")
	sent = c.say(t, "/timezone america/new_york", 9)
	require.Equal(t, "Your time zone is now America/New_York: it's Mon 23 Nov 2026, 04:00 there.", sent[8].Plain)
	require.Equal(t, "America/New_York", c.conv(t).TimeZone)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	require.True(t, c.jobs(t)[1].DueAt.Equal(time.Date(2026, 11, 23, 8, 0, 0, 0, ny)),
		"the check-in now runs at 08:00 in New York: %v", c.jobs(t)[1].DueAt)
	sent = c.say(t, "/cancel 2", 10)
	require.Equal(t, "Cancelled number 2, the recurring “morning check-in”. It won't run again.", sent[9].Plain)
	require.Len(t, c.model.Requests(), 3, "no model call for any command")

	// The model reads what the commands did, with the user's message last.
	c.model.Enqueue(llmtest.Text("You're welcome!"))
	c.say(t, "thanks", 11)
	seen := roles(c.model.Requests()[3])
	require.Contains(t, seen, "user:/cancel 1")
	require.Contains(t, seen, "user:/timezone america/new_york")
	require.Contains(t, seen, "assistant:Your time zone is now **America/New\\_York**: it's Mon 23 Nov 2026, 04:00 there.")
	require.Equal(t, "user:thanks", seen[len(seen)-1])

	// /new, well within the session gap: a fresh window for the next
	// turn all the same; what is remembered stays.
	_, _, err = memory.NewFactStore(c.app.store.Database()).Remember(context.Background(), c.conv(t).ID, "Has a sister called Ines", 30, c.clock.Now())
	require.NoError(t, err)
	sent = c.say(t, "/new", 12)
	require.Equal(t, "Fresh start! Your next message begins a new conversation. I still remember what I know about you (see /forget).", sent[11].Plain)
	c.model.Enqueue(llmtest.Text("Hello again, Ada!"))
	sent = c.say(t, "hello again", 13)
	require.Equal(t, "Hello again, Ada!", sent[12].Plain)
	req := c.model.Requests()[4]
	require.Equal(t, []string{"user:hello again"}, roles(req), "nothing of the earlier conversation")
	require.Contains(t, stackOf(req), "Has a sister called Ines", "facts stay")

	// /forget lists the facts and erases them on confirmation only.
	sent = c.say(t, "/forget", 14)
	require.Contains(t, sent[13].Plain, "1. Has a sister called Ines")
	sent = c.say(t, "/forget all", 15)
	require.Contains(t, sent[14].Plain, "send /forget all confirm")
	require.Len(t, c.facts(t), 1)
	sent = c.say(t, "/forget all confirm", 16)
	require.Equal(t, "Done: I've forgotten the 1 thing I remembered about you.", sent[15].Plain)
	require.Empty(t, c.facts(t))
	require.Len(t, c.model.Requests(), 5)

	// Nothing cancelled goes out.
	c.advance(t, 25*time.Hour)
	require.Len(t, c.fake.Sent(c.user.ID), 16)
	require.Len(t, c.model.Requests(), 5)
}

// jobs is the companion's conversation's jobs by id.
func (c *companion) jobs(t *testing.T) []core.Job {
	t.Helper()
	var ids []int64
	require.NoError(t, c.app.store.DB().Raw(`SELECT id FROM jobs ORDER BY id`).Scan(&ids).Error)
	out := make([]core.Job, len(ids))
	for i, id := range ids {
		j, err := c.app.store.Job(context.Background(), id)
		require.NoError(t, err)
		out[i] = j
	}
	return out
}

func (c *companion) facts(t *testing.T) []core.Fact {
	t.Helper()
	facts, err := memory.NewFactStore(c.app.store.Database()).Facts(context.Background(), c.conv(t).ID)
	require.NoError(t, err)
	return facts
}

// TestChatCommandsOff: with commands.enabled false, /help is text for the
// model and Telegram's command menu is cleared.
func TestChatCommandsOff(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "commands:\n  enabled: false\n")
	require.Nil(t, c.fake.MyCommands("all_private_chats"))
	require.Zero(t, c.fake.Calls("setMyCommands"))
	require.Equal(t, 1, c.fake.Calls("deleteMyCommands"), "a menu left by an earlier run is cleared")
	c.model.Enqueue(llmtest.Text("Happy to help! What do you need?"))
	sent := c.say(t, "/help", 1)
	require.Equal(t, "Happy to help! What do you need?", sent[0].Plain)
	reqs := c.model.Requests()
	require.Len(t, reqs, 1)
	require.Equal(t, []string{"user:/help"}, roles(reqs[0]))
	msgs := c.stored(t)
	require.Equal(t, core.SourceUser, msgs[0].Source)
}

func TestChatCommandsOnDiscord(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fake := discordtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, discordConfig(fake)))
	fake.WaitReady(t, waitFor)

	// Each answer is stored just after Discord took it: a person takes
	// longer than that to send the next command.
	channel, _ := fake.SendDM(lin, "/start")
	shown := markuptest.Discord(fake.WaitSent(t, channel, 1, waitFor)[0].Content)
	require.Contains(t, shown.Text, "I'm Subaru. Write to me whenever you like; send /help")
	require.True(t, shown.Has(markuptest.Bold, "Subaru"), "%+v", shown)
	b.waitStored(t, discord.Platform, channel, 2)
	fake.SendDM(lin, "/help")
	requireHelp(t, markuptest.Discord(fake.WaitSent(t, channel, 2, waitFor)[1].Content).Text)
	b.waitStored(t, discord.Platform, channel, 4)
	fake.SendDM(lin, "/reminders")
	shown = markuptest.Discord(fake.WaitSent(t, channel, 3, waitFor)[2].Content)
	require.Contains(t, shown.Text, "You have no reminders and no recurring messages.")
	b.waitStored(t, discord.Platform, channel, 6)
	fake.SendDM(lin, "/timezone europe/paris")
	shown = markuptest.Discord(fake.WaitSent(t, channel, 4, waitFor)[3].Content)
	require.Contains(t, shown.Text, "Your time zone is now Europe/Paris")
	require.Empty(t, b.model.Requests())

	r.stop(t)
	requireCommandsStored(t, b.storedMessagesOn(t, discord.Platform, channel),
		"/start", "/help", "/reminders", "/timezone europe/paris")
}

// On Slack the commands are slash commands: in socket mode an envelope,
// in events mode a POST on /webhooks/slack/commands. Each is answered in
// the DM; one typed elsewhere only gets a note for its user.
func TestChatCommandsOnSlack(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"socket", "events"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			fake, r := startSlack(t, b, mode)
			if mode == "events" {
				fake.UseSlashCommandsURL("http://" + r.addr + "/webhooks/slack/commands")
			}
			read := func(m slacktest.SentMessage) markuptest.Rendered { return markuptest.Slack(m.Text, m.Mrkdwn) }

			channel, trigger := fake.SendSlashCommand(mei, "/start", "")
			shown := read(fake.WaitSent(t, channel, 1, waitFor)[0])
			require.Contains(t, shown.Text, "I'm Subaru. Write to me whenever you like; send /help")
			require.True(t, shown.Has(markuptest.Bold, "Subaru"), "%+v", shown)
			require.Empty(t, fake.WaitSlashResponse(t, trigger, waitFor).Text(), "the answer is in the DM, not a note")

			// Each answer is stored just after Slack took it: a person
			// takes longer than that to type the next command.
			b.waitStored(t, slack.Platform, channel, 2)
			fake.SendSlashCommand(mei, "/help", "")
			requireHelp(t, read(fake.WaitSent(t, channel, 2, waitFor)[1]).Text)
			b.waitStored(t, slack.Platform, channel, 4)
			fake.SendSlashCommand(mei, "/timezone", "asia/tokyo")
			shown = read(fake.WaitSent(t, channel, 3, waitFor)[2])
			require.Contains(t, shown.Text, "Your time zone is now Asia/Tokyo")

			trigger = fake.SendSlashCommandIn("C0GENERAL01", "general", mei, "/help", "")
			require.Contains(t, fake.WaitSlashResponse(t, trigger, waitFor).Text(), "I answer commands in our direct messages")
			require.Empty(t, fake.Sent("C0GENERAL01"))
			require.Empty(t, b.model.Requests())

			r.stop(t)
			requireCommandsStored(t, b.storedMessagesOn(t, slack.Platform, channel), "/start", "/help", "/timezone asia/tokyo")
			conv := b.conversationOn(t, slack.Platform, channel)
			require.Equal(t, "Asia/Tokyo", conv.TimeZone)
		})
	}
}

func TestChatCommandsInTheWebChat(t *testing.T) {
	t.Parallel()
	b := setup(t)
	r := b.start(t, b.writeConfig(t, ""))
	const client = "client-commands-1"
	events := openEvents(t, r.addr, client)

	postMessage(t, r.addr, client, "/start")
	m := events.nextWireMessage(t)
	page, err := markuptest.HTML(m.HTML)
	require.NoError(t, err)
	require.Equal(t, "Hi Ada! I'm Subaru. Write to me whenever you like; send /help to see what else I can do.", page.Text)
	require.True(t, page.Has(markuptest.Bold, "Subaru"), "%+v", page)
	require.Empty(t, markuptest.UnsafeHTML(m.HTML))

	postMessage(t, r.addr, client, "/HELP")
	m = events.nextWireMessage(t)
	page, err = markuptest.HTML(m.HTML)
	require.NoError(t, err)
	requireHelp(t, page.Text)

	postMessage(t, r.addr, client, "/forget")
	require.Equal(t, "I don't remember anything about you yet.", events.nextMessage(t))
	require.Empty(t, b.model.Requests())

	r.stop(t)
	requireCommandsStored(t, b.storedMessages(t, client), "/start", "/HELP", "/forget")
}

func TestChatCommandsInTheTerminal(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	var out, stderr coretest.Logs
	code := Run(context.Background(), []string{"chat", "-c", cfg},
		IO{In: strings.NewReader("/start\n/help\n/reminders\n/new\n"), Out: &out, Err: &stderr}, b.lookup)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	shown := out.String()
	require.Contains(t, shown, "Subaru: Hi ada! I'm Subaru. Write to me whenever you like; send /help to see what else I can do.\n",
		"plain text: no ** shows")
	require.Contains(t, shown, "Subaru: Here's what I understand:\n")
	require.Contains(t, shown, "\n• /timezone ZONE: show or set your time zone\n")
	requireHelp(t, shown)
	require.Contains(t, shown, "Subaru: You have no reminders and no recurring messages.")
	require.Contains(t, shown, "Subaru: Fresh start!")
	require.NotContains(t, shown, "**")
	require.Empty(t, b.model.Requests())
	requireCommandsStored(t, b.storedMessagesOn(t, terminal.Platform, "console:ada"), "/start", "/help", "/reminders", "/new")
}

// conversationOn reads a conversation from the test's SQLite file.
func (b *testBundle) conversationOn(t *testing.T, p core.Platform, thread string) core.Conversation {
	t.Helper()
	st := b.openStoreFile(t)
	conv, err := st.ConversationByThread(context.Background(), p, thread)
	require.NoError(t, err)
	return conv
}

// A command answered while the model writes the continuation of a reply
// is not the user moving on: the continuation still goes out.
func TestCommandDuringAContinuation(t *testing.T) {
	t.Parallel()
	c := startCompanion(t, "")
	release := make(chan struct{})
	c.model.Enqueue(llmtest.Text("Here is the first part.\n<WANT_MORE>"), llmtest.Text("And the rest.").WithHold(release))
	c.fake.SendPrivate(c.user, "tell me a story")
	c.model.WaitRequests(t, 2, waitFor) // the continuation is being written
	c.fake.SendPrivate(c.user, "/reminders")
	sent := c.fake.WaitSent(t, c.user.ID, 2, waitFor)
	require.Equal(t, "Here is the first part.", sent[0].Plain)
	require.Contains(t, sent[1].Plain, "You have no reminders", "answered at once")
	close(release)
	sent = c.fake.WaitSent(t, c.user.ID, 3, waitFor)
	c.settle(t)
	require.Equal(t, "And the rest.", sent[2].Plain)
	require.Len(t, c.model.Requests(), 2)
}

// In the terminal, which has no buttons, a question's choices come as
// numbered lines, and the number typed is read as the choice.
func TestChoicesInTheTerminalAreNumberedLines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.model.Enqueue(
		llmtest.ToolCalls(llmtest.Call("c1", "offer_choices", `{"question":"Tea or coffee?","choices":["Tea","Coffee"]}`)),
		llmtest.Text("Let me ask."),
		llmtest.Text("Coffee it is."),
	)
	cfg := b.writeConfig(t, "adapters:\n  terminal:\n    user: ada\n")
	in, typed := io.Pipe()
	var out, stderr coretest.Logs
	done := make(chan int, 1)
	go func() {
		done <- Run(context.Background(), []string{"chat", "-c", cfg}, IO{In: in, Out: &out, Err: &stderr}, b.lookup)
	}()
	_, err := io.WriteString(typed, "what should I drink?\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "2. Coffee") }, waitFor, 5*time.Millisecond,
		"no numbered choices in:\n%s", out.String())
	require.Contains(t, out.String(), "Tea or coffee?\n\n1. Tea\n2. Coffee")
	_, err = io.WriteString(typed, "2\n")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "Coffee it is.") }, waitFor, 5*time.Millisecond)
	require.NoError(t, typed.Close())
	require.Equal(t, 0, <-done, "stderr:\n%s", stderr.String())
	reqs := b.model.Requests()
	require.Equal(t, "Coffee", reqs[len(reqs)-1].LastUserMessage(), "the number typed reads as the choice")
}
