package chunkjson_test

import (
	"encoding/json"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm/internal/chunkjson"
)

// seeds are chunks as servers send them, and near misses.
var seeds = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1764367795,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x1"}`,
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"quick "},"finish_reason":null}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":"line\nbreak \"quoted\" \u00e9 \ud83d\ude00"},"finish_reason":null}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null,"stop_reason":null}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"id":"x","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
	`{"id":"x","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":""}}]}}]}`,
	`{"ID":"x","choices":[]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":1,"delta":{"role":"r"}}]}`,
	`{"id":"x","created":1.5,"choices":[]}`,
	`{"id":"caf` + "\xff" + `","choices":[]}`,
	` { "id" : "x" , "choices" : [ { "index" : 2 , "delta" : { "content" : "ü" } } ] } `,
	`{"id":"x","choices":[{"index":0,"delta":{"content":"a","content":null}}]}`,
	`{"id":"x","choices":[{"index":0,"delta":{"content":"a"}}]} x`,
}

func FuzzDecode(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := chunkjson.Decode(raw)
		if !ok {
			return
		}
		var want openai.ChatCompletionStreamResponse
		require.NoError(t, json.Unmarshal(raw, &want), "accepted what encoding/json refuses: %q", raw)
		require.Equal(t, want, got, "%q", raw)
	})
}

func TestDecodeTakesTheCommonChunks(t *testing.T) {
	t.Parallel()
	for _, i := range []int{0, 1, 2, 3, 4, 11} {
		_, ok := chunkjson.Decode([]byte(seeds[i]))
		require.True(t, ok, "seed %d: %s", i, seeds[i])
	}
	for _, i := range []int{5, 6, 7, 8, 9, 10, 13} {
		_, ok := chunkjson.Decode([]byte(seeds[i]))
		require.False(t, ok, "seed %d is left to encoding/json: %s", i, seeds[i])
	}
}
