package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/console"
	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/httpapi"
	"github.com/parleybot/parley/store"
	"github.com/parleybot/parley/store/storetest"
)

// botsBundle is a console over a real store with two bots, ada and bob,
// each with one conversation and one pending job.
type botsBundle struct {
	*testBundle
	convs map[string]core.Conversation
	jobs  map[string]core.Job
	// bots are the bots the console is given; a test may change them
	// (a reload), under mu.
	mu   sync.Mutex
	bots []console.Bot
}

// keepBots keeps the first n bots, as a reload that removes the others.
func (b *botsBundle) keepBots(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bots = b.bots[:n]
}

func setupBots(t *testing.T, ids ...string) *botsBundle {
	t.Helper()
	st := storetest.OpenSQLite(t)
	ctx := context.Background()
	require.NoError(t, st.Migrate(ctx))
	b := &botsBundle{testBundle: &testBundle{st: st, clock: coretest.NewClock(t0), logs: &coretest.Logs{}, token: token},
		convs: map[string]core.Conversation{}, jobs: map[string]core.Job{}}
	for i, id := range ids {
		view := st.ForBot(id)
		b.bots = append(b.bots, console.Bot{ID: id, Store: view})
		// The same person writes to every bot: a conversation each.
		in, err := view.RecordInbound(ctx, core.InboundRecord{Platform: telegram, ChannelThreadID: "777", ChannelUserID: "777",
			DisplayName: "User of " + id, Text: "hello " + id, Now: t0.Add(-time.Duration(i+1) * time.Hour)})
		require.NoError(t, err)
		b.convs[id] = in.Conversation
		j := core.Job{ConversationID: in.Conversation.ID, Text: "Reminder from " + id, DueAt: t0.Add(time.Hour),
			Origin: "tool", CreatedAt: t0}
		_, err = view.ScheduleMessage(ctx, &j, false, 50)
		require.NoError(t, err)
		b.jobs[id] = j
	}
	mux := http.NewServeMux()
	console.New(console.Config{Token: token, Store: st.AllBots(), Bots: func() []console.Bot {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.bots
	},
		Location: time.UTC, Clock: b.clock, Logger: b.logs.Logger(),
		Health: func(context.Context) []httpapi.Component {
			return []httpapi.Component{{Name: "adapter:ada/telegram", State: "down: 401", Error: "401", Decides: true},
				{Name: "adapter:bob/telegram", State: "ok", Decides: true}, {Name: "store", State: "ok", Decides: true}}
		}}).Mount(mux)
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	return b
}

func TestTheBotPickerListsEveryBotAndKeepsThePick(t *testing.T) {
	t.Parallel()
	b := setupBots(t, "ada", "bob")
	c := b.login(t)

	body, _ := b.page(t, "/console/", c)
	require.Contains(t, body, `id="bot-picker"`)
	require.Contains(t, body, `<a href="/console/" aria-current="true">All bots</a>`)
	require.Contains(t, body, `<a href="/console/?bot=ada">ada</a>`)
	require.Contains(t, body, `<a href="/console/?bot=bob">bob</a>`)
	require.Contains(t, body, "User of ada")
	require.Contains(t, body, "User of bob")
	require.Contains(t, body, `<b id="pending-count">2</b>`, "every bot's pending jobs")
	require.Contains(t, body, `id="component-adapter:ada/telegram"`)
	require.Contains(t, body, `id="component-adapter:bob/telegram"`)

	body, _ = b.page(t, "/console/?bot=bob", c)
	require.Contains(t, body, `<a href="/console/?bot=bob" aria-current="true">bob</a>`)
	require.Contains(t, body, "· bot bob")
	require.Contains(t, body, "User of bob")
	require.NotContains(t, body, "User of ada", "ada's conversation is not in bob's overview")
	require.Contains(t, body, `<b id="pending-count">1</b>`)
	// Health: bob's components and the shared ones; the status is still
	// what /healthz answers.
	require.Contains(t, body, `id="component-adapter:bob/telegram"`)
	require.Contains(t, body, `id="component-store"`)
	require.NotContains(t, body, `id="component-adapter:ada/telegram"`)
	require.Contains(t, body, "answers unhealthy")
	// The menu, the lists' links and the live stream keep the pick.
	require.Contains(t, body, `href="/console/jobs?bot=bob"`)
	require.Contains(t, body, `href="/console/conversations?bot=bob"`)
	require.Regexp(t, `data-live="/console/events/\?bot=bob&amp;v=`, body)
	bobConv := fmt.Sprintf("/console/conversations/%d?bot=bob", b.convs["bob"].ID)
	require.Contains(t, body, `href="`+bobConv+`"`)
	body, _ = b.page(t, bobConv, c)
	require.Contains(t, body, "hello bob")
	require.Contains(t, body, `href="/console/jobs?bot=bob"`, "the transcript's menu keeps the pick")

	// From the jobs page the picker stays on the jobs page.
	body, _ = b.page(t, "/console/jobs?bot=ada&status=pending", c)
	require.Contains(t, body, `<a href="/console/jobs?status=pending">All bots</a>`, "All bots keeps the filter")
	require.Contains(t, body, `<a href="/console/jobs?bot=bob&amp;status=pending">bob</a>`)
	require.Contains(t, body, `<input type="hidden" name="bot" value="ada">`, "the filter form keeps the bot")
	require.Contains(t, body, "Reminder from ada")
	require.NotContains(t, body, "Reminder from bob")
	adaJob := fmt.Sprintf("/console/jobs/%d?bot=ada", b.jobs["ada"].ID)
	require.Contains(t, body, `href="`+adaJob+`"`)
	body, csrf := b.page(t, adaJob, c)
	require.Contains(t, body, `<a href="/console/jobs?bot=ada">← all jobs</a>`)
	// Cancelling it from its page comes back to it, the pick kept.
	resp, _ := b.do(t, http.MethodPost, fmt.Sprintf("/console/jobs/%d/cancel", b.jobs["ada"].ID),
		url.Values{"csrf": {csrf}, "back": {adaJob}}, c)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Location"), "bot=ada")
	require.Contains(t, body, `name="back" value="`+adaJob+`"`)
}

func TestTheListsShowThePickedBotsRowsOrEveryBotsWithTheirBot(t *testing.T) {
	t.Parallel()
	b := setupBots(t, "ada", "bob")
	c := b.login(t)

	all, _ := b.page(t, "/console/conversations", c)
	for id, conv := range b.convs {
		require.Contains(t, all, fmt.Sprintf(`<tr id="conversation-%d">`, conv.ID))
		require.Contains(t, all, `<td data-label="Bot" class="bot"><span class="badge bot">`+id+`</span></td>`)
	}
	bob, _ := b.page(t, "/console/conversations?bot=bob", c)
	require.Contains(t, bob, fmt.Sprintf(`<tr id="conversation-%d">`, b.convs["bob"].ID))
	require.NotContains(t, bob, fmt.Sprintf(`<tr id="conversation-%d">`, b.convs["ada"].ID))
	require.Contains(t, bob, `<input type="hidden" name="bot" value="bob">`, "the search keeps the bot")
	found, _ := b.page(t, "/console/conversations?bot=bob&q=hello", c)
	require.Contains(t, found, "User of bob")
	require.NotContains(t, found, "User of ada", "a search looks in the picked bot's conversations")

	jobs, _ := b.page(t, "/console/jobs", c)
	require.Contains(t, jobs, "Reminder from ada")
	require.Contains(t, jobs, "Reminder from bob")
	require.Contains(t, jobs, `<span class="badge bot">bob</span>`)

	// Any bot's transcript and job open from the all-bots lists.
	conv, _ := b.page(t, fmt.Sprintf("/console/conversations/%d", b.convs["bob"].ID), c)
	require.Contains(t, conv, "hello bob")
	require.Contains(t, conv, `<span class="badge bot" id="conversation-bot">bot bob</span>`)
	job, _ := b.page(t, fmt.Sprintf("/console/jobs/%d", b.jobs["ada"].ID), c)
	require.Contains(t, job, "Reminder from ada")
	require.Contains(t, job, "bot ada")
	job, _ = b.page(t, fmt.Sprintf("/console/jobs/%d?bot=ada", b.jobs["ada"].ID), c)
	require.Contains(t, job, `<a href="/console/jobs?bot=ada">← all jobs</a>`)
}

func TestABotThatIsNotThereIsNotFound(t *testing.T) {
	t.Parallel()
	b := setupBots(t, "ada", "bob")
	c := b.login(t)
	for _, path := range []string{"/console/?bot=carol", "/console/jobs?bot=carol", "/console/conversations?bot=%3Cb%3E"} {
		resp, body := b.do(t, http.MethodGet, path, nil, c)
		require.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		require.Contains(t, body, "this parley runs ada, bob", path)
		require.NotContains(t, body, "<b>", "the id is escaped")
	}
	// A reload that removes bob: his open page is gone.
	b.keepBots(1)
	resp, _ := b.do(t, http.MethodGet, "/console/?bot=bob", nil, c)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestOneBotHasNoPicker(t *testing.T) {
	t.Parallel()
	b := setupBots(t, store.DefaultBot)
	c := b.login(t)
	for _, path := range []string{"/console/", "/console/jobs", "/console/conversations"} {
		body, _ := b.page(t, path, c)
		require.NotContains(t, body, "bot-picker", path)
		require.NotContains(t, body, `class="badge bot"`, path)
		require.Contains(t, body, "User of default", path)
	}
}

// A live page of one bot updates with that bot's news only, and says it
// is gone once a reload has removed the bot.
func TestABotsLiveOverviewFollowsThatBotOnly(t *testing.T) {
	t.Parallel()
	b := setupBots(t, "ada", "bob")
	c := b.login(t)
	body, _ := b.page(t, "/console/?bot=bob", c)
	es := (&fakeBundle{testBundle: b.testBundle}).openStream(t, liveURL(t, body), c, "")
	b.clock.WaitForTimer(t, t0.Add(liveEvery), 5*time.Second)
	es.none(t)

	ctx := context.Background()
	say := func(bot, text string) {
		m := core.Message{ConversationID: b.convs[bot].ID, Role: core.RoleUser, Source: core.SourceUser, Content: text,
			CreatedAt: b.clock.Now()}
		require.NoError(t, b.st.AppendMessage(ctx, &m))
	}
	say("ada", "news for ada")
	b.clock.Advance(liveEvery)
	b.clock.WaitForTimer(t, t0.Add(2*liveEvery), 5*time.Second)
	es.none(t)

	say("bob", "news for bob")
	b.clock.Advance(liveEvery)
	ev := es.next(t)
	require.Equal(t, "update", ev.name)
	require.Contains(t, ev.data, "news for bob")
	require.NotContains(t, ev.data, "news for ada")

	b.keepBots(1) // a reload removed bob
	b.clock.WaitForTimer(t, t0.Add(3*liveEvery), 5*time.Second)
	b.clock.Advance(liveEvery)
	require.Equal(t, "gone", es.next(t).name)
}
