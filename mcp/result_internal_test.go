package mcp

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

func TestConvertResult(t *testing.T) {
	t.Parallel()
	png := bytes.Repeat([]byte{0x89}, 12*1024)
	svg := []byte("<svg/>")
	result := func(c ...sdk.Content) *sdk.CallToolResult { return &sdk.CallToolResult{Content: c} }

	t.Run("text parts joined by blank lines", func(t *testing.T) {
		out := convertResult(result(&sdk.TextContent{Text: "one"}, &sdk.TextContent{Text: "two"}), false, 100, nil)
		require.Equal(t, "one\n\ntwo", out.Text)
		require.Empty(t, out.Images)
	})
	t.Run("image with vision", func(t *testing.T) {
		out := convertResult(result(&sdk.TextContent{Text: "look:"}, &sdk.ImageContent{MIMEType: "image/png", Data: png}), true, 1000, nil)
		require.Equal(t, []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(png)}, out.Images)
		require.Equal(t, "look:\n\n[image/png image, 12 KB: attached as image 1]", out.Text)
	})
	t.Run("image without vision", func(t *testing.T) {
		out := convertResult(result(&sdk.ImageContent{MIMEType: "image/png", Data: png}), false, 1000, nil)
		require.Empty(t, out.Images)
		require.Equal(t, "[image/png image, 12 KB: not shown, the model cannot see images here]", out.Text)
	})
	t.Run("image of a type the model does not take", func(t *testing.T) {
		out := convertResult(result(&sdk.ImageContent{MIMEType: "image/svg+xml", Data: svg}), true, 1000, nil)
		require.Empty(t, out.Images)
		require.Contains(t, out.Text, "[image/svg+xml image, 6 bytes: not shown")
	})
	t.Run("audio", func(t *testing.T) {
		out := convertResult(result(&sdk.AudioContent{MIMEType: "audio/wav", Data: png}), true, 1000, nil)
		require.Equal(t, "[audio/wav audio, 12 KB: not shown, the model cannot hear audio here]", out.Text)
	})
	t.Run("resources", func(t *testing.T) {
		out := convertResult(result(
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.txt", MIMEType: "text/plain", Text: "hello"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a.gz", MIMEType: "application/gzip", Blob: png}},
			&sdk.ResourceLink{URI: "file:///b.txt", Name: "b.txt", Description: "the b file"},
		), true, 1000, nil)
		require.Equal(t, "[resource file:///a.txt]\nhello\n\n"+
			"[resource file:///a.gz: application/gzip, 12 KB of binary data, not shown]\n\n"+
			"[resource link] file:///b.txt (b.txt): the b file", out.Text)
	})
	t.Run("image resource with vision", func(t *testing.T) {
		out := convertResult(result(&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///p.png", MIMEType: "image/png", Blob: png}}), true, 1000, nil)
		require.Len(t, out.Images, 1)
		require.Contains(t, out.Text, "attached as image 1")
	})
	t.Run("structured content only", func(t *testing.T) {
		out := convertResult(&sdk.CallToolResult{StructuredContent: map[string]any{"temp": 21}}, false, 1000, nil)
		require.JSONEq(t, `{"temp":21}`, out.Text)
	})
	t.Run("structured content beside content is not repeated", func(t *testing.T) {
		out := convertResult(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "21"}}, StructuredContent: map[string]any{"temp": 21}}, false, 1000, nil)
		require.Equal(t, "21", out.Text)
	})
	t.Run("cut at a rune boundary with a note", func(t *testing.T) {
		long := strings.Repeat("é", 30) // 2 bytes each
		out := convertResult(result(&sdk.TextContent{Text: long}), false, 10, nil)
		require.Equal(t, strings.Repeat("é", 10)+"\n\n[cut: the result was 30 characters; the first 10 are shown]", out.Text)
	})
	t.Run("not cut at the limit", func(t *testing.T) {
		out := convertResult(result(&sdk.TextContent{Text: "0123456789"}), false, 10, nil)
		require.Equal(t, "0123456789", out.Text)
	})
}
