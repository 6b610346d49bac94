package upload

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

func TestAltTextIsThePlainCaptionCutToSlacksLimit(t *testing.T) {
	t.Parallel()
	require.Equal(t, "Done! See the docs (https://example.com)", altText(core.OutboundMessage{Format: core.FormatRichText, Text: "**Done!** See [the docs](https://example.com)"}))
	require.Equal(t, "**as written**", altText(core.OutboundMessage{Text: " **as written**\n"}))

	alt := altText(core.OutboundMessage{Text: strings.Repeat("é", 1500)})
	require.Equal(t, maxAltText, utf8.RuneCountInString(alt))
	require.True(t, strings.HasSuffix(alt, "é…"))
}

func TestCaptionIsMrkdwn(t *testing.T) {
	t.Parallel()
	require.Equal(t, "a &lt;b&gt; &amp; *c*", caption(core.OutboundMessage{Text: "a <b> & *c*"}))
	require.Equal(t, "*bold*", caption(core.OutboundMessage{Format: core.FormatRichText, Text: "**bold**"}))
	require.Empty(t, caption(core.OutboundMessage{Text: " \n"}))
}
