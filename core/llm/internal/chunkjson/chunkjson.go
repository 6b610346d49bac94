// Package chunkjson decodes the common chunks of a streamed chat completion
// without reflection. A streamed answer is one chunk per token or word, and
// encoding/json spent most of a stream's reading on them (measured: about
// 60% of a streamed run's CPU for an 80-word answer). Decode takes only
// what it fully understands: the ids, the choices' text deltas and finish
// reasons; anything else (tool calls, usage, logprobs, escapes it cannot
// vouch for) makes it decline, and the caller decodes the chunk with
// encoding/json as before. Whatever it accepts decodes exactly as
// encoding/json would (FuzzDecode checks this).
package chunkjson

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// The fields of each level of go-openai's chunk, for encoding/json matches
// a key to a field without regard to case: a key that matches one of them
// but is not one Decode reads is declined.
var (
	chunkFields  = names("id", "object", "created", "model", "choices", "system_fingerprint", "prompt_annotations", "prompt_filter_results", "usage")
	choiceFields = names("index", "delta", "logprobs", "finish_reason", "content_filter_results")
	deltaFields  = names("content", "role", "function_call", "tool_calls", "refusal", "reasoning_content")
)

func names(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// Decode decodes raw, one chunk's JSON, and reports whether it could.
func Decode(raw []byte) (c openai.ChatCompletionStreamResponse, ok bool) {
	d := decoder{in: raw}
	chose := false
	ok = d.object(chunkFields, func(key []byte) bool {
		switch string(key) {
		case "id":
			return d.str(&c.ID)
		case "object":
			return d.str(&c.Object)
		case "model":
			return d.str(&c.Model)
		case "system_fingerprint":
			return d.str(&c.SystemFingerprint)
		case "created":
			return d.integer(&c.Created)
		case "usage":
			return d.null()
		case "choices":
			// encoding/json would decode a second array over the first.
			if chose {
				return false
			}
			chose = true
			return d.choices(&c.Choices)
		}
		return false
	})
	d.space()
	return c, ok && d.at == len(d.in)
}

// decoder reads in from at; each method reports false to decline.
type decoder struct {
	in []byte
	at int
}

func (d *decoder) space() {
	for d.at < len(d.in) && (d.in[d.at] == ' ' || d.in[d.at] == '\t' || d.in[d.at] == '\n' || d.in[d.at] == '\r') {
		d.at++
	}
}

// next skips whitespace and takes b.
func (d *decoder) next(b byte) bool {
	d.space()
	if d.at < len(d.in) && d.in[d.at] == b {
		d.at++
		return true
	}
	return false
}

// object reads an object, calling member for each key it reads (one of
// fields, exactly); other keys may only hold scalars, which are skipped.
func (d *decoder) object(fields [][]byte, member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		// A key with escapes is declined: none of the known ones has any.
		q, escaped := d.quoted()
		if q == nil || escaped || !d.next(':') {
			return false
		}
		key := q[1 : len(q)-1]
		known := false
		for _, f := range fields {
			if bytes.EqualFold(key, f) {
				if !bytes.Equal(key, f) {
					return false
				}
				known = true
			}
		}
		if known && !member(key) || !known && !d.scalar() {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *decoder) choices(out *[]openai.ChatCompletionStreamChoice) bool {
	if !d.next('[') {
		return false
	}
	*out = []openai.ChatCompletionStreamChoice{}
	if d.next(']') {
		return true
	}
	for {
		var c openai.ChatCompletionStreamChoice
		var index int64
		ok := d.object(choiceFields, func(key []byte) bool {
			switch string(key) {
			case "index":
				return d.integer(&index)
			case "finish_reason":
				return d.null() || d.str((*string)(&c.FinishReason))
			case "logprobs":
				return d.null()
			case "delta":
				return d.delta(&c.Delta)
			}
			return false
		})
		if !ok {
			return false
		}
		c.Index = int(index)
		*out = append(*out, c)
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

func (d *decoder) delta(out *openai.ChatCompletionStreamChoiceDelta) bool {
	return d.object(deltaFields, func(key []byte) bool {
		var s *string
		switch string(key) {
		case "content":
			s = &out.Content
		case "role":
			s = &out.Role
		case "refusal":
			s = &out.Refusal
		case "reasoning_content":
			s = &out.ReasoningContent
		default:
			return false
		}
		return d.null() || d.str(s)
	})
}

// str reads a string into s. One with escapes is handed to encoding/json
// (it is short: a delta).
func (d *decoder) str(s *string) bool {
	q, escaped := d.quoted()
	switch {
	case q == nil:
		return false
	case escaped:
		var v string // on the heap: only strings with escapes pay for it
		if json.Unmarshal(q, &v) != nil {
			return false
		}
		*s = v
	default:
		*s = string(q[1 : len(q)-1])
	}
	return true
}

// quoted reads a string and returns it with its quotes, and whether it
// holds escapes; nil for none, or for one with bytes JSON forbids or that
// encoding/json would replace (invalid UTF-8).
func (d *decoder) quoted() (q []byte, escaped bool) {
	if !d.next('"') {
		return nil, false
	}
	start, ascii := d.at-1, true
	for ; d.at < len(d.in); d.at++ {
		switch b := d.in[d.at]; {
		case b == '"':
			d.at++
			q = d.in[start:d.at]
			if !ascii && !utf8.Valid(q) {
				return nil, false
			}
			return q, escaped
		case b == '\\':
			escaped = true
			d.at++
		case b < 0x20:
			return nil, false
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

var nullLiteral = []byte("null")

// null reads a null, or reads nothing and reports false.
func (d *decoder) null() bool {
	d.space()
	if bytes.HasPrefix(d.in[d.at:], nullLiteral) {
		d.at += 4
		return true
	}
	return false
}

// integer reads a JSON number that is an integer into n.
func (d *decoder) integer(n *int64) bool {
	tok := d.number()
	if tok == nil {
		return false
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	*n = v
	return err == nil
}

// number reads a valid JSON number, or returns nil.
func (d *decoder) number() []byte {
	d.space()
	start := d.at
	for d.at < len(d.in) && strings.IndexByte("+-.0123456789eE", d.in[d.at]) >= 0 {
		d.at++
	}
	if tok := d.in[start:d.at]; len(tok) > 0 && json.Valid(tok) {
		return tok
	}
	return nil
}

// scalar skips a string, number, true, false or null.
func (d *decoder) scalar() bool {
	d.space()
	if d.at >= len(d.in) {
		return false
	}
	switch rest := string(d.in[d.at:min(d.at+5, len(d.in))]); {
	case rest[0] == '"':
		q, escaped := d.quoted()
		return q != nil && (!escaped || json.Valid(q))
	case strings.HasPrefix(rest, "true"), strings.HasPrefix(rest, "null"):
		d.at += 4
		return true
	case rest == "false":
		d.at += 5
		return true
	}
	return d.number() != nil
}
