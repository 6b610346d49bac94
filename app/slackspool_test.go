package app

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/adapters/slack/slacktest"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/internal/diskfault/diskfaulttest"
)

// Slack retries an event it got no 2xx for three times, within minutes,
// then forgets it. A store that cannot write for longer than that (a full
// disk) would lose the DM; the inbound spool keeps it instead: the event
// is acknowledged at its first delivery, and answered once the database
// takes writes again.
func TestSlackDMOutlivesAStoreOutageInTheSpool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	disk := diskfaulttest.New(t, "24m")
	fake := slacktest.NewServer(t, slacktest.WithRetryDelay(10*time.Millisecond))
	cfg := b.writeConfigFor(t, "sqlite", filepath.Join(disk.Dir, "parley.db"), slackConfig(fake, "events")+"plugins:\n  memory: {enabled: false}\n")
	bot := b.startOnDisk(t, cfg, disk, nil) // the spool on an ordinary disk
	fake.UseEventsAPI("http://" + bot.addr + "/webhooks/slack/events")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log (warnings and errors):\n%s", filterLog(bot.logs.String()))
		}
	})

	disk.Fill(t)
	channel, _ := fake.SendDM(mei, "are you there?")
	id := fake.LastEventID()
	fake.WaitAcked(t, id, waitFor)
	require.Equal(t, 1, fake.Deliveries(id), "taken at the first delivery: Slack has nothing to retry")

	b.model.Enqueue(llmtest.Text("I am! Sorry for the wait."))
	disk.Free(t)
	fake.WaitShows(t, channel, time.Minute, "I am! Sorry for the wait.")
}
