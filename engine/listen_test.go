package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
	"github.com/parleybot/parley/store/storetest"
)

// A replica that polls once an hour still answers at once: work another
// replica queued (a DM it took in, a message routed to it) wakes it
// through PostgreSQL's NOTIFY.
func TestReplicasWakeEachOtherThroughNotify(t *testing.T) {
	t.Parallel()
	dsn := storetest.PostgresDSN(t)
	mine, other := storetest.OpenPostgresAt(t, dsn), storetest.OpenPostgresAt(t, dsn)
	require.NoError(t, mine.Migrate(context.Background()))
	model := llmtest.NewServer(t)
	model.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("hello from the idle replica") })
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "m", Timeout: 5 * time.Second})
	require.NoError(t, err)
	ad := coretest.NewAdapter(web)
	d, err := engine.New(engine.Config{Store: mine, LLM: client, Adapters: []core.Adapter{ad},
		PollInterval: time.Hour, ScheduledMessages: true, Listener: mine})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, ad.Start(ctx, d))
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })

	// Another replica took in a DM and planned its turn.
	res, err := other.RecordInbound(ctx, core.InboundRecord{Platform: web, ChannelThreadID: "u1", Text: "hi",
		Now: time.Now(), PlanRun: true})
	require.NoError(t, err)
	sent := ad.WaitSent(t, 1, waitFor)
	require.Equal(t, "hello from the idle replica", sent[0].Text)

	// And a message routed through another replica's API, due now.
	_, err = other.ScheduleMessage(ctx, &core.Job{ConversationID: res.Conversation.ID, Text: "routed", DueAt: time.Now()}, false, 50)
	require.NoError(t, err)
	sent = ad.WaitSent(t, 2, waitFor)
	require.Equal(t, "routed", sent[1].Text)
}
