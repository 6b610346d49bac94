package llm

import (
	"slices"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// Some chat templates, served by vLLM or llama.cpp (Mistral's, Llama 2's,
// Gemma's), refuse a conversation whose roles do not alternate user,
// assistant, user…: two user messages in a row (a burst answered in one
// turn), two assistant messages (a reminder, then a reply), a system
// message after the first (a cron turn's trigger) or an assistant message
// first. OpenAI and most servers take those as they are, so they are sent
// as they are; a server that refuses them with its template's error gets
// the same conversation in the strict shape (strict), at once and from
// then on for that model.

// rolesShape is how strictly a model's requests alternate.
type rolesShape int

const (
	shapeAsIs        rolesShape = iota
	shapeAlternating            // strict: one system message first, then user and assistant in turn
	shapeNoSystem               // and no system message at all (Gemma): it leads the first user message
)

// rolesRefusal says which shape a refused request needs, shapeAsIs when
// err is no template's refusal of its roles.
func rolesRefusal(err error) rolesShape {
	msg, _, _, ok := badRequest(err)
	if !ok {
		return shapeAsIs
	}
	msg = strings.ToLower(msg)
	switch {
	case strings.Contains(msg, "system role not supported"):
		return shapeNoSystem
	case strings.Contains(msg, "roles must alternate"), strings.Contains(msg, "only user and assistant roles"),
		strings.Contains(msg, "conversation roles must"):
		return shapeAlternating
	}
	return shapeAsIs
}

// inShape returns msgs as shape needs them, msgs itself when as they are.
// Strict: the system messages that open the conversation become one;
// a later one becomes a note in the user's turn ("[Note: …]"); messages
// of one role in a row become one (texts joined by a blank line, parts
// kept in order); an assistant message first gets a user turn before it.
// An assistant message that calls tools and the tools' results are kept
// as they are: templates that take tools take their shape.
func inShape(msgs []openai.ChatCompletionMessage, shape rolesShape) []openai.ChatCompletionMessage {
	if shape == shapeAsIs {
		return msgs
	}
	out := make([]openai.ChatCompletionMessage, 0, len(msgs))
	var system []string
	i := 0
	for ; i < len(msgs) && msgs[i].Role == openai.ChatMessageRoleSystem; i++ {
		system = append(system, msgs[i].Content)
	}
	if len(system) > 0 && shape == shapeAlternating {
		out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: strings.Join(system, "\n\n")})
	}
	for _, m := range msgs[i:] {
		if m.Role == openai.ChatMessageRoleSystem {
			m = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "[Note: " + m.Content + "]"}
		}
		if len(out) > 0 && mergeable(out[len(out)-1], m) {
			out[len(out)-1] = joined(out[len(out)-1], m)
			continue
		}
		if m.Role == openai.ChatMessageRoleAssistant && (len(out) == 0 || out[len(out)-1].Role == openai.ChatMessageRoleSystem) {
			out = append(out, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: "(the conversation so far)"})
		}
		out = append(out, m)
	}
	if shape == shapeNoSystem && len(system) > 0 {
		lead := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: strings.Join(system, "\n\n")}
		if len(out) > 0 && out[0].Role == openai.ChatMessageRoleUser {
			out[0] = joined(lead, out[0])
		} else {
			out = append([]openai.ChatCompletionMessage{lead}, out...)
		}
	}
	return out
}

// mergeable says whether b, after a, joins it: the same role, user or
// assistant, neither a tool call nor its result.
func mergeable(a, b openai.ChatCompletionMessage) bool {
	if a.Role != b.Role || (a.Role != openai.ChatMessageRoleUser && a.Role != openai.ChatMessageRoleAssistant) {
		return false
	}
	return len(a.ToolCalls) == 0 && len(b.ToolCalls) == 0
}

// joined is a and b as one message: their texts joined by a blank line,
// or their parts in order when either has parts (an image).
func joined(a, b openai.ChatCompletionMessage) openai.ChatCompletionMessage {
	if len(a.MultiContent) == 0 && len(b.MultiContent) == 0 {
		a.Content = strings.TrimSpace(a.Content + "\n\n" + b.Content)
		return a
	}
	a.MultiContent = slices.Concat(partsOf(a), partsOf(b))
	a.Content = ""
	return a
}

// partsOf is m's content as parts.
func partsOf(m openai.ChatCompletionMessage) []openai.ChatMessagePart {
	if len(m.MultiContent) > 0 {
		return m.MultiContent
	}
	return []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: m.Content}}
}
