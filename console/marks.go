package console

import (
	"time"

	"github.com/parleybot/parley/core"
)

// changeMarks are what the user did to m after it was sent: the emoji
// they reacted with (a bot message), and when they last edited or
// deleted it (their own), as at shows times. An edit time the console
// cannot read is shown as stored.
func changeMarks(m core.Message, at func(time.Time) string) (reactions []string, edited string, deleted bool) {
	reactions = core.MessageReactions(m)
	if s, ok := m.Metadata[core.EditedAtKey].(string); ok {
		edited = s
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			edited = at(t)
		}
	}
	return reactions, edited, m.Deleted()
}
