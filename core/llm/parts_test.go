package llm_test

import (
	"context"
	"encoding/base64"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// pngBytes stands in for an image: what matters is that the bytes arrive
// unchanged.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR fake image bytes")

func TestImagePartsReachModelAsMultiContent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("a cat"))
	dataURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pngBytes)
	req := userSays("")
	req.Messages[1] = llm.Message{
		Role: llm.RoleUser,
		// Content beside Parts is ignored, and must not trip go-openai's
		// refusal of Content with MultiContent.
		Content: "ignored",
		Parts:   []llm.Part{{Text: "What is this?"}, {ImageURL: dataURL}},
	}

	res, err := b.client.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, "a cat", res.Content)

	got := b.srv.Requests()[0]
	require.NotContains(t, string(got.Body), "ignored")
	parts := got.LastUserParts()
	require.Len(t, parts, 2)
	require.Equal(t, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: "What is this?"}, parts[0])
	require.Equal(t, openai.ChatMessagePartTypeImageURL, parts[1].Type)
	require.Equal(t, openai.ImageURLDetailAuto, parts[1].ImageURL.Detail)
	require.Equal(t, "What is this?", got.LastUserMessage())

	urls := got.ImageURLs()
	require.Equal(t, []string{dataURL}, urls)
	mediaType, data, err := llmtest.DecodeDataURL(urls[0])
	require.NoError(t, err)
	require.Equal(t, "image/png", mediaType)
	require.Equal(t, pngBytes, data)
	require.Equal(t, "You are a test.", got.Messages()[0].Content, "other messages stay plain text")
}

func TestTextOnlyRequestBodyUnchanged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.srv.Enqueue(llmtest.Text("ok"))
	req := userSays("hi")
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "c1", Content: "r"},
		llm.Message{Role: llm.RoleUser, Name: "bob", Content: "x"},
	)
	_, err := b.client.Complete(context.Background(), req)
	require.NoError(t, err)
	// The body as sent before messages could have parts, byte for byte.
	const before = `{"model":"test-model","messages":[{"role":"system","content":"You are a test."},{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","content":"r","tool_call_id":"c1"},{"role":"user","content":"x","name":"bob"}],"stream":false}`
	require.Equal(t, before, string(b.srv.Requests()[0].Body))
	require.Empty(t, b.srv.Requests()[0].ImageURLs())
	require.Nil(t, b.srv.Requests()[0].LastUserParts())
}
