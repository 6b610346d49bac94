package turns

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/parleybot/parley/core"
)

// The acknowledgement goes on the newest message waiting for the answer
// that the platform can show a reaction on, and nowhere when there is
// none: never on a message the bot answered already.
func TestAckGoesOnTheNewestWaitingMessage(t *testing.T) {
	t.Parallel()
	user := func(id, text string) core.Message {
		return core.Message{Role: core.RoleUser, Source: core.SourceUser, PlatformMessageID: id, Content: text}
	}
	reply := core.Message{Role: core.RoleAssistant, Source: core.SourceReply, Content: "ok", PlatformMessageID: "b1"}
	command := core.Message{Role: core.RoleUser, Source: core.SourceCommand, PlatformMessageID: "c1", Content: "/reminders"}
	answer := core.Message{Role: core.RoleAssistant, Source: core.SourceCommand, Content: "No reminders."}
	deleted := user("d1", "")
	deleted.Metadata = map[string]any{core.DeletedKey: true}
	for name, tc := range map[string]struct {
		history []core.Message
		want    string
	}{
		"the last":                        {[]core.Message{user("u1", "a"), reply, user("u2", "b"), user("u3", "c")}, "u3"},
		"before a command and its answer": {[]core.Message{reply, user("u2", "b"), command, answer}, "u2"},
		"before a deleted one":            {[]core.Message{reply, user("u2", "b"), deleted}, "u2"},
		"before a tap":                    {[]core.Message{reply, user("u2", "b"), user("tap:77", "Yes")}, "u2"},
		"before one without id (API)":     {[]core.Message{reply, user("u2", "b"), user("", "routed")}, "u2"},
		"none waiting: only a tap":        {[]core.Message{user("u1", "a"), reply, user("tap:77", "Yes")}, ""},
		"none waiting: all answered":      {[]core.Message{user("u1", "a"), reply}, ""},
		"none waiting: only a command":    {[]core.Message{user("u1", "a"), reply, command, answer}, ""},
		"empty":                           {nil, ""},
		"a first message":                 {[]core.Message{user("u1", "a")}, "u1"},
	} {
		got := ""
		if m := latestUserMessage(tc.history); m != nil {
			got = m.PlatformMessageID
		}
		require.Equal(t, tc.want, got, name)
	}
}
