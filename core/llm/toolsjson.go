package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

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
// body, keyed by everything that encoding depends on.
type toolsCache struct {
	sets *lru.Cache[string, []byte]
}

func newToolsCache() *toolsCache {
	sets, err := lru.New[string, []byte](toolsCacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &toolsCache{sets: sets}
}

// encoded returns tools as go-openai would write them, or nil when they
// are not only what toOpenAITools makes (a name, a description, raw JSON
// parameters), which go-openai then encodes itself.
func (tc *toolsCache) encoded(tools []openai.Tool) ([]byte, error) {
	key, ok := toolsKey(tools)
	if !ok {
		return nil, nil
	}
	if b, ok := tc.sets.Get(key); ok {
		return b, nil
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, fmt.Errorf("llm: encoding tools: %w", err)
	}
	tc.sets.Add(key, b)
	return b, nil
}

// toolsKey is every field of tools the encoding reads, each preceded by its
// length, so that no two different sets share a key.
func toolsKey(tools []openai.Tool) (string, bool) {
	var b strings.Builder
	for _, t := range tools {
		if t.Type != openai.ToolTypeFunction || t.Function == nil || len(t.Parameters) > 0 || t.Function.Strict {
			return "", false
		}
		params, ok := t.Function.Parameters.(json.RawMessage)
		if !ok {
			return "", false
		}
		for _, s := range [...]string{t.Function.Name, t.Function.Description, string(params)} {
			b.WriteString(strconv.Itoa(len(s)))
			b.WriteByte(':')
			b.WriteString(s)
		}
	}
	return b.String(), true
}

// spliced returns the encoding of req's tools for toolsDoer to add, or nil
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

// toolsJSONKey is the context key of a request's encoded tools.
type toolsJSONKey struct{}

// withToolsJSON asks toolsDoer to add the encoded tools to the body of the
// requests made with ctx.
func withToolsJSON(ctx context.Context, encoded []byte) context.Context {
	return context.WithValue(ctx, toolsJSONKey{}, encoded)
}

// toolsDoer sends go-openai's requests, adding to a body the tools its
// context carries (withToolsJSON) as its last member.
type toolsDoer struct{ next openai.HTTPDoer }

func (d toolsDoer) Do(req *http.Request) (*http.Response, error) {
	encoded, ok := req.Context().Value(toolsJSONKey{}).([]byte)
	if !ok || req.Body == nil {
		return d.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("llm: reading the request body: %w", err)
	}
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return nil, fmt.Errorf("llm: the request body is not a JSON object")
	}
	out := make([]byte, 0, len(body)+len(encoded)+len(`,"tools":`))
	out = append(out, body[:end]...)
	if len(bytes.TrimSpace(out)) > 1 { // more than "{"
		out = append(out, ',')
	}
	out = append(out, `"tools":`...)
	out = append(out, encoded...)
	out = append(out, body[end:]...)
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	req.ContentLength = int64(len(out))
	return d.next.Do(req)
}
