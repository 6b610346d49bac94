package discordtest_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/discord/discordtest"
	"github.com/parleybot/parley/core/coretest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestEditReplacesContentAndKeepsItsHistory(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	tb := setup(t, discordtest.WithNow(clock.Now))
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m, err := c.dg.ChannelMessageSend(chID, "Hel")
	require.NoError(t, err)

	clock.Advance(time.Second)
	edited, err := c.dg.ChannelMessageEdit(chID, m.ID, "Hello, wor")
	require.NoError(t, err)
	require.Equal(t, "Hello, wor", edited.Content)
	require.NotNil(t, edited.EditedTimestamp)
	require.Equal(t, t0.Add(time.Second), edited.EditedTimestamp.UTC())
	require.Equal(t, t0, edited.Timestamp.UTC(), "the creation time stays")
	clock.Advance(time.Second)
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, "Hello, world!")
	require.NoError(t, err)

	got, ok := tb.srv.Message(m.ID)
	require.True(t, ok)
	require.Equal(t, "Hello, world!", got.Content)
	require.Equal(t, t0.Add(2*time.Second), got.EditedAt)
	require.Equal(t, []discordtest.Edit{
		{MessageID: m.ID, Content: "Hello, wor", At: t0.Add(time.Second)},
		{MessageID: m.ID, Content: "Hello, world!", At: t0.Add(2 * time.Second)},
	}, got.Edits)
	require.Equal(t, got.Edits, tb.srv.Edits(chID))
	require.Equal(t, []discordtest.SentMessage{got}, tb.srv.Sent(chID), "Sent shows the content now")
	require.Equal(t, 2, tb.srv.Calls("messages.edit"))
}

func TestEditAndDeleteAnswerAsDiscordDoes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, userMsg := tb.srv.SendDM(tb.alice, "hi")
	m, err := c.dg.ChannelMessageSend(chID, "to go")
	require.NoError(t, err)
	keep, err := c.dg.ChannelMessageSend(chID, "to keep")
	require.NoError(t, err)

	_, err = c.dg.ChannelMessageEdit(chID, "1234567890123", "x")
	requireRESTError(t, err, http.StatusNotFound, 10008)
	_, err = c.dg.ChannelMessageEdit(chID, userMsg, "x")
	requireRESTError(t, err, http.StatusForbidden, 50005)
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, strings.Repeat("x", 2001))
	requireRESTError(t, err, http.StatusBadRequest, 50035)
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, "")
	requireRESTError(t, err, http.StatusBadRequest, 50006)
	_, err = c.dg.ChannelMessageEdit("999999999999999999", m.ID, "x")
	requireRESTError(t, err, http.StatusNotFound, 10003)

	require.NoError(t, c.dg.ChannelMessageDelete(chID, m.ID))
	requireRESTError(t, c.dg.ChannelMessageDelete(chID, m.ID), http.StatusNotFound, 10008)
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, "back?")
	requireRESTError(t, err, http.StatusNotFound, 10008)

	got, ok := tb.srv.Message(m.ID)
	require.True(t, ok)
	require.True(t, got.Deleted)
	require.Equal(t, "to go", got.Content)
	require.Empty(t, got.Edits, "no refused edit is recorded")
	require.Len(t, tb.srv.Sent(chID), 2, "Sent keeps deleted messages")
	visible := tb.srv.Visible(chID)
	require.Len(t, visible, 1)
	require.Equal(t, keep.ID, visible[0].MessageID)
	require.Equal(t, 2, tb.srv.Calls("messages.delete"))
}

func TestWaitShowsWaitsForTheFinishedText(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m, err := c.dg.ChannelMessageSend(chID, "Hel")
	require.NoError(t, err)
	gone, err := c.dg.ChannelMessageSend(chID, "to go")
	require.NoError(t, err)
	require.NoError(t, c.dg.ChannelMessageDelete(chID, gone.ID))

	f := &failures{TB: t}
	tb.srv.WaitShows(f, chID, 20*time.Millisecond, "Hello, world!")
	require.Equal(t, []string{`discordtest: waited 20ms for channel ` + chID +
		` to show ["Hello, world!"], it shows ["Hel"]`}, f.msgs, "the failure tells what the channel shows")

	edited := make(chan error, 1)
	go func() {
		_, err := c.dg.ChannelMessageEdit(chID, m.ID, "Hello, wor")
		if err == nil {
			_, err = c.dg.ChannelMessageEdit(chID, m.ID, "Hello, world!")
		}
		edited <- err
	}()
	shown := tb.srv.WaitShows(t, chID, wait, "Hello, world!")
	require.NoError(t, <-edited)
	require.Len(t, shown, 1, "a deleted message is not shown")
	require.Equal(t, m.ID, shown[0].MessageID)
	require.Equal(t, "Hello, world!", shown[0].Content)
}

func TestSixthEditWithinFiveSecondsIsRateLimited(t *testing.T) {
	t.Parallel()
	clock := coretest.NewClock(t0)
	tb := setup(t, discordtest.WithNow(clock.Now))
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	other, _ := tb.srv.SendDM(tb.bob, "hi")
	m, err := c.dg.ChannelMessageSend(chID, "0")
	require.NoError(t, err)
	for i := range 5 {
		_, err := c.dg.ChannelMessageEdit(chID, m.ID, strings.Repeat("x", i+1))
		require.NoError(t, err)
		clock.Advance(time.Second / 2)
	}
	// At t0+2.5s, five edits since t0: the next is refused until t0+5s.
	resp := patch(t, tb.srv, chID, m.ID, "six")
	require.Equal(t, http.StatusTooManyRequests, resp.status)
	require.Equal(t, "5", resp.header.Get("X-RateLimit-Limit"))
	require.Equal(t, "0", resp.header.Get("X-RateLimit-Remaining"))
	require.Equal(t, "2.500", resp.header.Get("X-RateLimit-Reset-After"))
	require.Equal(t, "3", resp.header.Get("Retry-After"))
	require.NotEmpty(t, resp.header.Get("X-RateLimit-Bucket"))
	require.Equal(t, map[string]any{"message": "You are being rate limited.", "retry_after": 2.5, "global": false}, resp.body)

	// discordgo sees the limit as a RateLimitError.
	_, err = c.dg.ChannelMessageEdit(chID, m.ID, "six", discordgo.WithRetryOnRatelimit(false))
	var rl *discordgo.RateLimitError
	require.ErrorAs(t, err, &rl)
	require.Equal(t, 2500*time.Millisecond, rl.RetryAfter)
	require.Equal(t, 2, tb.srv.RateLimited())

	// Another channel has its own window.
	o, err := c.dg.ChannelMessageSend(other, "o")
	require.NoError(t, err)
	_, err = c.dg.ChannelMessageEdit(other, o.ID, "o2")
	require.NoError(t, err)

	clock.Advance(2500 * time.Millisecond)
	require.Equal(t, http.StatusOK, patch(t, tb.srv, chID, m.ID, "six").status, "the first edit left the window")
	got, _ := tb.srv.Message(m.ID)
	require.Len(t, got.Edits, 6)
	require.Equal(t, "six", got.Content)
}

func TestEditRateLimitCanBeInjectedOrTurnedOff(t *testing.T) {
	t.Parallel()
	tb := setup(t, discordtest.WithEditRateLimit(0, 0))
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	m, err := c.dg.ChannelMessageSend(chID, "0")
	require.NoError(t, err)
	for i := range 20 {
		_, err := c.dg.ChannelMessageEdit(chID, m.ID, strings.Repeat("x", i+1))
		require.NoError(t, err)
	}
	tb.srv.RateLimitNext("messages.edit", 3*time.Second)
	resp := patch(t, tb.srv, chID, m.ID, "limited")
	require.Equal(t, http.StatusTooManyRequests, resp.status)
	require.Equal(t, 3.0, resp.body["retry_after"])
	got, _ := tb.srv.Message(m.ID)
	require.Equal(t, strings.Repeat("x", 20), got.Content)
}

func TestLostAnswerStillActs(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	tb.srv.LoseNextAnswer("messages")
	_, err := sendWithNonce(c, chID, nonceSend{Content: "once", Nonce: "k.0", EnforceNonce: true})
	requireRESTError(t, err, http.StatusInternalServerError, 0)
	again, err := sendWithNonce(c, chID, nonceSend{Content: "once", Nonce: "k.0", EnforceNonce: true})
	require.NoError(t, err)
	sent := tb.srv.Sent(chID)
	require.Len(t, sent, 1, "the lost answer's message was created, the retry returned it")
	require.Equal(t, sent[0].MessageID, again.ID)
}

// answer is an HTTP answer of the fake.
type answer struct {
	status int
	header http.Header
	body   map[string]any
}

// patch edits a message with a bare request, to read the answer's headers.
func patch(t *testing.T, srv *discordtest.Server, channelID, messageID, content string) answer {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"content": content})
	req, err := http.NewRequest(http.MethodPatch, discordgo.EndpointChannelMessage(channelID, messageID), strings.NewReader(string(body)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bot "+srv.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := srv.HTTPClient().Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }()
	out := answer{status: resp.StatusCode, header: resp.Header}
	_ = json.NewDecoder(resp.Body).Decode(&out.body)
	return out
}

// A held answer: the message is created at once, the client hears only
// once released, and a nonce sent again finds it.
func TestHeldAnswerActsFirst(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.restClient(t)
	chID, _ := tb.srv.SendDM(tb.alice, "hi")
	tb.srv.HoldAnswers("messages")
	done := make(chan error, 1)
	go func() {
		_, err := sendWithNonce(c, chID, nonceSend{Content: "held", Nonce: "h.0", EnforceNonce: true})
		done <- err
	}()
	tb.srv.WaitHeld(t, "messages", 1, wait)
	require.Len(t, tb.srv.Sent(chID), 1, "created before the answer")
	select {
	case err := <-done:
		t.Fatalf("answered while held: %v", err)
	default:
	}
	tb.srv.ReleaseAnswers("messages")
	require.NoError(t, <-done)
	again, err := sendWithNonce(c, chID, nonceSend{Content: "held", Nonce: "h.0", EnforceNonce: true})
	require.NoError(t, err)
	require.Len(t, tb.srv.Sent(chID), 1)
	require.Equal(t, tb.srv.Sent(chID)[0].MessageID, again.ID)
}
