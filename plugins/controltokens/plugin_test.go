package controltokens_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/plugins/controltokens"
)

func TestProcessOutputActsOnTheFinalBlock(t *testing.T) {
	t.Parallel()
	p := controltokens.New()
	ctx := context.Background()

	r := &core.Reply{Text: "Talk soon!\n<WANT_MORE>\n<PROACTIVE>{\"delay_seconds\":3600,\"reason\":\"bread\"}"}
	require.NoError(t, p.ProcessOutput(ctx, &core.Turn{}, r))
	require.Equal(t, "Talk soon!", r.Text)
	require.True(t, r.Continue)
	require.Equal(t, &core.ProactiveRequest{Delay: time.Hour, Reason: "bread"}, r.Proactive)

	r = &core.Reply{Text: "<SILENCE>"}
	require.NoError(t, p.ProcessOutput(ctx, &core.Turn{}, r))
	require.True(t, r.Silent)
	require.Empty(t, r.Text)

	r = &core.Reply{Text: "More?\n<WANT_MORE>"}
	require.NoError(t, p.ProcessOutput(ctx, &core.Turn{Continuation: true}, r))
	require.False(t, r.Continue, "a continuation never continues")
	require.Contains(t, r.Notes, "ignored <WANT_MORE>: a turn continues at most once")
}
