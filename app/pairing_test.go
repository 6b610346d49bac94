package app

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/adapters/telegram"
	"github.com/parleybot/parley/adapters/telegram/telegramtest"
	"github.com/parleybot/parley/core/access"
	"github.com/parleybot/parley/core/config"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// pairingCode finds the code in the bot's message to a stranger.
var pairingCode = regexp.MustCompile(`this code: \**([A-HJ-NP-Z2-9]{8})\b`)

// seenByModel records the user messages of the model's requests.
type seenByModel struct {
	mu   sync.Mutex
	seen []string
}

func (s *seenByModel) respond(r llmtest.Request) llmtest.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range r.Messages() {
		if m.Role == "user" {
			s.seen = append(s.seen, m.Content)
		}
	}
	return llmtest.Text("Nice to meet you!")
}

func (s *seenByModel) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// Pairing through parley run on Telegram: a stranger gets one code and
// nothing of theirs reaches the model; the owner approves it in chat and
// the stranger is told; their next message is answered, the ones before
// are not answered in bulk; the approval survives a restart. Another
// stranger is let in from the CLI, a third denied there.
func TestPairingOnTelegramThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := &seenByModel{}
	b.model.Respond(seen.respond)
	tg := telegramtest.NewServer(t)
	owner := telegramtest.User{ID: 1001, FirstName: "Olga"}
	zoe := telegramtest.User{ID: 2002, FirstName: "Zoe"}
	cfg := b.writeConfig(t, fmt.Sprintf(`runs:
  debounce: 0s
bot:
  dm_policy: pairing
  owners: ["telegram:%d"]
adapters:
  web: {enabled: false}
  telegram: {token: "%s", api_url: "%s"}
`, owner.ID, tg.Token(), tg.URL()))
	r := b.start(t, cfg)

	tg.SendPrivate(zoe, "hello")
	got := tg.WaitSent(t, zoe.ID, 1, waitFor)[0].Plain
	m := pairingCode.FindStringSubmatch(got)
	require.NotNil(t, m, "the stranger gets a code: %q", got)
	code := m[1]
	require.Contains(t, got, "valid for an hour")
	tg.SendPrivate(zoe, "are you there?")
	require.Eventually(t, func() bool { return len(b.storedMessagesOn(t, telegram.Platform, "2002")) == 3 }, waitFor, 20*time.Millisecond,
		"both messages of the stranger kept, with the code")
	_, out, _ := b.cli(cfg, "pairing", "list")
	require.Contains(t, out, code)
	require.Contains(t, out, "pending")
	require.Contains(t, out, "Zoe")

	// /help shows the owner's commands to the owner only.
	tg.SendPrivate(owner, "/help")
	help := tg.WaitSent(t, owner.ID, 1, waitFor)[0].Plain
	require.Contains(t, help, "/approve CODE")
	tg.SendPrivate(owner, "/approve "+strings.ToLower(code))
	require.Contains(t, tg.WaitSent(t, owner.ID, 2, waitFor)[1].Plain, "Approved: Zoe (telegram user 2002) can talk to me now.")
	require.Contains(t, tg.WaitSent(t, zoe.ID, 2, waitFor)[1].Plain, "you're in", "the stranger is told, and got no second code")

	tg.SendPrivate(zoe, "hi again")
	require.Equal(t, "Nice to meet you!", tg.WaitSent(t, zoe.ID, 3, waitFor)[2].Plain)
	require.Contains(t, seen.all(), "hi again")
	for _, s := range seen.all() {
		require.NotContains(t, []string{"hello", "are you there?"}, s, "what they wrote before they were let in never reaches the model")
	}
	tg.SendPrivate(zoe, "/help")
	require.NotContains(t, tg.WaitSent(t, zoe.ID, 4, waitFor)[3].Plain, "/approve", "owners' commands are listed for owners only")

	// The approval is in the database: after a restart she is still in.
	r.stop(t)
	r2 := b.start(t, cfg)
	tg.SendPrivate(zoe, "still there?")
	require.Equal(t, "Nice to meet you!", tg.WaitSent(t, zoe.ID, 5, waitFor)[4].Plain)

	// From the CLI: one let in, one turned away.
	ben, cas := telegramtest.User{ID: 3003, FirstName: "Ben"}, telegramtest.User{ID: 4004, FirstName: "Cas"}
	tg.SendPrivate(ben, "hi")
	tg.SendPrivate(cas, "hi")
	benCode := pairingCode.FindStringSubmatch(tg.WaitSent(t, ben.ID, 1, waitFor)[0].Plain)[1]
	casCode := pairingCode.FindStringSubmatch(tg.WaitSent(t, cas.ID, 1, waitFor)[0].Plain)[1]
	status, out, errOut := b.cli(cfg, "pairing", "approve", benCode)
	require.Equal(t, 0, status, errOut)
	require.Equal(t, "approved telegram user 3003 (Ben) for bot default\n", out)
	status, _, errOut = b.cli(cfg, "pairing", "deny", casCode)
	require.Equal(t, 0, status, errOut)
	status, _, errOut = b.cli(cfg, "pairing", "approve", casCode)
	require.Equal(t, 1, status)
	require.Contains(t, errOut, "no code "+casCode+" is waiting")
	status, _, errOut = b.cli(cfg, "pairing", "approve")
	require.Equal(t, 2, status, "a usage error")
	require.Contains(t, errOut, "takes one code")

	// From the console: the overview lists the code; Approve lets in.
	dan := telegramtest.User{ID: 6006, FirstName: "Dan"}
	tg.SendPrivate(dan, "hey")
	danCode := pairingCode.FindStringSubmatch(tg.WaitSent(t, dan.ID, 1, waitFor)[0].Plain)[1]
	c := newConsoleClient(t, r2.addr, "127.0.0.1")
	cookie := c.login(t, b.env["PARLEY_API_TOKEN"])
	_, page := c.do(t, http.MethodGet, "/console/", nil, cookie)
	require.Contains(t, page, `id="pairing-`+danCode+`"`)
	require.Contains(t, page, "Dan")
	require.NotContains(t, page, `id="pairing-`+benCode+`"`, "answered codes are not waiting")
	csrf := consoleCSRF.FindStringSubmatch(page)[1]
	resp, _ := c.do(t, http.MethodPost, "/console/pairing/"+danCode+"/approve", url.Values{"csrf": {csrf}}, cookie)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	_, page = c.do(t, http.MethodGet, resp.Header.Get("Location"), nil, cookie)
	require.Contains(t, page, "Code "+danCode+" approved: its user can talk to the bot now, and was told so.")
	require.Contains(t, tg.WaitSent(t, dan.ID, 2, waitFor)[1].Plain, "you're in")
	resp, _ = c.do(t, http.MethodPost, "/console/pairing/"+danCode+"/deny", url.Values{"csrf": {csrf}}, cookie)
	_, page = c.do(t, http.MethodGet, resp.Header.Get("Location"), nil, cookie)
	require.Contains(t, page, "is no longer waiting")

	tg.SendPrivate(ben, "thanks")
	require.Equal(t, "Nice to meet you!", tg.WaitSent(t, ben.ID, 2, waitFor)[1].Plain, "let in from the CLI")
	tg.SendPrivate(cas, "please?")
	require.Eventually(t, func() bool { return len(b.storedMessagesOn(t, telegram.Platform, "4004")) == 3 }, waitFor, 20*time.Millisecond)
	require.Len(t, tg.Sent(cas.ID), 1, "denied: no answer, and no new code within the hour")
	require.NotContains(t, seen.all(), "please?")
}

// Pairing on Discord, through parley run: the stranger's DM gets a code,
// the owner approves it in their own DM, the stranger is told and their
// next message is answered.
func TestPairingOnDiscordThroughParleyRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	seen := &seenByModel{}
	b.model.Respond(seen.respond)
	fake := discordtest.NewServer(t)
	owner := discordtest.User{ID: "310000000000000009", Username: "olga", GlobalName: "Olga"}
	b.start(t, b.writeConfig(t, discordConfig(fake)+fmt.Sprintf("bot:\n  dm_policy: pairing\n  owners: [\"discord:%s\"]\n", owner.ID)))
	fake.WaitReady(t, waitFor)

	channel, _ := fake.SendDM(lin, "hello there")
	got := fake.WaitSent(t, channel, 1, waitFor)[0].Content
	m := pairingCode.FindStringSubmatch(got)
	require.NotNil(t, m, "the stranger gets a code: %q", got)
	ownerChannel, _ := fake.SendDM(owner, "/approve "+m[1])
	require.Contains(t, fake.WaitSent(t, ownerChannel, 1, waitFor)[0].Content, "Approved: Lin Yu (discord user "+lin.ID+")")
	welcome := fake.WaitSent(t, channel, 2, waitFor)[1].Content
	require.Contains(t, welcome, "you're in")
	fake.SendDM(lin, "so, hi")
	// The reply grows by edits (streaming): wait for the whole of it.
	fake.WaitShows(t, channel, waitFor, got, welcome, "Nice to meet you!")
	require.NotContains(t, seen.all(), "hello there", "never reaches the model")
}

// A flood of strangers under pairing: codes up to the cap on the
// platform, then the rest are ignored (nothing kept, nothing sent) and
// the log says so once.
func TestPairingFloodOfStrangers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tg := telegramtest.NewServer(t)
	r := b.start(t, b.writeConfig(t, telegramConfig(tg, "bot:\n  dm_policy: pairing\n")))
	const strangers = access.MaxPendingCodes + 5
	for i := range strangers {
		tg.SendPrivate(telegramtest.User{ID: int64(9000 + i), FirstName: fmt.Sprint("s", i)}, "let me in")
	}
	st := b.openStoreFile(t)
	given := func() int {
		n := 0
		for i := range strangers {
			if sent := tg.Sent(int64(9000 + i)); len(sent) > 0 {
				require.Len(t, sent, 1)
				require.Regexp(t, pairingCode, sent[0].Plain)
				n++
			}
		}
		return n
	}
	// Telegram's pace (30 messages a second) spreads the codes over 2 s.
	require.Eventually(t, func() bool {
		var kept int
		return st.DB().Raw(`SELECT count(*) FROM messages WHERE content = 'let me in'`).Scan(&kept).Error == nil &&
			kept == access.MaxPendingCodes && given() == access.MaxPendingCodes
	}, waitFor, 20*time.Millisecond, "%d kept and given codes, the rest ignored", access.MaxPendingCodes)
	require.Equal(t, 1, strings.Count(r.stderr.String(), "strangers are ignored"), "the log says so once")
	require.Empty(t, b.model.Requests(), "no stranger reaches the model")
}

// A code expires after an hour, on a clock the test moves: the owner's
// late /approve is refused, and the stranger's next message gets a new
// code, which the owner approves.
func TestPairingCodeExpires(t *testing.T) {
	t.Parallel()
	c := &clockedBot{testBundle: setup(t), clock: coretest.NewClock(companionT0)}
	c.model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("Welcome!") })
	tg := telegramtest.NewServer(t)
	owner, zoe := telegramtest.User{ID: 1001, FirstName: "Olga"}, telegramtest.User{ID: 2002, FirstName: "Zoe"}
	path := c.writeConfig(t, fmt.Sprintf(`adapters:
  web: {enabled: false}
  telegram: {token: %q, api_url: %q, send_rate: {per_second: 0, per_chat_per_second: 0}}
runs: {debounce: 0s}
bot: {dm_policy: pairing, owners: ["telegram:%d"]}
plugins:
  memory: {fact_every: 1000h, summary_every: 1000h}
`, tg.Token(), tg.URL(), owner.ID))
	cfg, err := config.Load(path, c.lookup)
	require.NoError(t, err)
	c.app, err = buildApp(context.Background(), cfg, (&coretest.Logs{}).Logger(), appOptions{
		wantAdapter: func(_ string, enabled bool) bool { return enabled }, clock: c.clock})
	require.NoError(t, err)
	require.NoError(t, c.app.start(context.Background()))
	t.Cleanup(func() { require.NoError(t, c.app.stop()) })
	c.settle(t)

	tg.SendPrivate(zoe, "hi")
	first := pairingCode.FindStringSubmatch(tg.WaitSent(t, zoe.ID, 1, waitFor)[0].Plain)[1]
	c.advance(t, 61*time.Minute)
	tg.SendPrivate(owner, "/approve "+first)
	require.Contains(t, tg.WaitSent(t, owner.ID, 1, waitFor)[0].Plain, "No code "+first+" is waiting: codes last an hour")
	tg.SendPrivate(zoe, "hi again")
	second := pairingCode.FindStringSubmatch(tg.WaitSent(t, zoe.ID, 2, waitFor)[1].Plain)[1]
	require.NotEqual(t, first, second, "a new code after the hour")
	tg.SendPrivate(owner, "/approve "+second)
	require.Contains(t, tg.WaitSent(t, owner.ID, 2, waitFor)[1].Plain, "Approved")
	tg.SendPrivate(zoe, "thanks!")
	require.Equal(t, "Welcome!", tg.WaitSent(t, zoe.ID, 4, waitFor)[3].Plain)

	// An erasure takes her approval too: within the minute the process
	// remembers it, she is a stranger again.
	tg.SendPrivate(zoe, "/erase confirm")
	require.Contains(t, tg.WaitSent(t, zoe.ID, 5, waitFor)[4].Plain, "everything I kept about you is deleted")
	c.advance(t, 2*time.Minute)
	tg.SendPrivate(zoe, "hello?")
	require.Regexp(t, pairingCode, tg.WaitSent(t, zoe.ID, 6, waitFor)[5].Plain)
}
