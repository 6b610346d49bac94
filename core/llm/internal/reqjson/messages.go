package reqjson

import (
	"encoding/json"
	"fmt"
	"hash/maphash"

	lru "github.com/hashicorp/golang-lru/v2"
	openai "github.com/sashabaranov/go-openai"
)

// A turn's prompt is mostly the conversation's window, the same messages
// as the turn before with one or two new at the end, and go-openai
// encodes each anew (its MarshalJSON, then compacted): with Parley as
// shipped, the 50-message window and the persona, about 70 us a request.
// A client keeps the encoding of the plain messages it sent (role, name,
// tool call id and text; those with parts or tool calls, the system prompt
// and long texts are encoded each time), and the body goes out with the
// messages spliced in (Doer).

// messagesCacheSize bounds the messages a client keeps encoded: the
// windows of a few dozen conversations talking at once. Each entry holds
// the message's encoding (its text once more) and refers to its strings.
const messagesCacheSize = 4096

// messageKey is what a plain message's encoding depends on.
type messageKey struct {
	role, name, toolCallID, content string
}

type messageEntry struct {
	key     messageKey
	encoded []byte
}

// messagesCache holds plain messages encoded as go-openai writes them,
// found by a hash of their key and checked against it.
type messagesCache struct {
	seed    maphash.Seed
	entries *lru.Cache[uint64, messageEntry]
}

func newMessagesCache() *messagesCache {
	entries, err := lru.New[uint64, messageEntry](messagesCacheSize)
	if err != nil {
		panic(err) // only for a size <= 0
	}
	return &messagesCache{seed: maphash.MakeSeed(), entries: entries}
}

// maxCachedContent bounds the text of a message kept encoded, so that the
// cache holds at most a few MB (messagesCacheSize of them, twice: the
// encoding and the text it refers to); a longer one is encoded each time.
const maxCachedContent = 2 << 10

// plainKey is m's key when it is worth keeping: its encoding depends on
// nothing else (plain), it is not the system prompt (rendered anew each
// turn, its time and mood in it, so never met again) and its text is short
// enough (kept).
func plainKey(m openai.ChatCompletionMessage) (key messageKey, plain, kept bool) {
	plain = len(m.MultiContent) == 0 && len(m.ToolCalls) == 0 && m.FunctionCall == nil &&
		m.Refusal == "" && m.ReasoningContent == ""
	kept = plain && m.Role != openai.ChatMessageRoleSystem && len(m.Content) <= maxCachedContent
	return messageKey{role: m.Role, name: m.Name, toolCallID: m.ToolCallID, content: m.Content}, plain, kept
}

// encodePlain writes a plain message as go-openai's MarshalJSON does (its
// fields in that order, the empty ones left out).
func encodePlain(k messageKey) []byte {
	out := make([]byte, 0, len(k.content)+len(k.role)+len(k.name)+len(k.toolCallID)+64)
	out = append(out, `{"role":`...)
	out = appendJSONString(out, k.role)
	for _, f := range [...]struct{ name, value string }{
		{`,"content":`, k.content}, {`,"name":`, k.name}, {`,"tool_call_id":`, k.toolCallID},
	} {
		if f.value != "" {
			out = append(out, f.name...)
			out = appendJSONString(out, f.value)
		}
	}
	return append(out, '}')
}

func (mc *messagesCache) hash(k messageKey) uint64 {
	var h maphash.Hash
	h.SetSeed(mc.seed)
	for _, s := range [...]string{k.role, k.name, k.toolCallID, k.content} {
		_, _ = h.WriteString(s)
		_ = h.WriteByte(0)
	}
	return h.Sum64()
}

// encoded returns msgs as go-openai writes the request's messages array,
// each plain message from the cache when it was encoded before.
func (mc *messagesCache) encoded(msgs []openai.ChatCompletionMessage) ([]byte, error) {
	out := make([]byte, 0, 256*len(msgs))
	out = append(out, '[')
	for i, m := range msgs {
		if i > 0 {
			out = append(out, ',')
		}
		b, err := mc.one(m)
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return append(out, ']'), nil
}

func (mc *messagesCache) one(m openai.ChatCompletionMessage) ([]byte, error) {
	key, plain, kept := plainKey(m)
	if !plain {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("llm: encoding a message: %w", err)
		}
		return b, nil
	}
	if !kept {
		return encodePlain(key), nil
	}
	h := mc.hash(key)
	if e, ok := mc.entries.Get(h); ok && e.key == key {
		return e.encoded, nil
	}
	b := encodePlain(key)
	mc.entries.Add(h, messageEntry{key: key, encoded: b})
	return b, nil
}
