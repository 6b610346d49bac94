package slacktest_test

import (
	"testing"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/require"
)

// A forged tap carries a value the message does not show, on a bot
// message; it is delivered and acknowledged like any other.
func TestForgeTap(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	c := tb.runSocket(t)
	receive(t, c.hellos)
	ch, _ := tb.srv.SendDM(tb.alice, "hi")
	ts := question(t, tb.api, ch)

	_, err := tb.srv.ForgeTap(tb.alice, ch, "1.000001", "v0")
	require.Error(t, err, "no such message")
	trigger, err := tb.srv.ForgeTap(tb.alice, ch, ts, "v9")
	require.NoError(t, err)
	e := receive(t, c.taps)
	cb, ok := e.Data.(slack.InteractionCallback)
	require.True(t, ok, "data is %T", e.Data)
	require.Equal(t, trigger, cb.TriggerID)
	require.Equal(t, ts, cb.Container.MessageTs)
	act := cb.ActionCallback.BlockActions[0]
	require.Equal(t, "v9", act.Value)
	require.Equal(t, "forged", act.ActionID)
	require.Len(t, cb.Message.Blocks.BlockSet, 2, "the message as it shows")

	require.NoError(t, c.smc.Ack(*e.Request))
	require.False(t, tb.srv.WaitTapAck(t, trigger, wait).Late)
}
