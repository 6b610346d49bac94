package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
	"github.com/parleybot/parley/core/llm"
)

// imageServer has tools returning images: "shot" n PNGs (argument n,
// default 1) each filled with its index, "svg" an SVG, "jpeg_resource" a
// JPEG as an embedded resource, and "broken" a PNG in an error result.
func imageServer() *sdk.Server {
	srv := newSDKServer()
	addTool(srv, "shot", `{"type":"object","properties":{"n":{"type":"integer"}}}`,
		func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
			n := 1
			if v, ok := args["n"].(float64); ok {
				n = int(v)
			}
			res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "the page:"}}}
			for i := range n {
				res.Content = append(res.Content, &sdk.ImageContent{MIMEType: "image/png", Data: pngBytes(i + 1)})
			}
			return res, nil
		})
	addTool(srv, "svg", objectSchema, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/svg+xml", Data: []byte("<svg/>")}}}, nil
	})
	addTool(srv, "jpeg_resource", objectSchema, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///p.jpg", MIMEType: "image/jpeg", Blob: []byte("jpeg bytes")}}}}, nil
	})
	addTool(srv, "broken", objectSchema, func(context.Context, map[string]any) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "no page"}, &sdk.ImageContent{MIMEType: "image/png", Data: pngBytes(9)}}}, nil
	})
	return srv
}

// pngBytes stands for the i-th picture (the bytes are not checked).
func pngBytes(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 2048) }

// turnTools returns the tools Tools offers turn, by name.
func turnTools(t *testing.T, m *Manager, turn *core.Turn) map[string]llm.Tool {
	t.Helper()
	ts, err := m.Tools(context.Background(), turn)
	require.NoError(t, err)
	out := map[string]llm.Tool{}
	for _, tl := range ts {
		out[tl.Name] = tl
	}
	return out
}

func share(tools map[string]llm.Tool, args string) (string, error) {
	return tools[shareImageTool].Call(context.Background(), json.RawMessage(args))
}

func TestShareImage(t *testing.T) {
	t.Parallel()
	m := memManager(t, Options{Vision: true}, map[string]*sdk.Server{"web": imageServer()})
	waitState(t, m, "web", isOK)
	turn := &core.Turn{}
	tools := turnTools(t, m, turn)
	require.Contains(t, tools, shareImageTool)

	out, err := call(tools["web__shot"], `{"n":2}`)
	require.NoError(t, err)
	require.Equal(t, "the page:\n\n"+
		`[image/png image, 2 KB: attached as image 1; to show it to the user, call share_image {"image":"mcp-1"}]`+"\n\n"+
		`[image/png image, 2 KB: attached as image 2; to show it to the user, call share_image {"image":"mcp-2"}]`, out.Text)
	require.Len(t, out.Images, 2, "the model still sees them")
	require.Empty(t, turn.Files, "nothing goes to the user unless the model shares it")

	said, err := share(tools, `{"image":"mcp-2"}`)
	require.NoError(t, err)
	require.Equal(t, "Image mcp-2 will be sent with your reply: write the caption as your reply.", said)
	require.Equal(t, []core.OutboundFile{{Kind: core.AttachImage, Name: "mcp-2.png", MIME: "image/png", Data: pngBytes(2)}}, turn.Files)

	// Handles go on counting across calls; an image resource has one too.
	out, err = call(tools["web__jpeg_resource"], `{}`)
	require.NoError(t, err)
	require.Contains(t, out.Text, `[image/jpeg image resource file:///p.jpg, 10 bytes: attached as image 1; to show it to the user, call share_image {"image":"mcp-3"}]`)
	_, err = share(tools, `{"image":" mcp-3 "}`)
	require.NoError(t, err)
	require.Equal(t, core.OutboundFile{Kind: core.AttachImage, Name: "mcp-3.jpg", MIME: "image/jpeg", Data: []byte("jpeg bytes")}, turn.Files[1])

	// A type platforms do not show, and an error result, get no handle.
	out, err = call(tools["web__svg"], `{}`)
	require.NoError(t, err)
	require.Equal(t, "[image/svg+xml image, 6 bytes: not shown, the model cannot take this image type; it cannot be sent to the user (only PNG, JPEG, GIF and WebP can)]", out.Text)
	_, err = call(tools["web__broken"], `{}`)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "share_image")

	// Bad calls are tool errors saying what to fix; nothing is attached.
	for args, want := range map[string]string{
		`{"image":"mcp-2"}`:           `share_image: image mcp-2 is shared already: it goes with your reply once`,
		`{"image":"mcp-4"}`:           `share_image: there is no image "mcp-4" in this turn; the images are mcp-1, mcp-2, mcp-3`,
		`{}`:                          `share_image: "image" is missing: give the handle a tool's result named, like "mcp-1"`,
		`{"image":""}`:                `share_image: "image" is missing`,
		`{"image":1}`:                 `share_image: json: cannot unmarshal number`,
		`{"image":"mcp-1","n":2}`:     `share_image: json: unknown field "n" (want {"image": "mcp-1"}`,
		`{"image":["mcp-1","mcp-2"]}`: `share_image: json: cannot unmarshal array`,
	} {
		_, err := share(tools, args)
		require.ErrorContains(t, err, want, args)
	}
	require.Len(t, turn.Files, 2)

	// At most core.MaxReplyPictures a reply, counting every file.
	turn.Files = append(turn.Files, core.OutboundFile{Kind: core.AttachImage, Name: "picture-3.png"})
	_, err = share(tools, `{"image":"mcp-1"}`)
	require.NoError(t, err)
	out, err = call(tools["web__shot"], `{}`)
	require.NoError(t, err)
	require.Contains(t, out.Text, `"mcp-4"`)
	_, err = share(tools, `{"image":"mcp-4"}`)
	require.EqualError(t, err, "share_image: this reply has 4 pictures already, the most it may carry")
	require.Len(t, turn.Files, core.MaxReplyPictures)

	// Another turn has its own images: the handles of this one mean
	// nothing there.
	other := &core.Turn{}
	_, err = share(turnTools(t, m, other), `{"image":"mcp-1"}`)
	require.EqualError(t, err, `share_image: there is no image "mcp-1": no MCP tool has returned an image that can be sent in this turn`)
	require.Empty(t, other.Files)
}

func TestShareImageWithoutVision(t *testing.T) {
	t.Parallel()
	m := memManager(t, Options{}, map[string]*sdk.Server{"web": imageServer()})
	waitState(t, m, "web", isOK)
	turn := &core.Turn{}
	tools := turnTools(t, m, turn)
	out, err := call(tools["web__shot"], `{}`)
	require.NoError(t, err)
	require.Equal(t, "the page:\n\n"+
		`[image/png image, 2 KB: not shown, the model cannot see images here; to show it to the user, call share_image {"image":"mcp-1"}]`, out.Text)
	require.Empty(t, out.Images)
	_, err = share(tools, `{"image":"mcp-1"}`)
	require.NoError(t, err)
	require.Len(t, turn.Files, 1)
}

func TestShareImageOffered(t *testing.T) {
	t.Parallel()
	m := memManager(t, Options{}, map[string]*sdk.Server{"web": imageServer()})
	waitState(t, m, "web", isOK)
	require.NotContains(t, turnTools(t, m, nil), shareImageTool, "no turn, no reply to attach to")
	tools := turnTools(t, m, nil)
	out, err := call(tools["web__shot"], `{}`)
	require.NoError(t, err)
	require.NotContains(t, out.Text, "share_image", "outside a turn an image gets no handle")

	down, err := New(Options{Servers: []Server{{Name: "a", Command: "/nonexistent/a"}}})
	require.NoError(t, err)
	require.Empty(t, turnTools(t, down, &core.Turn{}), "no MCP tool, no image to share")
}

func TestShelfBoundsMemory(t *testing.T) {
	t.Parallel()
	t.Run("images", func(t *testing.T) {
		sh := &shelf{turn: &core.Turn{}}
		for i := range maxShelved {
			require.Contains(t, sh.keep("image/png", pngBytes(i)), fmt.Sprintf(`"mcp-%d"`, i+1))
		}
		require.Equal(t, "; it cannot be sent to the user: this turn keeps at most 8 images, 16 MB together", sh.keep("image/png", pngBytes(9)))
	})
	t.Run("bytes", func(t *testing.T) {
		sh := &shelf{turn: &core.Turn{}}
		require.Contains(t, sh.keep("image/png", make([]byte, maxShelvedBytes-10)), `"mcp-1"`)
		require.Contains(t, sh.keep("image/png", make([]byte, 11)), "cannot be sent to the user")
		require.Contains(t, sh.keep("image/gif", make([]byte, 10)), `"mcp-2"`, "a smaller one still fits")
		require.Equal(t, maxShelvedBytes, sh.bytes)
	})
}
