package reqjson

import (
	"encoding/json"
	"fmt"
	"hash/maphash"

	lru "github.com/hashicorp/golang-lru/v2"
	openai "github.com/sashabaranov/go-openai"
)

// The tools of a request are the same turn after turn (the plugins'), yet
// go-openai encodes them anew for every request, each through a map and
// compacted twice: with a dozen tools that was about three quarters of a
// request's encoding (measured: ~150 µs of ~200 µs). A client keeps each
// set it encoded, and the body goes out with that encoding spliced in.

// toolsCacheSize bounds the tool sets a client keeps encoded: a process
// offers a few (the turn's, a plugin engine's).
const toolsCacheSize = 16

// toolsCache holds tool sets encoded as go-openai writes them in a request
// body, found by a hash of everything that encoding depends on and checked
// against it.
type toolsCache struct {
	seed maphash.Seed
	sets *lru.Cache[uint64, toolsEntry]
}

// toolKey is what a tool's encoding depends on, when it is only what the
// llm package makes of a Tool (toOpenAITools): a function with a name, a
// description and raw JSON parameters.
type toolKey struct {
	name, description, params string
}

type toolsEntry struct {
	keys    []toolKey
	encoded []byte
}

func newToolsCache() *toolsCache {
	sets, err := lru.New[uint64, toolsEntry](toolsCacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &toolsCache{seed: maphash.MakeSeed(), sets: sets}
}

// encoded returns tools as go-openai would write them, or nil when they
// are not only what toOpenAITools makes (a name, a description, raw JSON
// parameters), which go-openai then encodes itself.
func (tc *toolsCache) encoded(tools []openai.Tool) ([]byte, error) {
	var h maphash.Hash
	h.SetSeed(tc.seed)
	for _, t := range tools {
		params, ok := rawParams(t)
		if !ok {
			return nil, nil
		}
		_, _ = h.WriteString(t.Function.Name)
		_ = h.WriteByte(0)
		_, _ = h.WriteString(t.Function.Description)
		_ = h.WriteByte(0)
		_, _ = h.Write(params)
		_ = h.WriteByte(0)
	}
	sum := h.Sum64()
	if e, ok := tc.sets.Get(sum); ok && sameTools(e.keys, tools) {
		return e.encoded, nil
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, fmt.Errorf("llm: encoding tools: %w", err)
	}
	keys := make([]toolKey, len(tools))
	for i, t := range tools {
		params, _ := rawParams(t)
		keys[i] = toolKey{name: t.Function.Name, description: t.Function.Description, params: string(params)}
	}
	tc.sets.Add(sum, toolsEntry{keys: keys, encoded: b})
	return b, nil
}

// rawParams returns t's parameters, if t is only what toOpenAITools makes.
func rawParams(t openai.Tool) (json.RawMessage, bool) {
	if t.Type != openai.ToolTypeFunction || t.Function == nil || len(t.Parameters) > 0 || t.Function.Strict {
		return nil, false
	}
	params, ok := t.Function.Parameters.(json.RawMessage)
	return params, ok
}

// sameTools reports whether tools are the ones keys were taken from.
func sameTools(keys []toolKey, tools []openai.Tool) bool {
	if len(keys) != len(tools) {
		return false
	}
	for i, t := range tools {
		params, ok := rawParams(t)
		k := keys[i]
		if !ok || k.name != t.Function.Name || k.description != t.Function.Description || k.params != string(params) {
			return false
		}
	}
	return true
}

// spliced returns the encoding of req's tools for Doer to add, or nil
// when go-openai is to encode them: none, or not only what toOpenAITools
// makes, or a request go-openai refuses (its check sees the tools).
func (tc *toolsCache) spliced(req openai.ChatCompletionRequest) []byte {
	if len(req.Tools) == 0 || openai.NewReasoningValidator().Validate(req) != nil {
		return nil
	}
	b, err := tc.encoded(req.Tools)
	if err != nil {
		return nil // go-openai meets the same error and returns it
	}
	return b
}
