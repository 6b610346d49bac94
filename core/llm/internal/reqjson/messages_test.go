package reqjson

import (
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"
)

// The messages a client encodes itself must be the bytes go-openai writes,
// whatever their text: quotes, controls, HTML, invalid UTF-8, U+2028.
func FuzzPlainMessagesEncodeAsGoOpenAI(f *testing.F) {
	for _, s := range []string{"", "hello", "a \"quoted\" \\ path\n\ttab\r\b\f\x00\x1f",
		"<b>&amp;</b>", "bad \xff\xfe utf-8 \xe2\x82", "line\u2028para\u2029", "日本語 emoji 🎉", "\x7f"} {
		f.Add(openai.ChatMessageRoleSystem, s, "", "")
		f.Add(openai.ChatMessageRoleTool, s, "lookup", "call_"+s)
	}
	f.Fuzz(func(t *testing.T, role, content, name, toolCallID string) {
		m := openai.ChatCompletionMessage{Role: role, Content: content, Name: name, ToolCallID: toolCallID}
		want, err := json.Marshal(m)
		require.NoError(t, err)
		got, err := newMessagesCache().one(m)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

// A kept message comes back from the cache with the same bytes; one with
// parts or tool calls is left to go-openai.
func TestMessagesCacheKeepsPlainMessagesOnly(t *testing.T) {
	mc := newMessagesCache()
	plain := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "hi <there>"}
	first, err := mc.one(plain)
	require.NoError(t, err)
	again, err := mc.one(plain)
	require.NoError(t, err)
	require.Equal(t, string(first), string(again))
	require.Equal(t, 1, mc.entries.Len())

	system := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: "You are Subaru."}
	_, err = mc.one(system)
	require.NoError(t, err)
	require.Equal(t, 1, mc.entries.Len(), "the system prompt is new every turn: not kept")

	called := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{
		ID: "call_1", Type: openai.ToolTypeFunction, Function: openai.FunctionCall{Name: "list_facts", Arguments: "{}"}}}}
	got, err := mc.one(called)
	require.NoError(t, err)
	want, err := json.Marshal(called)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
	require.Equal(t, 1, mc.entries.Len())
}
