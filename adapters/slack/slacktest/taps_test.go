package slacktest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// question posts text with buttons A and B (values v0, v1) in ch.
func question(t *testing.T, api *slack.Client, ch string) string {
	t.Helper()
	buttons := []slack.BlockElement{
		slack.NewButtonBlockElement("choice_0", "v0", slack.NewTextBlockObject(slack.PlainTextType, "A", false, false)),
		slack.NewButtonBlockElement("choice_1", "v1", slack.NewTextBlockObject(slack.PlainTextType, "B", false, false)),
	}
	_, ts, err := api.PostMessage(ch, slack.MsgOptionText("A or B?", false), slack.MsgOptionBlocks(
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "A or B?", false, false), nil, nil),
		slack.NewActionBlock("", buttons...)))
	require.NoError(t, err)
	return ts
}

func TestTapOverSocketMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	receive(t, c.hellos)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	ts := question(t, tb.api, ch)
	m, _ := tb.srv.BotMessage(ch, ts)
	require.Equal(t, []slacktest.Button{{Label: "A", ActionID: "choice_0", Value: "v0"}, {Label: "B", ActionID: "choice_1", Value: "v1"}}, m.Buttons())

	_, err := tb.srv.Tap(tb.alice, ch, ts, "v9")
	require.Error(t, err, "no such button")
	trigger, err := tb.srv.Tap(tb.alice, ch, ts, "v1")
	require.NoError(t, err)
	e := receive(t, c.taps)
	require.Equal(t, "interactive", e.Request.Type)
	cb, ok := e.Data.(slack.InteractionCallback)
	require.True(t, ok, "data is %T", e.Data)
	require.Equal(t, slack.InteractionTypeBlockActions, cb.Type)
	require.Equal(t, trigger, cb.TriggerID)
	require.Equal(t, tb.alice.ID, cb.User.ID)
	require.Equal(t, ts, cb.Container.MessageTs)
	require.Equal(t, ch, cb.Container.ChannelID)
	require.Equal(t, ch, cb.Channel.ID)
	require.Equal(t, "A or B?", cb.Message.Text)
	require.Len(t, cb.Message.Blocks.BlockSet, 2)
	require.Len(t, cb.ActionCallback.BlockActions, 1)
	act := cb.ActionCallback.BlockActions[0]
	require.Equal(t, "choice_1", act.ActionID)
	require.Equal(t, "v1", act.Value)
	require.Equal(t, "B", act.Text.Text)
	require.NotEmpty(t, act.BlockID)
	require.NotEmpty(t, act.ActionTs)

	require.NoError(t, c.smc.Ack(*e.Request))
	ack := tb.srv.WaitTapAck(t, trigger, wait)
	require.Zero(t, ack.Status)
	require.False(t, ack.Late)

	// The bot closes the question: its buttons become a context line.
	_, _, _, err = tb.api.UpdateMessage(ch, ts, slack.MsgOptionText("A or B?", false), slack.MsgOptionBlocks(
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "A or B?", false, false), nil, nil),
		slack.NewContextBlock("", slack.NewTextBlockObject(slack.PlainTextType, "✓ B", false, false))))
	require.NoError(t, err)
	m, _ = tb.srv.BotMessage(ch, ts)
	require.Empty(t, m.Buttons())
	require.Equal(t, []string{"✓ B"}, m.Context())
	_, err = tb.srv.Tap(tb.alice, ch, ts, "v0")
	require.Error(t, err, "nothing left to tap")

	// An update without blocks keeps them.
	_, _, _, err = tb.api.UpdateMessage(ch, ts, slack.MsgOptionText("A or B!", false))
	require.NoError(t, err)
	m, _ = tb.srv.BotMessage(ch, ts)
	require.Equal(t, []string{"✓ B"}, m.Context())
}

func TestTapOverHTTP(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	got := make(chan string, 4)
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sv, err := slack.NewSecretsVerifier(r.Header, tb.srv.SigningSecret())
		if err == nil {
			_, _ = sv.Write(body)
			err = sv.Ensure()
		}
		if err != nil || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		form, _ := url.ParseQuery(string(body))
		got <- form.Get("payload")
	}))
	t.Cleanup(app.Close)
	tb.srv.UseInteractivityURL(app.URL)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	ts := question(t, tb.api, ch)
	trigger, err := tb.srv.Tap(tb.alice, ch, ts, "v0")
	require.NoError(t, err)
	ack := tb.srv.WaitTapAck(t, trigger, wait)
	require.Equal(t, http.StatusOK, ack.Status)
	require.False(t, ack.Late)
	payload := receive(t, got)
	require.Contains(t, payload, `"type":"block_actions"`)
	require.Contains(t, payload, `"value":"v0"`)
	require.Contains(t, payload, `"message_ts":"`+ts+`"`)
}

func TestPostEphemeral(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	tb.srv.AddUser(tb.bob)
	_, err := tb.api.PostEphemeral(ch, tb.alice.ID, slack.MsgOptionText("only you", false))
	require.NoError(t, err)
	_, err = tb.api.PostEphemeral(ch, tb.bob.ID, slack.MsgOptionText("not here", false))
	require.ErrorContains(t, err, "user_not_in_channel")
	_, err = tb.api.PostEphemeral("D0NOPE0001", tb.alice.ID, slack.MsgOptionText("x", false))
	require.ErrorContains(t, err, "channel_not_found")
	eph := tb.srv.WaitEphemerals(t, ch, 1, wait)
	require.Len(t, eph, 1)
	require.Equal(t, slacktest.Ephemeral{Channel: ch, User: tb.alice.ID, Text: "only you", At: eph[0].At}, eph[0])
	require.Empty(t, tb.srv.Sent(ch), "an ephemeral message is not a posted one")
}

func TestButtonsAreCheckedAsSlackChecksThem(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	long := slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("x", 76), false, false))
	_, _, err := tb.api.PostMessage(ch, slack.MsgOptionText("t", false), slack.MsgOptionBlocks(slack.NewActionBlock("", long)))
	require.ErrorContains(t, err, "invalid_blocks")
	dup := slack.NewButtonBlockElement("a", "v", slack.NewTextBlockObject(slack.PlainTextType, "x", false, false))
	_, _, err = tb.api.PostMessage(ch, slack.MsgOptionText("t", false), slack.MsgOptionBlocks(slack.NewActionBlock("", dup, dup)))
	require.ErrorContains(t, err, "invalid_blocks")
}
