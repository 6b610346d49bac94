package llm

import (
	"strconv"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// FuzzStrictShapeAlternates: whatever order of roles a turn's history has
// (a byte a message: system, user or assistant), and the tool calls of
// the turn's own rounds after its last user or system message (as many as
// the history's length mod 3), the strict shape has at most one system
// message, first; then user and assistant in turn, user first, a tool
// call and its result inside the assistant's turn; the no-system shape
// has none; and every text is still there, in order.
func FuzzStrictShapeAlternates(f *testing.F) {
	for _, s := range []string{"suu", "suaau", "suas", "sau", "sua", "ssuu", "uau", "suau", "", "s", "a", "uu", "sasas"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, roles []byte) {
		if len(roles) > 64 {
			roles = roles[:64]
		}
		var msgs []openai.ChatCompletionMessage
		var texts []string
		last := ""
		for i, r := range roles {
			text := "m" + strconv.Itoa(i)
			role := [3]string{openai.ChatMessageRoleSystem, openai.ChatMessageRoleUser, openai.ChatMessageRoleAssistant}[int(r)%3]
			switch r {
			case 's':
				role = openai.ChatMessageRoleSystem
			case 'u':
				role = openai.ChatMessageRoleUser
			case 'a':
				role = openai.ChatMessageRoleAssistant
			}
			msgs = append(msgs, openai.ChatCompletionMessage{Role: role, Content: text})
			texts = append(texts, text)
			last = role
		}
		if last == openai.ChatMessageRoleUser || last == openai.ChatMessageRoleSystem {
			for i := range len(roles) % 3 {
				id := "c" + strconv.Itoa(i)
				msgs = append(msgs,
					openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: []openai.ToolCall{{ID: id}}},
					openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: id, Content: id})
				texts = append(texts, id)
			}
		}
		for _, shape := range []rolesShape{shapeAlternating, shapeNoSystem} {
			out := inShape(msgs, shape)
			turn := openai.ChatMessageRoleUser
			var all strings.Builder
			for i, m := range out {
				all.WriteString(m.Content + "\n")
				switch {
				case m.Role == openai.ChatMessageRoleSystem:
					if i > 0 || shape == shapeNoSystem {
						t.Fatalf("%q in shape %d: a system message at %d: %+v", roles, shape, i, out)
					}
				case m.Role == openai.ChatMessageRoleTool || len(m.ToolCalls) > 0:
					all.WriteString(m.ToolCallID + "\n")
					if len(m.ToolCalls) > 0 {
						all.WriteString(m.ToolCalls[0].ID + "\n")
					}
					turn = openai.ChatMessageRoleAssistant
				case m.Role != turn:
					t.Fatalf("%q in shape %d: %s at %d where %s was due: %+v", roles, shape, m.Role, i, turn, out)
				default:
					if turn == openai.ChatMessageRoleUser {
						turn = openai.ChatMessageRoleAssistant
					} else {
						turn = openai.ChatMessageRoleUser
					}
				}
			}
			got, at := all.String(), 0
			for _, text := range texts {
				j := strings.Index(got[at:], text)
				if j < 0 {
					t.Fatalf("%q in shape %d: %s lost or out of order: %+v", roles, shape, text, out)
				}
				at += j + len(text)
			}
		}
	})
}
