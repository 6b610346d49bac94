// Package reqjson encodes what chat requests repeat, turn after turn, once:
// a client's tool sets and the plain messages of its conversations' windows
// are kept encoded as go-openai writes them (tools.go, messages.go), taken
// out of the request go-openai encodes, and spliced back into its body by
// Doer. The bytes that go out are the ones go-openai would have written.
package reqjson

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// Cache keeps one client's tool sets and plain messages encoded. It is safe
// for concurrent use.
type Cache struct {
	tools    *toolsCache
	messages *messagesCache
}

// New returns an empty Cache.
func New() *Cache {
	return &Cache{tools: newToolsCache(), messages: newMessagesCache()}
}

// Presplice returns req as go-openai is to encode it and ctx for Doer: the
// messages, and the tools when they may be (toolsCache.spliced), taken out
// of req and carried pre-encoded instead. On an encoding error req goes as
// it is, for go-openai to meet and return the same error.
func (c *Cache) Presplice(ctx context.Context, req openai.ChatCompletionRequest) (openai.ChatCompletionRequest, context.Context) {
	var parts splicedJSON
	if tools := c.tools.spliced(req); tools != nil {
		parts.tools = tools
	}
	if len(req.Messages) > 0 {
		if msgs, err := c.messages.encoded(req.Messages); err == nil {
			parts.messages = msgs
		}
	}
	if parts.tools == nil && parts.messages == nil {
		return req, ctx
	}
	sent := req
	if parts.tools != nil {
		sent.Tools = nil
	}
	if parts.messages != nil {
		sent.Messages = nil
	}
	return sent, withSplicedJSON(ctx, parts)
}

// splicedJSONKey is the context key of a request's pre-encoded parts.
type splicedJSONKey struct{}

// splicedJSON is what Doer puts into a request body: the messages
// array in place of the "messages":null go-openai wrote, and the tools as
// the last member. Either may be nil.
type splicedJSON struct {
	messages, tools []byte
}

// withSplicedJSON asks Doer to put parts into the body of the
// requests made with ctx.
func withSplicedJSON(ctx context.Context, parts splicedJSON) context.Context {
	return context.WithValue(ctx, splicedJSONKey{}, parts)
}

// nullMessages is how go-openai writes a request without messages; its
// first member is the model, a string in which a quote is escaped, so
// the first match is the field.
var nullMessages = []byte(`"messages":null`)

// Doer sends go-openai's requests through Next with the parts their
// context carries (Cache.Presplice) put into the body.
type Doer struct{ Next openai.HTTPDoer }

// Do sends req.
func (d Doer) Do(req *http.Request) (*http.Response, error) {
	parts, ok := req.Context().Value(splicedJSONKey{}).(splicedJSON)
	if !ok || req.Body == nil {
		return d.Next.Do(req)
	}
	body, err := readBody(req)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("llm: reading the request body: %w", err)
	}
	out, err := splice(body, parts)
	if err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	req.ContentLength = int64(len(out))
	return d.Next.Do(req)
}

// splice puts parts into body, a JSON object as go-openai writes it.
func splice(body []byte, parts splicedJSON) ([]byte, error) {
	out := make([]byte, 0, len(body)+len(parts.messages)+len(parts.tools)+len(`,"tools":`))
	if parts.messages != nil {
		at := bytes.Index(body, nullMessages)
		if at < 0 {
			return nil, fmt.Errorf("llm: the request body has no messages to fill in")
		}
		out = append(out, body[:at+len(nullMessages)-len("null")]...)
		out = append(out, parts.messages...)
		body = body[at+len(nullMessages):]
	}
	if parts.tools == nil {
		return append(out, body...), nil
	}
	end := bytes.LastIndexByte(body, '}')
	if end < 0 {
		return nil, fmt.Errorf("llm: the request body is not a JSON object")
	}
	out = append(out, body[:end]...)
	if len(bytes.TrimSpace(out)) > 1 { // more than "{"
		out = append(out, ',')
	}
	out = append(out, `"tools":`...)
	out = append(out, parts.tools...)
	return append(out, body[end:]...), nil
}

// readBody reads req's body, in one allocation when its length is known
// (go-openai's always is).
func readBody(req *http.Request) ([]byte, error) {
	if req.ContentLength <= 0 {
		return io.ReadAll(req.Body)
	}
	b := make([]byte, req.ContentLength)
	_, err := io.ReadFull(req.Body, b)
	return b, err
}
