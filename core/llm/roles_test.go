package llm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core/llm"
	"github.com/parleybot/parley/core/llm/llmtest"
)

// shapeOf lists a request's messages as role:content, parts as [text|image].
func shapeOf(r llmtest.Request) []string {
	var out []string
	for _, m := range r.Messages() {
		c := m.Content
		if len(m.MultiContent) > 0 {
			var ps []string
			for _, p := range m.MultiContent {
				if p.ImageURL != nil {
					ps = append(ps, "image")
				} else {
					ps = append(ps, p.Text)
				}
			}
			c = "[" + strings.Join(ps, "|") + "]"
		}
		out = append(out, m.Role+":"+c)
	}
	return out
}

const png1x1 = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// Every shape a turn may send, to a model whose chat template refuses roles
// that do not alternate: the first request goes as it is and is refused
// with the template's words; it is sent again at once in the strict shape,
// which the template takes, and the model's next requests go strict from
// the start.
func TestStrictTemplatesGetAlternatingRoles(t *testing.T) {
	t.Parallel()
	sys := llm.Message{Role: llm.RoleSystem, Content: "You are Subaru."}
	user := func(s string) llm.Message { return llm.Message{Role: llm.RoleUser, Content: s} }
	bot := func(s string) llm.Message { return llm.Message{Role: llm.RoleAssistant, Content: s} }
	cases := []struct {
		name     string
		template llmtest.ChatTemplate
		msgs     []llm.Message
		want     []string
	}{
		{"a burst of user messages", llmtest.TemplateMistral,
			[]llm.Message{sys, user("hi"), user("are you there?")},
			[]string{"system:You are Subaru.", "user:hi\n\nare you there?"}},
		{"a reminder, then a reply", llmtest.TemplateMistral,
			[]llm.Message{sys, user("remind me at 9"), bot("Sure!"), bot("It's 9: the dentist."), user("thanks")},
			[]string{"system:You are Subaru.", "user:remind me at 9", "assistant:Sure!\n\nIt's 9: the dentist.", "user:thanks"}},
		{"a system note in the conversation", llmtest.TemplateMistral,
			[]llm.Message{sys, user("hi"), bot("hello"), {Role: llm.RoleSystem, Content: "Recurring job: morning check-in"}},
			[]string{"system:You are Subaru.", "user:hi", "assistant:hello", "user:[Note: Recurring job: morning check-in]"}},
		{"the bot spoke first", llmtest.TemplateMistral,
			[]llm.Message{sys, bot("Good morning! How did you sleep?"), user("badly")},
			[]string{"system:You are Subaru.", "user:(the conversation so far)", "assistant:Good morning! How did you sleep?", "user:badly"}},
		{"two photos sent apart", llmtest.TemplateMistral,
			[]llm.Message{sys, {Role: llm.RoleUser, Parts: []llm.Part{{Text: "look"}, {ImageURL: png1x1}}}, user("and this")},
			[]string{"system:You are Subaru.", "user:[look|image|and this]"}},
		{"no system role at all", llmtest.TemplateGemma,
			[]llm.Message{sys, user("hi"), user("again")},
			[]string{"user:You are Subaru.\n\nhi\n\nagain"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.WithChatTemplate(tc.template))
			logs := &syncBuffer{}
			client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, Model: "mistral-7b", Logger: newLogger(logs)})
			require.NoError(t, err)
			srv.Respond(func(llmtest.Request) llmtest.Response { return llmtest.Text("ok") })

			res, err := client.Complete(context.Background(), llm.Request{Messages: tc.msgs})
			require.NoError(t, err)
			require.Equal(t, "ok", res.Content)
			reqs := srv.Requests()
			require.Len(t, reqs, 2, "refused as it was, then taken in the strict shape")
			require.Equal(t, tc.want, shapeOf(reqs[1]))
			require.Contains(t, logs.String(), "sent in the strict shape from now on")

			_, err = client.Complete(context.Background(), llm.Request{Messages: tc.msgs})
			require.NoError(t, err)
			require.Len(t, srv.Requests(), 3, "remembered: no second refusal")
			require.Equal(t, tc.want, shapeOf(srv.Requests()[2]))
		})
	}
}

// A server that takes any order gets the conversation as it is.
func TestRolesGoAsTheyAreWhereTheyAreTaken(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t)
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, Model: "gpt-4o"})
	require.NoError(t, err)
	srv.Enqueue(llmtest.Text("ok"))
	_, err = client.Complete(context.Background(), llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "a"}, {Role: llm.RoleUser, Content: "b"}}})
	require.NoError(t, err)
	require.Equal(t, []string{"system:s", "user:a", "user:b"}, shapeOf(srv.Requests()[0]))
}

// The tool loop under a strict template: the tool call and its result
// keep their shape around the merged turns, and the answer comes.
func TestStrictTemplateThroughTheToolLoop(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.WithChatTemplate(llmtest.TemplateMistral))
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), APIKey: apiKey, Model: "mistral-7b", Logger: newLogger(&syncBuffer{})})
	require.NoError(t, err)
	srv.Enqueue(llmtest.ToolCalls(llmtest.Call("c1", "roll", `{}`)), llmtest.Text("You rolled a 4."))
	res, err := client.Run(context.Background(), llm.Request{
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "s"}, {Role: llm.RoleUser, Content: "roll"}, {Role: llm.RoleUser, Content: "a die"}},
		Tools: []llm.Tool{{Name: "roll", Parameters: []byte(`{"type":"object"}`),
			Call: func(context.Context, json.RawMessage) (string, error) { return "4", nil }}},
	})
	require.NoError(t, err)
	require.Equal(t, "You rolled a 4.", res.Content)
	reqs := srv.Requests()
	require.Len(t, reqs, 3, "refused, strict, then the tool's round")
	last := shapeOf(reqs[2])
	require.Equal(t, []string{"system:s", "user:roll\n\na die", "assistant:", "tool:4"}, last)
}
