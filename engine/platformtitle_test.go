package engine_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/coretest"
	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
	"github.com/parleybot/parley/engine"
)

// titledAdapter is an adapter that names its platform (core.PlatformTitler).
type titledAdapter struct {
	*coretest.Adapter
	title string
}

func (a titledAdapter) PlatformTitle() string { return a.title }

// platformLayer puts the turn's PlatformTitle into the prompt.
type platformLayer struct{}

func (platformLayer) Name() string { return "platformlayer" }
func (platformLayer) PromptLayers(_ context.Context, t *core.Turn) ([]core.PromptLayer, error) {
	return []core.PromptLayer{{Level: core.LayerSession, Name: "platform", Text: "You are on " + t.PlatformTitle + "."}}, nil
}

// A plugin hears a conversation's platform named as its adapter names it,
// or, when the adapter does not, by the platform's name capitalised: the
// core knows no platform, so ones it has never heard of work alike.
func TestTurnNamesThePlatformAsItsAdapterDoes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	model := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: model.URL(), APIKey: "sk-test", Model: "test-model", Timeout: waitFor})
	require.NoError(t, err)
	irc := titledAdapter{Adapter: coretest.NewAdapter("irc"), title: "IRC"}
	xmpp := coretest.NewAdapter("xmpp")
	d, err := engine.New(engine.Config{Store: openStore(t), LLM: client,
		Plugins: []core.Plugin{platformLayer{}}, Adapters: []core.Adapter{irc, xmpp}})
	require.NoError(t, err)
	for _, a := range []*coretest.Adapter{irc.Adapter, xmpp} {
		require.NoError(t, a.Start(ctx, d))
	}
	require.NoError(t, d.Start(ctx))
	t.Cleanup(func() { require.NoError(t, d.Stop(context.Background())) })

	for i, tc := range []struct {
		adapter *coretest.Adapter
		want    string
	}{
		{irc.Adapter, "You are on IRC."},
		{xmpp, "You are on Xmpp."},
	} {
		model.Enqueue(llmtest.Text("hi"))
		require.NoError(t, tc.adapter.Deliver(ctx, "ada", "hello"))
		tc.adapter.WaitSent(t, 1, waitFor)
		req := model.WaitRequests(t, i+1, waitFor)[i]
		require.Contains(t, req.Messages()[0].Content, tc.want)
	}
}

func TestPlatformTitle(t *testing.T) {
	t.Parallel()
	for p, want := range map[core.Platform]string{"irc": "Irc", "telegram": "Telegram", "élan": "Élan", "": ""} {
		require.Equal(t, want, p.Title(), "%q", p)
	}
	require.Equal(t, "Xmpp", core.PlatformTitle(coretest.NewAdapter("xmpp")))
	require.Equal(t, "IRC", core.PlatformTitle(titledAdapter{Adapter: coretest.NewAdapter("irc"), title: "IRC"}))
	require.Equal(t, "Irc", core.PlatformTitle(titledAdapter{Adapter: coretest.NewAdapter("irc")}), "an empty title is no title")
}
