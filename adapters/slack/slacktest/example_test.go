package slacktest_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
)

// TestEchoBot is the README's example: a whole bot on slack-go against
// the fake, ignoring the echo of its own posts.
func TestEchoBot(t *testing.T) {
	t.Parallel()
	srv := slacktest.NewServer(t)
	alice := slacktest.User{ID: "U0ALICE001", Name: "alice", RealName: "Alice"}

	api := slack.New(srv.BotToken(),
		slack.OptionAPIURL(srv.APIURL()),
		slack.OptionAppLevelToken(srv.AppToken()))
	smc := socketmode.New(api)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = smc.RunContext(ctx) })
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-smc.Events:
				if e.Type != socketmode.EventTypeEventsAPI {
					continue
				}
				_ = smc.Ack(*e.Request)
				ev := e.Data.(slackevents.EventsAPIEvent)
				m, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
				if ok && m.BotID == "" {
					_, _, _ = api.PostMessage(m.Channel, slack.MsgOptionText("you said: "+m.Text, false))
				}
			}
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })

	chID, _ := srv.SendDM(alice, "hi")
	sent := srv.WaitSent(t, chID, 1, 5*time.Second)
	require.Equal(t, "you said: hi", sent[0].Text)

	srv.SendDM(alice, "again")
	sent = srv.WaitSent(t, chID, 2, 5*time.Second)
	require.Equal(t, "you said: again", sent[1].Text)
	srv.WaitAcked(t, srv.LastEventID(), 5*time.Second)
	require.Len(t, srv.AllSent(), 2, "the echoes were not answered")
}
